"""The test provider: imported by the test host after bootstrap, never
before a fork."""

import signal
import subprocess
import time


def echo(args):
    return {"text": args["text"]}


def hang(args):
    words = args["text"].split()
    if "stubborn" in words:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "spawn" in words:
        # A straggler in the host's process group.
        subprocess.Popen(["sleep", "3600"], start_new_session=False)
    while True:
        time.sleep(3600)


def fail(args):
    raise RuntimeError("ZEO_CAP_UNEXPECTED")


def factory():
    return {"echo": echo, "hang": hang, "fail": fail}
