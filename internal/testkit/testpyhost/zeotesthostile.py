"""A hostile stand-in provider for runtimeipc's containment tests, run as
`python -m zeotesthostile` cold or forked warm: instead of serving an
invocation it tries each action ZEO_HOSTSIM_HOSTILE lists (";"-separated
"verb:argument", as the simulated host's hostile scenario takes them:
read, write, connect, signal, abstract; setsid, which starts a sleeping
grandchild in a session of its own and reports its pid; and proxyget,
tunnel and resolve for the network's egress rows) and writes one JSON
line, {"actions": {action: "ok" (with what it got, after a space) or the
error}}, on stdout."""

import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import urllib.parse
import urllib.request


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
    elif verb == "setsid":
        p = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return "ok %d" % p.pid
    elif verb == "abstract":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(3)
            s.connect("\0" + arg)
        finally:
            s.close()
    elif verb == "proxyget":
        # urllib takes the proxy from the environment (HTTP_PROXY).
        with urllib.request.urlopen(arg, timeout=5) as r:
            return "ok %d %s" % (r.status, r.read(256).decode().strip())
    elif verb == "tunnel":
        # CONNECT through the proxy HTTPS_PROXY names, then GET / inside.
        proxy = urllib.request.getproxies().get("https", "")
        if not proxy:
            raise OSError("no proxy in HTTPS_PROXY")
        p = urllib.parse.urlsplit(proxy)
        c = http.client.HTTPConnection(p.hostname, p.port, timeout=5)
        host, _, port = arg.rpartition(":")
        c.set_tunnel(host, int(port))
        try:
            c.request("GET", "/")
            r = c.getresponse()
            return "ok %d %s" % (r.status, r.read(256).decode().strip())
        finally:
            c.close()
    elif verb == "resolve":
        # NAME@HOST:PORT: one A query to that DNS server over UDP.
        name, _, server = arg.partition("@")
        host, _, port = server.rpartition(":")
        q = struct.pack(">HHHHHH", 0x2a2a, 0x0100, 1, 0, 0, 0)
        q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
        q += struct.pack(">HH", 1, 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            s.settimeout(3)
            s.sendto(q, (host, int(port)))
            resp = s.recv(1500)
        finally:
            s.close()
        return "ok %s" % socket.inet_ntoa(resp[-4:])
    else:
        raise ValueError("unknown hostile action " + verb)


def main():
    out = {}
    for a in filter(None, os.environ.get("ZEO_HOSTSIM_HOSTILE", "").split(";")):
        verb, _, arg = a.partition(":")
        try:
            out[a] = _act(verb, arg) or "ok"
        except OSError as e:
            out[a] = (e.strerror or str(e)).lower()
    sys.stdout.write(json.dumps({"actions": out}) + "\n")


if __name__ == "__main__":
    main()
