"""Started by a zygote's preload in a refusal test: leaves a thread running."""

import threading
import time

threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
