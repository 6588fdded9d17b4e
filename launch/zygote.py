"""The fork server ("zygote") of runtimeipc's warm launch.

The Go launcher starts this program as it starts a host (the exact
interpreter and interpreter options, the launcher's environment, its own
session, only FDs 0-3), with a SOCK_SEQPACKET control socket on FD 3, and
embeds it: see launch/zygote.go and doc/design.md, "Warm launch". It uses
the standard library only, and runs no host or provider code itself.

Control messages are JSON objects, one per packet; descriptors travel as
SCM_RIGHTS next to them.

    launcher -> server
      config   {op, module, preload, discover, forbid, switches, spare, pretouch}
      fork     {op, id, argv, env, dir, orig_argv, contain, cgroup} +
               [stdin, stdout, stderr, context, ipc socket] (argv, env,
               dir: base64), and with cgroup true a sixth descriptor: the
               host's own cgroup.procs, opened for writing by the launcher;
               with contain.egress true the server binds the child an
               egress listener on 127.0.0.1 (a port of the kernel's
               choosing), puts its port in contain.egress_port and hands
               the listener to the launcher with the forked answer
      signal   {op, pid, sig}     the child's process group (old kernels)
    server -> launcher
      ready    {op, pid, python, modules, refusal, preloaded, discovery,
               skipped} or {op, error}
      forked   {op, id, pid, spare} + [pidfd], and when contain.egress
               is set, + [the child's egress listener]
      refused  {op, id, reason}
      exit     {op, pid, code}    code < 0: killed by signal -code

A child leaves this program's loop at once: main() returns the job to the
module level, which runs the host module as `python -m` runs it.
"""

import signal
import sys

# What a fresh interpreter holds, before anything of ours runs: each child
# gets these back.
_INITIAL_HANDLERS = {}
for _s in signal.valid_signals():
    try:
        _INITIAL_HANDLERS[_s] = signal.getsignal(_s)
    except (OSError, ValueError):
        pass
_INITIAL_MASK = signal.pthread_sigmask(signal.SIG_BLOCK, ())


def _interpreter_additions():
    # What the interpreter added to the environment it was given while it
    # started (LC_CTYPE under PEP 538's locale coercion): a cold host's
    # interpreter adds the same to the same environment.
    import os
    try:
        with open("/proc/self/environ", "rb") as f:
            given = {kv.partition(b"=")[0] for kv in f.read().split(b"\0") if kv}
    except OSError:
        return {}
    return {k: v for k, v in os.environb.items() if k not in given}


_INTERPRETER_ADDED = _interpreter_additions()

import array  # noqa: E402,F401  (socket.send_fds imports it lazily)
import ast  # noqa: E402
import base64  # noqa: E402
import ctypes  # noqa: E402
import fcntl  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import runpy  # noqa: E402
import select  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

_SELF = __file__
_CTRL_FD = 3
_MAX_PACKET = 256 << 10
_MAX_FDS = 8
_MAX_LISTED = 256  # module names a ready message lists at most
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_MADV_POPULATE_WRITE = 23
_SCALARS = (bool, int, float, complex, str, bytes, type(None))

_libc = ctypes.CDLL(None, use_errno=True)


class ProtocolError(Exception):
    """The launcher sent something this server does not understand."""


class BecomeHost(BaseException):
    """Raised in a new child to leave the server's frames: main() catches
    it and returns the job to the module level."""

    def __init__(self, job):
        super().__init__()
        self.job = job


def _send(sock, msg, fds=()):
    data = json.dumps(msg, separators=(",", ":")).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def _close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def _freeze():
    # Every object so far goes to the collector's permanent generation,
    # which it never scans: a child's collections (and its interpreter's
    # final one) then do not write to, and so copy, the pages it shares
    # with this process (the gc module's documented advice for fork
    # servers).
    gc.freeze()


def _matches(name, prefixes):
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _scalars(mod):
    return {k: v for k, v in vars(mod).items() if isinstance(v, _SCALARS)}


