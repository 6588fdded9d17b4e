"""The test provider: imported by the test host after bootstrap, never
before a fork. Each capability takes its arguments and the ToolContext."""

import signal
import subprocess
import time

from zeo_core.contracts.runtime import EffectRequest


def echo(args, ctx):
    return {"text": args["text"]}


def hang(args, ctx):
    words = args["text"].split()
    if "stubborn" in words:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "spawn" in words:
        # A straggler in the host's process group.
        subprocess.Popen(["sleep", "3600"], start_new_session=False)
    while True:
        time.sleep(3600)


def fail(args, ctx):
    raise RuntimeError("ZEO_CAP_UNEXPECTED")


def two_effects(args, ctx):
    """Two governed effects through runtime.effects, then their receipts."""
    port = ctx.services["runtime.effects"]
    receipts = []
    for n in (1, 2):
        reply = port.request(EffectRequest(
            logical_effect_id="%s-effect-%d" % (args["target"], n), connection_ref="conn-demo",
            connector_revision="sha256:" + "0" * 64, operation="demo.write",
            arguments={"target": args["target"], "n": n}))
        receipts.append(reply["receipt_id"])
    return {"target": args["target"], "receipts": receipts}


def factory():
    return {"echo": echo, "hang": hang, "fail": fail, "two_effects": two_effects}
