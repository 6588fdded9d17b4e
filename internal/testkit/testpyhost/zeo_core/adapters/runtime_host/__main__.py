"""The host's entry: one invocation, its HostResult as one canonical line
on stdout and the exit code of its state."""

import os
import socket
import sys

from zeo_core.adapters.runtime_host.canonical import MAX_BYTES, canonical_bytes, parse_json
from zeo_core.adapters.runtime_host.host import ManagedHost
from zeo_core.contracts.runtime import EXIT_CODES


def _refusal(state, code, binding):
    return {"artifact_refs": [], "binding": binding, "data": None, "effect_disposition": "none",
            "error_code": code, "protocol_version": 1, "state": state}


def main(argv):
    out = os.dup(1)
    if argv != ["invoke", "--request", "-", "--context-fd", "3", "--runtime-fd", "4"]:
        result = _refusal("invalid_request", "ZEO_HOST_INVALID_REQUEST", None)
    else:
        with os.fdopen(os.dup(3), "rb") as f:
            raw = f.read(MAX_BYTES + 1)
        try:
            ctx = parse_json(raw)
        except Exception:  # noqa: BLE001
            ctx = None
        request = sys.stdin.buffer.read(MAX_BYTES + 1)
        try:
            result = ManagedHost(raw, ctx, socket.socket(fileno=os.dup(4))).invoke(request)
        except Exception:  # noqa: BLE001
            result = _refusal("protocol_error", "ZEO_HOST_PROTOCOL", (ctx or {}).get("attempt"))
    os.write(out, canonical_bytes(result) + b"\n")
    return EXIT_CODES[result["state"]]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