# -- the host's import closure ---------------------------------------------
#
# With "discover", the preload is what the host module itself imports
# before it runs: its source, and that of every module of its package it
# imports, is read and parsed here, never executed (doc/design.md, "Warm
# launch"). What lies outside the host package (and outside every
# forbidden package) is imported, in the order the host would import it;
# its own imports then follow as they would in the host.


class DiscoveryError(Exception):
    """The host's imports cannot be read; the fixed list is preloaded."""


def _why(e):
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def _find_spec(name):
    """The spec of module name, found as the import system would find it
    but without importing its parent packages: each finder on
    sys.meta_path is asked in turn, level by level. Finders locate code,
    they never run it."""
    path, spec = None, None
    parts = name.split(".")
    for i in range(len(parts)):
        full = ".".join(parts[:i + 1])
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(full, path, None)
            if spec is not None:
                break
        if spec is None:
            return None
        path = spec.submodule_search_locations
        if path is None and i < len(parts) - 1:
            return None
    return spec


def _source(name, spec):
    if spec.origin is None or spec.origin == "namespace":
        return ""  # a namespace package has no code of its own
    get = getattr(spec.loader, "get_source", None)
    src = get(name) if get is not None else None
    if src is None:
        raise DiscoveryError("host module %s has no source to read (%s)" % (name, spec.origin))
    return src


def _is_type_checking(test):
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_main_guard(test):
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}


def _catches_import_error(handlers):
    for h in handlers:
        types_ = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]
        if any(t is None or (isinstance(t, ast.Name) and t.id in _IMPORT_ERRORS) for t in types_):
            return True
    return False


def _top_level_imports(tree, main):
    """The import statements that run when the module is imported (main:
    run as __main__), each with whether it is optional (in a try block
    that catches ImportError): module level, including the bodies of if,
    try, with, for, while and class statements, but not of functions, nor
    of `if TYPE_CHECKING:`, nor (unless main) of `if __name__ == "__main__":`."""
    out = []

    def walk(stmts, optional):
        for st in stmts:
            if isinstance(st, (ast.Import, ast.ImportFrom)):
                out.append((st, optional))
            elif isinstance(st, ast.If):
                if not (_is_type_checking(st.test) or (not main and _is_main_guard(st.test))):
                    walk(st.body, optional)
                walk(st.orelse, optional)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            else:
                handlers = getattr(st, "handlers", None) or []
                walk(getattr(st, "body", None) or [], optional or _catches_import_error(handlers))
                for field in ("orelse", "finalbody"):
                    walk(getattr(st, field, None) or [], optional)
                for h in handlers:
                    walk(h.body, optional)
                for c in getattr(st, "cases", None) or []:
                    walk(c.body, optional)

    walk(tree.body, False)
    return out


