"""The provider-warm fork server of runtimeipc (doc/design.md,
"Provider-warm launch").

The Go launcher starts this program as it starts the warm launch's server
(launch/zygote.py, which it writes beside this file as _zeo_zygote and
whose child preparation this program uses), for one provider binding and
one tenant. It does once, with the host's own functions, what the host
does before every invocation and what depends only on the provider
generation: the managed-execution latch, the admitted inventory validated,
the provider's factory imported, its generation activated. Then it forks
one child per invocation, each with a control channel of its own that the
launcher receives: the invocation's descriptors and request go from the
launcher to the child over that channel, never through this process.

    launcher -> server
      config   {op, module, pins, spare} + [the binding's JSON, a sealed
               memfd]
      fork     {op, id, egress} (egress: bind the child an egress
               listener, as zygote.py does)
      signal   {op, pid, sig}
    server -> launcher
      ready    {op, pid, python, phases, binding_digest, host, refusal}
               or {op, error}
      forked   {op, id, pid, spare} + [pidfd, the child's channel], and
               with egress + [the child's egress listener]
      refused  {op, id, reason}
      exit     {op, pid, code}
    launcher -> child, on the child's channel
      job      {argv, env, dir, orig_argv, contain} + [stdin, stdout,
               stderr, context, ipc socket]
"""

import _zeo_zygote as _z  # first: it records the fresh interpreter's state

import gc  # noqa: E402
import hashlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

# The host package's modules whose source the server relies on: pinned.
PINNED = ("host", "catalogue")


class Refusal(Exception):
    """This server must not become warm; the message says why."""


def _pinned_sources(module):
    """The sha256 digests of the pinned modules' source bytes, read (never
    run) where the import system would find them."""
    out = {}
    for name in PINNED:
        spec = _z._find_spec(module + "." + name)
        if spec is None or not spec.origin or spec.loader is None or not hasattr(spec.loader, "get_data"):
            raise Refusal("the host module %s.%s is not found as a source file" % (module, name))
        out[name + ".py"] = "sha256:" + hashlib.sha256(spec.loader.get_data(spec.origin)).hexdigest()
    return out


def _recognised(found, pins):
    for pin in pins:
        if pin["files"] == found:
            return pin["name"]
    raise Refusal("the host is not a version this server was checked against (its sources: %s)" %
                  ", ".join("%s %s" % kv for kv in sorted(found.items())))


def _threads():
    return len(os.listdir("/proc/self/task"))


def _children():
    """The pids of this process's children."""
    pids = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/children" % tid) as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    if not pids:
        try:
            if os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                pids.append(-1)  # an exited child not yet reaped
            else:
                pids.append(0)  # a child, which /proc did not name
        except ChildProcessError:
            pass
    return pids


def _describe_fds(fds):
    out = []
    for fd in fds:
        try:
            out.append("%d (%s)" % (fd, os.readlink("/proc/self/fd/%d" % fd)))
        except OSError:
            out.append(str(fd))
    return out


