"""A hostile stand-in provider for runtimeipc's containment tests, run as
`python -m zeotesthostile` cold or forked warm: instead of serving an
invocation it tries each action ZEO_HOSTSIM_HOSTILE lists (";"-separated
"verb:argument", as the simulated host's hostile scenario takes them:
read, write, connect, signal, abstract; setsid, which starts a sleeping
grandchild in a session of its own and reports its pid; proxyget,
tunnel and resolve for the network's egress rows; caps; socket, bind,
fastopen, lodown, iouring and rendezvous for a warm host's shared
loopback) and writes one JSON line, {"actions": {action: "ok" (with what
it got, after a space) or the error}}, on stdout."""

import ctypes
import fcntl
import glob
import http.client
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
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
    elif verb == "socket":
        # FAMILY:TYPE[:PROTO], e.g. inet:dgram, inet6:raw:1, inet:stream:132.
        fam, _, rest = arg.partition(":")
        typ, _, proto = rest.partition(":")
        s = socket.socket({"inet": socket.AF_INET, "inet6": socket.AF_INET6, "packet": 17}[fam],
                          {"stream": socket.SOCK_STREAM, "dgram": socket.SOCK_DGRAM, "raw": socket.SOCK_RAW,
                           "seqpacket": socket.SOCK_SEQPACKET}[typ], int(proto or 0))
        s.close()
    elif verb == "fastopen":
        # A TCP connection opened by sendto(MSG_FASTOPEN), not connect(2).
        host, _, port = arg.rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(3)
            s.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, (host, int(port)))
            return "ok " + s.recv(64).decode(errors="replace").split("\r\n")[0]
        finally:
            s.close()
    elif verb == "bind":
        host, _, port = arg.rpartition(":")
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind((host, int(port)))
            s.listen(1)
        finally:
            s.close()
    elif verb == "lodown":
        # SIOCSIFFLAGS with the loopback's flags minus IFF_UP: needs
        # CAP_NET_ADMIN over the network namespace.
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            ifr = struct.pack("16sH14s", b"lo", 0, b"")
            flags = struct.unpack("16sH14s", fcntl.ioctl(s.fileno(), 0x8913, ifr))[1]  # SIOCGIFFLAGS
            fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH14s", b"lo", flags & ~1, b""))  # SIOCSIFFLAGS
        finally:
            s.close()
    elif verb == "caps":
        with open("/proc/self/status") as f:
            return "ok " + " ".join(l.split()[0] + l.split()[1] for l in f if l.startswith("Cap"))
    elif verb == "iouring":
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)
        fd = libc.syscall(425, 4, params)  # io_uring_setup
        if fd < 0:
            e = ctypes.get_errno()
            raise OSError(e, os.strerror(e))
        os.close(fd)
    elif verb == "rendezvous":
        # DIR: publishes this host's egress proxy port in DIR, waits for a
        # sibling's, connects to its own (the control) and to the
        # sibling's, and waits until the sibling has tried too, so that
        # each proxy is listening while the other host tries it.
        mine = urllib.parse.urlsplit(os.environ["HTTP_PROXY"]).port
        with open(os.path.join(arg, "%d.port" % os.getpid()), "w") as f:
            f.write(str(mine))

        # Up to a minute: on a loaded machine the sibling's fork can come
        # late; the test gives both invocations a deadline past that.
        def other(suffix):
            for _ in range(1200):
                got = [p for p in glob.glob(os.path.join(arg, "*" + suffix))
                       if not os.path.basename(p).startswith("%d." % os.getpid())]
                if got:
                    return got[0]
                time.sleep(0.05)
            raise OSError("no sibling in %s" % arg)

        with open(other(".port")) as f:
            theirs = int(f.read())
        res = []
        for what, port in (("own", mine), ("sibling", theirs)):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=3).close()
                res.append(what + " ok")
            except OSError as e:
                res.append("%s %s" % (what, (e.strerror or str(e)).lower()))
        try:
            _act("fastopen", "127.0.0.1:%d" % theirs)
            res.append("sibling by fastopen ok")
        except OSError as e:
            res.append("sibling by fastopen %s" % (e.strerror or str(e)).lower())
        open(os.path.join(arg, "%d.done" % os.getpid()), "w").close()
        other(".done")
        return "ok " + "; ".join(res)
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