def discover(module, forbid):
    """The host module's import-time closure, as [(name, fromlist,
    required)]: the parent packages `python -m` imports first, then every
    module outside the host package that the host package's modules
    import at their top level, in the order the host imports them (a
    module of the host package is followed where it is imported, as the
    import runs it). required: imported somewhere outside a try block
    that catches ImportError. Raises DiscoveryError (or what reading and
    parsing raise) when the host cannot be read."""
    spec = _find_spec(module)
    if spec is None:
        raise DiscoveryError("host module %s is not found on the host's sys.path" % module)
    parts = module.split(".")
    order, fromlists, required, seen = [], {}, set(), set()

    def want(name, names=(), optional=False):
        if name not in fromlists:
            order.append(name)
            fromlists[name] = []
        fromlists[name].extend(n for n in names if n not in fromlists[name])
        if not optional:
            required.add(name)

    def visit(name, s=None, main=False):
        # A module of the host package: read, never imported here.
        if name in seen:
            return
        bits = name.split(".")
        for i in range(len(parts), len(bits)):
            visit(".".join(bits[:i]))  # its packages are imported first
        seen.add(name)
        s = s or _find_spec(name)
        if s is None:
            return  # the host's own import would fail there, cold or warm
        tree = ast.parse(_source(name, s), s.origin or name)
        package = name if s.submodule_search_locations is not None else name.rpartition(".")[0]
        for st, optional in _top_level_imports(tree, main):
            if isinstance(st, ast.Import):
                targets = [(a.name, ()) for a in st.names]
            elif st.module == "__future__":
                continue
            elif st.level:
                bits = package.split(".")
                if not package or st.level - 1 >= len(bits):
                    raise DiscoveryError("%s: a relative import beyond the top-level package" % name)
                base = ".".join(bits[:len(bits) - (st.level - 1)])
                targets = [(base + "." + st.module if st.module else base, tuple(a.name for a in st.names))]
            else:
                targets = [(st.module, tuple(a.name for a in st.names))]
            for target, names in targets:
                if _matches(target, [module]):
                    visit(target)
                    for n in names:
                        if n != "*":
                            visit(target + "." + n)  # `from package import submodule`
                elif not _matches(target, forbid):
                    # Never a name that would import host or forbidden
                    # code as a submodule (`from zeo_core.adapters import
                    # runtime_host`).
                    want(target, [n for n in names if not _matches(target + "." + n, [module] + forbid)], optional)

    for i in range(1, len(parts)):
        want(".".join(parts[:i]))
    visit(module, spec, spec.submodule_search_locations is None)
    if spec.submodule_search_locations is not None:  # -m runs the package's __main__
        main = _find_spec(module + ".__main__")
        if main is None:
            raise DiscoveryError("host package %s has no __main__ module" % module)
        visit(module + ".__main__", main, True)
    return [(n, tuple(fromlists[n]), n in required) for n in order]