class ProviderServer(_z.Server):
    """The warm launch's server loop with provider-warm configuration and
    forks: a child receives its invocation on its own channel."""

    def configure(self):
        msg, fds, _flags, _ = socket.recv_fds(self.ctrl, _z._MAX_PACKET, _z._MAX_FDS)
        try:
            cfg = json.loads(msg)
            if cfg.get("op") != "config" or len(fds) != 1:
                raise _z.ProtocolError("the first message is not config with the binding")
            with os.fdopen(os.dup(fds[0]), "rb") as f:
                raw_binding = f.read()
        finally:
            _z._close_all(fds)
        self.cfg = cfg
        # Its children (same user) must not read or trace it, from the
        # first provider line on.
        _z._libc.prctl(_z._PR_SET_DUMPABLE, 0, 0, 0, 0)
        module = cfg["module"]
        phases = {}
        try:
            host_name = _recognised(_pinned_sources(module), cfg["pins"])
            self.warm(module, raw_binding, phases)
        except Refusal as e:
            _z._send(self.ctrl, {"op": "ready", "pid": os.getpid(), "refusal": str(e)[:2000]})
            return False
        except BaseException as e:  # noqa: BLE001 -- reported by type only: provider text may hold secrets
            _z._send(self.ctrl, {"op": "ready", "error": "%s failed: %s" % (self.phase, type(e).__name__)})
            return False
        self.modules = set(sys.modules)
        refusal = self.loaded_state()
        if refusal:
            for pid in _children():
                if pid > 0:  # a child not yet reaped: its pid is still its own
                    try:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    except OSError:
                        pass
            _z._send(self.ctrl, {"op": "ready", "pid": os.getpid(), "refusal": refusal})
            return False
        if cfg.get("spare"):
            self.fork_spare()
        _z._send(self.ctrl, {"op": "ready", "pid": os.getpid(), "python": platform.python_version(),
                             "modules": len(sys.modules), "host": host_name, "phases": phases,
                             "binding_digest": self.binding_digest, "refusal": ""})
        return True

    def warm(self, module, raw_binding, phases):
        """The generation-dependent work, with the host's own functions
        and in the host's order (see ManagedHost.invoke)."""

        def step(name, fn, *args):
            self.phase = name
            t = time.monotonic()
            r = fn(*args)
            phases[name] = int((time.monotonic() - t) * 1000)
            return r

        self.phase = "importing the host"
        t = time.monotonic()
        try:
            closure = _z.discover(module, [module + ".__main__", self.provider_package(raw_binding)])
        except Exception:  # noqa: BLE001 -- only a preload: a child imports what is missing
            closure = []
        for name, fromlist, _required in closure:
            try:
                __import__(name, fromlist=fromlist)
            except Exception:  # noqa: BLE001 -- the host meets the same failure
                pass
        host = importlib.import_module(module + ".host")
        cat = importlib.import_module(module + ".catalogue")
        phases["host_import"] = int((time.monotonic() - t) * 1000)
        step("entering managed execution", host.enter_managed_execution)
        binding = step("reading the binding", cat.ProviderBinding.model_validate_json, raw_binding)
        step("validating the inventory", cat.validate_inventory, binding)
        factory = step("importing the provider", cat.installed_factory, binding)
        generation = step("activating the generation", cat.CandidateCatalogue().activate, binding, factory)
        self.phase = "serving"
        self.host, self.generation, self.binding = host, generation, binding
        self.binding_digest = host.digest(binding.model_dump(mode="json"))

    @staticmethod
    def provider_package(raw_binding):
        factory = json.loads(raw_binding).get("factory", "")
        return factory.partition(":")[0].partition(".")[0] or "_"

    def loaded_state(self):
        """Why loading left this process unable to fork children that
        share nothing but the generation, or None: threads, descriptors
        beyond its own, child processes."""
        why = []
        if _threads() != 1 or threading.active_count() != 1:
            why.append("loading left %d threads running (%d Python threads); forking needs exactly one" %
                       (_threads(), threading.active_count()))
        stray = self.stray_fds(())
        if stray:
            why.append("loading left descriptors open: %s" % ", ".join(_describe_fds(stray[:5])))
        kids = _children()
        if kids:
            why.append("loading left child processes: %s" % kids[:5])
        return "; ".join(why) or None

    def refusal(self, passing=()):
        if _threads() != 1 or threading.active_count() != 1:
            return "%d threads run; forking needs exactly one" % _threads()
        stray = self.stray_fds(passing)
        if stray:
            return "descriptors this server does not know are open: %s" % ", ".join(_describe_fds(stray[:5]))
        return None

    # -- forks -------------------------------------------------------------

    def on_message(self):
        msg, fds, flags, _ = socket.recv_fds(self.ctrl, _z._MAX_PACKET, _z._MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        if not msg and not fds:
            self.shutdown()
        _z._close_all(fds)  # no message to this server carries descriptors
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            raise _z.ProtocolError("a truncated control message")
        m = json.loads(msg)
        op = m.get("op")
        if op == "fork":
            self.on_fork(m, ())
        elif op == "signal":
            if m["pid"] in self.children.values():
                try:
                    os.killpg(m["pid"], m["sig"])
                except OSError:
                    pass
        else:
            raise _z.ProtocolError("unknown op %r" % op)

    def on_fork(self, m, fds):
        reason = self.refusal()
        if reason:
            _z._send(self.ctrl, {"op": "refused", "id": m["id"], "reason": reason})
            return
        spare = self.spare is not None
        if not spare:
            self.fork_spare()
            if self.spare is None:
                _z._send(self.ctrl, {"op": "refused", "id": m["id"], "reason": "fork failed"})
                return
        extra = []
        if m.get("egress"):
            # After the fork: no child holds it. The launcher puts its
            # port in the job it sends the child.
            ln, _port = _z._egress_listener(self.egress_ports)
            if ln is None:
                _z._send(self.ctrl, {"op": "refused", "id": m["id"], "reason": _z._NO_EGRESS_PORT})
                return
            extra.append(ln)
        pid, pidfd, chan = self.spare
        self.spare = None
        try:
            self.adopt_child(pid, pidfd, chan, m["id"], spare, extra)
        finally:
            _z._close_all(extra)

    def fork_spare(self):
        """Forks a child that waits for its invocation on a channel of its
        own; the server keeps the other end only until it hands it over."""
        if self.spare is not None or self.refusal():
            return
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gc.freeze()
        pid = os.fork()
        if pid == 0:
            raise _z.BecomeHost(_child(self, mine, theirs))
        theirs.close()
        self.spare = (pid, os.pidfd_open(pid), mine)

    def adopt_child(self, pid, pidfd, chan, job_id, spare, extra=()):
        self.children[pidfd] = pid
        self.poller.register(pidfd, select.POLLIN)
        theirs = os.pidfd_open(pid)
        try:
            _z._send(self.ctrl, {"op": "forked", "id": job_id, "pid": pid, "spare": spare},
                     [theirs, chan.fileno(), *extra])
        finally:
            os.close(theirs)
            chan.close()


# -- in a child ----------------------------------------------------------


def _child(server, mine, chan):
    """A child: waits for its invocation on chan, then becomes the host
    with the server's generation."""
    try:
        # Until its invocation arrives it dies with its server; a host has
        # no such tie, as a cold host has none.
        _z._libc.prctl(_z._PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != server.pid:
            os._exit(0)
        os.close(mine.detach())
        os.close(server.ctrl.detach())
        os.setsid()
        msg, fds, flags, _ = socket.recv_fds(chan, _z._MAX_PACKET, _z._MAX_FDS, socket.MSG_CMSG_CLOEXEC)
        if not msg or flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            os._exit(0)
        m = json.loads(msg)
        if len(fds) != _z._fork_fds(m):
            os._exit(0)
        chan.detach()  # its number is closed with every other above 4
        job = _z._become_host(server, m, fds)
        _serve_generation(server.host, server.generation, server.binding)
        return job
    except BaseException:  # noqa: BLE001 -- a child never returns to the loop
        try:
            os.write(2, b"zeo provider-warm: preparing the host failed\n")
        finally:
            os._exit(126)


def _serve_generation(host, generation, activated):
    """Makes the host's own ManagedHost.invoke use the generation this
    server activated, instead of activating it again: the host module's
    CandidateCatalogue becomes a subclass whose activate hands out that
    generation, for exactly the binding activated (the launcher compared
    the digests before it sent the invocation; here the parsed bindings
    are compared field by field, which costs a millisecond where hashing
    the binding again costs tens), and refuses any other as the host
    refuses a bad one."""
    base = host.CandidateCatalogue

    class ActivatedCatalogue(base):
        def activate(self, binding, factory):
            if binding != activated:
                raise host.ProtocolError("the binding is not the one this process activated")
            return generation

    ActivatedCatalogue.__name__ = ActivatedCatalogue.__qualname__ = base.__name__
    ActivatedCatalogue.__module__ = base.__module__
    host.CandidateCatalogue = ActivatedCatalogue


def main():
    ctrl = socket.socket(fileno=_z._CTRL_FD)
    server = ProviderServer(ctrl)
    server.phase = "starting"
    try:
        if server.configure():
            server.run()
    except _z.BecomeHost as b:
        return b.job
    return None


if __name__ == "__main__":
    _job = main()
    if _job is None:
        sys.exit(1)
    _z._run_host(*_job)
