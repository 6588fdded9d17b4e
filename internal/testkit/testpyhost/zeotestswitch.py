"""A process-wide switch, as a host's managed-execution latch: flipped by
SIGUSR1 (the refusal test sends it to the zygote's server)."""

import signal

LATCHED = False


def _latch(signum, frame):
    global LATCHED
    LATCHED = True


signal.signal(signal.SIGUSR1, _latch)