class Server:
    def __init__(self, ctrl):
        self.ctrl = ctrl
        self.poller = select.poll()
        self.poller.register(ctrl.fileno(), select.POLLIN)
        self.children = {}  # our pidfd -> pid
        self.spare = None  # (pid, pidfd, socket) of a pre-forked child
        self.spare_ready = False
        self.cfg = None
        self.pid = os.getpid()
        self.egress_ports = set()  # every port an egress listener of ours had

    # -- start -----------------------------------------------------------

    def configure(self):
        msg, fds, _flags, _ = socket.recv_fds(self.ctrl, _MAX_PACKET, _MAX_FDS)
        _close_all(fds)
        cfg = json.loads(msg)
        if cfg.get("op") != "config":
            raise ProtocolError("the first message is not config")
        self.cfg = cfg
        self.forbid = list(cfg["forbid"])
        preload, discovery, skipped, done = [(n, (), True) for n in cfg["preload"]], "", [], []
        if cfg.get("discover"):
            try:
                preload = discover(cfg["module"], self.forbid)
            except Exception as e:  # noqa: BLE001 -- reported; the fixed list is preloaded instead
                discovery = _why(e)
        for name, fromlist, required in preload:
            if _matches(name, self.forbid):
                _send(self.ctrl, {"op": "ready", "error": "preload module %s is forbidden (host or provider code)" % name})
                return False
            try:
                __import__(name, fromlist=fromlist)
            except BaseException as e:  # noqa: BLE001 -- reported, then exit (or skipped, if discovered)
                if cfg.get("discover") and not discovery and not isinstance(e, (SystemExit, KeyboardInterrupt)):
                    # The host would meet the same failure at its own
                    # import (or expects it, for an optional one):
                    # preloading the rest still saves their time.
                    if required or not isinstance(e, ImportError):
                        skipped.append("%s (%s)" % (name, _why(e)))
                    continue
                _send(self.ctrl, {"op": "ready", "error": "importing %s: %s" % (name, _why(e))})
                return False
            done.append(name)
        # The non-dumpable mark keeps hosts (same user) from reading or
        # tracing this process; each child is made dumpable again.
        _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        self.modules = set(sys.modules)
        self.switches = {n: _scalars(sys.modules[n]) if n in sys.modules else None for n in cfg["switches"]}
        if cfg.get("spare"):
            self.fork_spare()
        _send(self.ctrl, {"op": "ready", "pid": os.getpid(), "python": platform.python_version(),
                          "modules": len(sys.modules), "refusal": self.refusal() or "",
                          # Bounded, so that the message fits the launcher's buffer.
                          "preloaded": done[:_MAX_LISTED], "discovery": discovery[:1000],
                          "skipped": [x[:300] for x in skipped[:_MAX_LISTED // 16]]})
        return True

    # -- the pre-fork checks ---------------------------------------------

    def refusal(self, passing=()):
        """Why this process must not fork a host now, or None. passing are
        the descriptors of the job at hand."""
        bad = sorted(n for n in sys.modules if _matches(n, self.forbid))
        if bad:
            return "host or provider modules are loaded: " + ", ".join(bad[:5])
        new = sorted(n for n in set(sys.modules) - self.modules
                     if n.partition(".")[0] not in sys.stdlib_module_names)
        if new:
            return "modules were imported after the preload: " + ", ".join(new[:5])
        tasks = len(os.listdir("/proc/self/task"))
        if threading.active_count() != 1 or tasks != 1:
            return "%d threads run (%d Python threads); forking needs exactly one" % (tasks, threading.active_count())
        for name, snap in self.switches.items():
            mod = sys.modules.get(name)
            if (mod is None) != (snap is None) or (mod is not None and _scalars(mod) != snap):
                return "process-wide state of module %s changed after the preload" % name
        if sys.gettrace() is not None or sys.getprofile() is not None:
            return "a trace or profile function is set"
        stray = self.stray_fds(passing)
        if stray:
            return "descriptors held by preloaded code: %s" % stray[:5]
        return None

    def stray_fds(self, passing):
        known = {0, 1, 2, self.ctrl.fileno()} | set(self.children) | set(passing)
        if self.spare is not None:
            known |= {self.spare[1], self.spare[2].fileno()}
        out = []
        me = "/proc/%d/fd" % os.getpid()
        for e in os.scandir("/proc/self/fd"):
            fd = int(e.name)
            if fd in known:
                continue
            try:
                if os.readlink(e.path) == me:
                    continue  # the listing itself
            except OSError:
                continue
            out.append(fd)
        return out

    # -- the loop ----------------------------------------------------------

    def run(self):
        """Serves until the launcher closes the socket. In a child it
        raises BecomeHost."""
        ctrl = self.ctrl.fileno()
        while True:
            for fd, _ev in self.poller.poll():
                if fd == ctrl:
                    self.on_message()
                elif fd in self.children:
                    self.on_exit(fd)
                elif self.spare is not None and fd == self.spare[2].fileno():
                    self.on_spare()

    def on_message(self):
        """Handles one control message; a fork raises BecomeHost in the
        child."""
        msg, fds, flags, _ = socket.recv_fds(self.ctrl, _MAX_PACKET, _MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        if not msg and not fds:
            self.shutdown()
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            _close_all(fds)
            raise ProtocolError("a truncated control message")
        m = json.loads(msg)
        op = m.get("op")
        if op == "fork":
            want = _fork_fds(m)
            if len(fds) != want:
                _close_all(fds)
                raise ProtocolError("fork with %d descriptors, want %d" % (len(fds), want))
            self.on_fork(m, fds)
            return
        _close_all(fds)
        if op == "signal":
            if m["pid"] in self.children.values():
                try:
                    os.killpg(m["pid"], m["sig"])
                except OSError:
                    pass
            return
        raise ProtocolError("unknown op %r" % op)

    def on_fork(self, m, fds):
        reason = self.refusal(fds)
        if reason:
            _close_all(fds)
            _send(self.ctrl, {"op": "refused", "id": m["id"], "reason": reason})
            return
        extra = []
        contain = m.get("contain")
        if contain and contain.get("egress"):
            ln, contain["egress_port"] = _egress_listener(self.egress_ports)
            if ln is None:
                _close_all(fds)
                _send(self.ctrl, {"op": "refused", "id": m["id"], "reason": _NO_EGRESS_PORT})
                return
            extra.append(ln)
        if self.spare is not None and self.spare_ready and self.hand_to_spare(m, fds, extra):
            _close_all(extra)
            return
        _freeze()
        pid = os.fork()
        if pid == 0:
            # The listener's number is closed with every other above 4.
            raise BecomeHost(_child(self, m, fds))
        _close_all(fds)
        self.adopt(pid, os.pidfd_open(pid), m["id"], False, extra)
        _close_all(extra)

    def adopt(self, pid, pidfd, job_id, spare, extra=()):
        """Tracks child pid (pidfd is ours) and tells the launcher, passing
        it a pidfd of its own and the descriptors extra."""
        self.children[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)
        theirs = os.pidfd_open(pid)
        _send(self.ctrl, {"op": "forked", "id": job_id, "pid": pid, "spare": spare}, [theirs, *extra])
        os.close(theirs)

    def on_exit(self, pidfd):
        pid = self.children.pop(pidfd)
        self.poller.unregister(pidfd)
        # Reap only once the group's stragglers are killed: until then the
        # group id is certainly the child's.
        try:
            os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOWAIT)
        except ChildProcessError:
            pass
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        _send(self.ctrl, {"op": "exit", "pid": pid, "code": os.waitstatus_to_exitcode(status)})
        if self.cfg.get("spare") and self.spare is None:
            self.fork_spare()

    def shutdown(self):
        if self.spare is not None:
            try:
                os.kill(self.spare[0], signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)

    # -- the spare ---------------------------------------------------------

    def fork_spare(self):
        if self.spare is not None or self.refusal():
            return
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        _freeze()
        pid = os.fork()
        if pid == 0:
            os.close(mine.detach())
            raise BecomeHost(_spare(self, theirs))
        theirs.close()
        pidfd = os.pidfd_open(pid)
        self.spare = (pid, pidfd, mine)
        self.spare_ready = False
        self.poller.register(mine.fileno(), select.POLLIN)

    def on_spare(self):
        pid, pidfd, sock = self.spare
        data = b""
        try:
            data = sock.recv(16)
        except OSError:
            pass
        if data == b"ready":
            self.spare_ready = True
            return
        self.drop_spare()  # it died, or said something else

    def drop_spare(self):
        pid, pidfd, sock = self.spare
        self.spare = None
        self.spare_ready = False
        self.poller.unregister(sock.fileno())
        sock.close()
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(pid, 0)
        os.close(pidfd)

    def hand_to_spare(self, m, fds, extra):
        pid, pidfd, sock = self.spare
        try:
            _send(sock, m, fds)
        except OSError:
            self.drop_spare()
            return False
        _close_all(fds)
        self.spare = None
        self.spare_ready = False
        self.poller.unregister(sock.fileno())
        sock.close()
        self.adopt(pid, pidfd, m["id"], True, extra)
        return True


_NO_EGRESS_PORT = "no loopback port is left that no earlier child of this server was given"


def _egress_listener(used):
    """A TCP listener on 127.0.0.1 of this server's network namespace,
    whose loopback the containment init brought up, on a port of the
    kernel's choosing, for one child allowed the network: (its descriptor,
    its port), or (None, 0) when no such port is left. The launcher's
    egress proxy serves it; the child's own Landlock layer allows a TCP
    connection to that port and no other, so no sibling can use it
    (doc/design.md, "Containment", "Warm egress").

    The port is never one in used, the ports this server gave earlier
    children, and is added to it: a descendant of an earlier child that
    outlived it (where no cgroup ends it with its host) keeps its right to
    connect to that child's port, and must not find another child's proxy
    there. The sockets bound to used ports meanwhile are held, so that
    the kernel picks another each time, then closed."""
    held = []
    try:
        for _ in range(64):
            ln = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(ln)
            try:
                ln.bind(("127.0.0.1", 0))
            except OSError:
                return None, 0  # the port range is exhausted
            port = ln.getsockname()[1]
            if port not in used:
                ln.listen(128)
                used.add(port)
                held.pop()
                return ln.detach(), port
        return None, 0
    finally:
        for s in held:
            s.close()


# -- in a child ----------------------------------------------------------


def _leave_server(server):
    # The server's socket objects must never close a descriptor number
    # that the host reuses: detach them (closing the control socket now,
    # so that the launcher sees the server's end close with the server),
    # and later close every number above 4.
    os.close(server.ctrl.detach())
    if server.spare is not None:
        server.spare[2].detach()
    os.setsid()


def _spare(server, sock):
    """A pre-forked child: waits for its job, then becomes the host."""
    try:
        # A spare dies with its server (and holds its output open until
        # then); a host has no such tie, as a cold host has none.
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != server.pid:
            os._exit(0)
        _leave_server(server)
        if server.cfg.get("pretouch"):
            _pretouch()
        sock.send(b"ready")
        msg, fds, flags, _ = socket.recv_fds(sock, _MAX_PACKET, _MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        if not msg or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            os._exit(0)
        m = json.loads(msg)
        if len(fds) != _fork_fds(m):
            os._exit(0)
        sock.detach()
        return _become_host(server, m, fds)
    except BaseException:  # noqa: BLE001 -- a spare never returns to the loop
        os._exit(0)


def _pretouch():
    """Copies every private writable page now (MADV_POPULATE_WRITE), so
    that the host does not pay the copy-on-write faults later."""
    madvise = _libc.madvise
    madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or parts[1][:2] != "rw" or parts[1][3] != "p":
                continue
            if len(parts) > 5 and parts[5] in ("[vvar]", "[vsyscall]", "[vdso]", "[vvar_vclock]"):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            madvise(lo, hi - lo, _MADV_POPULATE_WRITE)


def _child(server, m, fds):
    try:
        _leave_server(server)
        return _become_host(server, m, fds)
    except BaseException:  # noqa: BLE001 -- a child never returns to the loop
        try:
            os.write(2, ("zeo zygote: preparing the host failed:\n" + traceback.format_exc()).encode())
        finally:
            os._exit(126)


def _fork_fds(m):
    """How many descriptors a fork request carries."""
    return 6 if m.get("cgroup") else 5


def _enter_cgroup(fd):
    """Moves this child into the host's own cgroup (doc/design.md,
    "Containment"), before the host runs a line: fd is that cgroup's
    cgroup.procs, which the launcher opened, so the kernel checks the move
    against the launcher's credentials, not ours. A child that cannot move
    never runs the host: it says why on the host's stderr and exits 126."""
    try:
        os.write(fd, b"0")
    except OSError as e:
        os.write(2, ("zeo zygote: the host could not enter its cgroup: %s\n" % e).encode())
        os._exit(126)
    finally:
        os.close(fd)


def _become_host(server, m, fds):
    # Descriptors: first above the range, then onto 0-4 (inheritable, as
    # a cold host receives them), then nothing else.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds]
    for i, fd in enumerate(high[:5]):
        os.dup2(fd, i)
    if len(high) > 5:
        _enter_cgroup(high[5])
    os.closerange(5, max(int(n) for n in os.listdir("/proc/self/fd")) + 1)
    # Signals: the dispositions and mask of a fresh interpreter.
    for s, h in _INITIAL_HANDLERS.items():
        if h is None or s in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(s, h)
        except (OSError, ValueError, RuntimeError):
            pass
    signal.set_wakeup_fd(-1)
    signal.pthread_sigmask(signal.SIG_SETMASK, _INITIAL_MASK)
    _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
    _libc.prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)
    os.chdir(base64.b64decode(m["dir"]))
    # The environment, in os.environ and at the C level alike.
    os.environb.clear()
    _libc.clearenv()
    for kv in m["env"]:
        k, _, v = base64.b64decode(kv).partition(b"=")
        os.environb[k] = v
    contain = m.get("contain") or {}
    if contain.get("egress_port"):
        # As a cold host allowed the network gets them: naming its proxy.
        proxy = b"http://127.0.0.1:%d" % contain["egress_port"]
        for k in contain["proxy_env"]:
            os.environb[k.encode()] = proxy
    for k, v in _INTERPRETER_ADDED.items():
        if k not in os.environb:
            os.environb[k] = v
    argv = [os.fsdecode(base64.b64decode(a)) for a in m["argv"]]
    sys.orig_argv = [os.fsdecode(base64.b64decode(a)) for a in m["orig_argv"]]
    if not sys.flags.safe_path and sys.path:
        sys.path[0] = os.getcwd()  # as -m puts it, where the script's directory was
    _contain(m.get("contain"))
    return server.cfg["module"], argv


# -- containment (doc/design.md, "Containment") --------------------------

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_RULE_PATH_BENEATH = 1
_LANDLOCK_RULE_NET_PORT = 2
_LANDLOCK_ACCESS_NET_CONNECT_TCP = 2
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _contain(spec):
    """Enforces the launch's own Landlock layer on this child, inside the
    server's (which the launcher's containment init applied, with the
    namespaces, limits, no_new_privs and seccomp every child inherits):
    the rules and scopes the launcher computed for this invocation, so
    that a warm host reaches exactly what a cold one would, and neither
    its server nor its siblings. When the server's loopback is up (a
    zygote that forks hosts allowed the network warm), the layer also
    handles TCP bind and connect, allowing only a connection to the
    child's own egress listener (egress_port) when it has one, and the
    child installs the launcher's socket filter (seccomp: no UDP, raw or
    other non-TCP internet socket, no io_uring), so that it reaches
    nothing on that shared loopback but its own proxy. Any failure ends
    the child before the host runs (see _child)."""
    if not spec:
        return
    syscall = _libc.syscall
    syscall.restype = ctypes.c_long

    def check(r, what):
        if r < 0:
            e = ctypes.get_errno()
            raise OSError(e, "%s: %s" % (what, os.strerror(e)))
        return r

    attr = (ctypes.c_uint64 * 3)(spec["handled_fs"], spec.get("handled_net", 0), spec["scoped"])
    rfd = check(syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                        ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for path, access in spec["rules"]:
            try:
                fd = os.open(base64.b64decode(path), os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                rule = _PathBeneath(access, fd)
                check(syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(rfd), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                              ctypes.byref(rule), ctypes.c_uint32(0)), "landlock_add_rule")
            finally:
                os.close(fd)
        if spec.get("egress_port"):
            rule = _NetPort(_LANDLOCK_ACCESS_NET_CONNECT_TCP, spec["egress_port"])
            check(syscall(_SYS_LANDLOCK_ADD_RULE, ctypes.c_int(rfd), ctypes.c_int(_LANDLOCK_RULE_NET_PORT),
                          ctypes.byref(rule), ctypes.c_uint32(0)), "landlock_add_rule (egress port)")
        elif spec.get("egress"):
            raise OSError("no egress port for a host allowed the network")
        check(syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(rfd), ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(rfd)
    if spec.get("seccomp"):
        prog = base64.b64decode(spec["seccomp"])
        buf = ctypes.create_string_buffer(prog, len(prog))
        fprog = _SockFprog(len(prog) // 8, ctypes.addressof(buf))
        prctl = _libc.prctl
        check(prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        check(prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "prctl(PR_SET_SECCOMP)")


def _run_host(module, argv):
    """Runs module as `python -m module argv...` does, in a fresh
    __main__, and leaves the interpreter's own exit to decide the status."""
    sys.argv = ["-m"] + argv
    main = types.ModuleType("__main__")
    sys.modules["__main__"] = main
    run = getattr(runpy, "_run_module_as_main", None)
    try:
        if run is not None:
            run(module, True)
        else:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as e:  # noqa: BLE001 -- printed as the interpreter prints it
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _SELF:
            tb = tb.tb_next
        e.__traceback__ = tb  # the default hook prints the exception's own
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        sys.excepthook(type(e), e, tb)
        raise SystemExit(1) from None


def main():
    ctrl = socket.socket(fileno=_CTRL_FD)
    server = Server(ctrl)
    try:
        if server.configure():
            server.run()
    except BecomeHost as b:
        return b.job
    return None


if __name__ == "__main__":
    _job = main()
    if _job is None:
        sys.exit(1)
    _run_host(*_job)
