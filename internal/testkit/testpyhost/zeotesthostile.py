"""A hostile stand-in provider for runtimeipc's containment tests, run as
`python -m zeotesthostile` cold or forked warm: instead of serving an
invocation it tries each action ZEO_HOSTSIM_HOSTILE lists (";"-separated
"verb:argument", as the simulated host's hostile scenario takes them:
read, write, connect, signal, abstract) and writes one JSON line,
{"actions": {action: "ok" or the error}}, on stdout."""

import json
import os
import signal
import socket
import sys


def _act(verb, arg):
    if verb == "read":
        with open(arg, "rb") as f:
            f.read(1)
    elif verb == "write":
        with open(arg, "ab") as f:
            f.write(b"x")
    elif verb == "connect":
        host, _, port = arg.rpartition(":")
        socket.create_connection((host, int(port)), timeout=3).close()
    elif verb == "signal":
        os.kill(os.getpid() if arg == "self" else int(arg), signal.SIGURG)
    elif verb == "abstract":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(3)
            s.connect("\0" + arg)
        finally:
            s.close()
    else:
        raise ValueError("unknown hostile action " + verb)


def main():
    out = {}
    for a in filter(None, os.environ.get("ZEO_HOSTSIM_HOSTILE", "").split(";")):
        verb, _, arg = a.partition(":")
        try:
            _act(verb, arg)
            out[a] = "ok"
        except OSError as e:
            out[a] = (e.strerror or str(e)).lower()
    sys.stdout.write(json.dumps({"actions": out}) + "\n")


if __name__ == "__main__":
    main()
