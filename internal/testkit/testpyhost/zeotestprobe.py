"""A probe host: reports, as one JSON line on stdout, what the process
inherited when it started, before anything else ran."""

import ctypes
import json
import os
import signal
import sys
import threading

_before = sorted(sys.modules)


def _fds():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[name] = os.readlink("/proc/self/fd/" + name)
        except OSError:
            pass  # the listing's own descriptor, closed meanwhile
    return out


def _c_environ():
    env = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    out, i = [], 0
    while env[i] is not None:
        out.append(env[i].decode("utf-8", "surrogateescape"))
        i += 1
    return sorted(out)


def _handlers():
    out = {}
    for s in signal.valid_signals():
        try:
            h = signal.getsignal(s)
        except (OSError, ValueError):
            continue
        out[str(int(s))] = h if isinstance(h, int) or h is None else getattr(h, "__name__", repr(h))
    return out


def _pdeathsig():
    sig = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)  # PR_GET_PDEATHSIG
    return sig.value


def _read_parent_environ():
    try:
        with open("/proc/%d/environ" % os.getppid(), "rb") as f:
            f.read()
        return "ok"
    except OSError as e:
        return e.strerror


def main():
    fds = _fds()
    fds = {k: v for k, v in fds.items() if not v.startswith("/proc/")}
    report = {
        "fds": fds,
        "fd_flags": {k: os.get_inheritable(int(k)) for k in fds},
        "env": sorted("%s=%s" % kv for kv in os.environ.items()),
        "c_env": _c_environ(),
        "pid": os.getpid(), "pgid": os.getpgid(0), "sid": os.getsid(0), "ppid": os.getppid(),
        "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
        "parent_environ": _read_parent_environ(),
        "argv": sys.argv, "orig_argv": sys.orig_argv, "path0": sys.path[0] if sys.path else None,
        "cwd": os.getcwd(), "main_file": getattr(sys.modules["__main__"], "__file__", None),
        "main_spec": sys.modules["__main__"].__spec__.name if sys.modules["__main__"].__spec__ else None,
        "modules": _before, "threads": threading.active_count(),
        "tasks": len(os.listdir("/proc/self/task")),
        "handlers": _handlers(),
        "mask": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, ())),
        "dumpable": ctypes.CDLL(None).prctl(3, 0, 0, 0, 0),
        "pdeathsig": _pdeathsig(),
        "stdin": sys.stdin.buffer.read().decode(),
        "stdout_line_buffering": sys.stdout.line_buffering,
        "stdout_encoding": sys.stdout.encoding,
    }
    with os.fdopen(os.dup(3), "rb") as f:
        report["context_len"] = len(f.read())
    sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    code = os.environ.get("ZEO_PROBE_EXIT")
    if code == "raise":
        raise ValueError("the probe fails on purpose")
    if code is not None:
        sys.exit(int(code) if code.isdigit() else code)


if __name__ == "__main__":
    main()
