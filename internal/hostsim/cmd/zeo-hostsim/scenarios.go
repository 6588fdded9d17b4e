//go:build linux

package main

import (
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// scenario is a misbehaviour selected by ZEO_HOSTSIM_SCENARIO. The empty
// scenario is a well-behaved host.
type scenario string

// The scenarios. Each exists to exercise one duty of the launcher.
const (
	// scReport writes, instead of a HostResult, a JSON report of what the
	// process inherited: descriptors at startup (number → readlink
	// target), environment, pid, process group, session, and the sizes of
	// the context and stdin. No IPC.
	scReport scenario = "report"
	// scHang blocks before any IPC; SIGTERM ends it.
	scHang scenario = "hang"
	// scHangIgnoreTerm blocks before any IPC and ignores SIGTERM.
	scHangIgnoreTerm scenario = "hang-ignore-term"
	// scGrandchild starts a grandchild in its process group that holds
	// stdout and ignores SIGTERM, writes its pid to hostsim-grandchild.pid
	// in the working directory, then blocks ignoring SIGTERM.
	scGrandchild scenario = "grandchild"
	// scGrandchildEscape runs normally, then starts a grandchild in a new
	// session (outside the group) that holds stdout, writes its pid file,
	// and exits.
	scGrandchildEscape scenario = "grandchild-escape"
	// scGarbage writes "not JSON" and exits 0, before any IPC.
	scGarbage scenario = "garbage"
	// scTwoLines writes its result line twice.
	scTwoLines scenario = "two-lines"
	// scBigStdout writes its result line and then 1 MiB of 'x'.
	scBigStdout scenario = "big-stdout"
	// scWrongExit writes its result and exits with a code that disagrees.
	scWrongExit scenario = "wrong-exit"
	// scClaimSuccess runs normally and then, whatever happened, writes a
	// well-formed "succeeded" result for the attempt and exits 0: a host
	// that lies about an outcome the Runtime never allowed.
	scClaimSuccess scenario = "claim-success"
	// scCrashMidFrame sends half a bootstrap frame and SIGKILLs itself.
	scCrashMidFrame scenario = "crash-mid-frame"
	// scExit1 exits 1 without output, as a crashing interpreter would.
	scExit1 scenario = "exit-1"
	// scLie answers discovery with a well-formed but wrong document.
	scLie scenario = "lie"
	// scSleeper is the grandchild role: it ignores SIGTERM and sleeps.
	scSleeper scenario = "sleeper"
)

// listFDs returns this process's open descriptors and their targets,
// leaving out the one used to list them; a target is prefixed "cloexec "
// when the descriptor is close-on-exec, so not inherited.
func listFDs() map[string]string {
	out := map[string]string{}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		out["error"] = err.Error()
		return out
	}
	names, _ := d.Readdirnames(-1)
	self := strconv.Itoa(int(d.Fd()))
	d.Close()
	for _, n := range names {
		if n == self {
			continue
		}
		t, err := os.Readlink("/proc/self/fd/" + n)
		if err != nil {
			t = "?"
		}
		// execve closes every close-on-exec descriptor, so those present
		// without the flag were inherited; the Go runtime opens its own
		// (cgroup files, epoll) close-on-exec before main runs.
		fd, _ := strconv.Atoi(n)
		if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil && flags&unix.FD_CLOEXEC != 0 {
			t = "cloexec " + t
		}
		out[n] = t
	}
	return out
}

// report is what scReport writes.
func (h *host) report(ctxBytes, stdin []byte, runtimeFD int) map[string]any {
	pid := os.Getpid()
	pgid, _ := unix.Getpgid(pid)
	sid, _ := unix.Getsid(pid)
	env := os.Environ()
	if env == nil {
		env = []string{}
	}
	return map[string]any{
		"fds":         h.startFDs,
		"env":         env,
		"pid":         int64(pid),
		"pgid":        int64(pgid),
		"sid":         int64(sid),
		"context_len": int64(len(ctxBytes)),
		"stdin_len":   int64(len(stdin)),
		"socket_ok":   checkSocket(runtimeFD) == nil,
	}
}

// beforeIPC runs the scenarios that act after the inputs are read and the
// output is silenced, before the invocation. done reports that the process
// should exit with code.
func (h *host) beforeIPC(conn net.Conn) (code int, done bool) {
	switch h.sc {
	case scHang:
		hang()
	case scHangIgnoreTerm:
		signal.Ignore(syscall.SIGTERM)
		hang()
	case scGrandchild:
		signal.Ignore(syscall.SIGTERM)
		if err := spawnSleeper(h.machine, false); err != nil {
			return 1, true
		}
		hang()
	case scGarbage:
		h.write([]byte("not JSON\n"))
		return 0, true
	case scExit1:
		return 1, true
	case scCrashMidFrame:
		// A header announcing 100 bytes, then 10 of them.
		conn.Write([]byte{0, 0, 0, 100})
		conn.Write([]byte(`{"binding"`))
		unix.Kill(os.Getpid(), unix.SIGKILL)
		hang()
	}
	return 0, false
}

// spawnSleeper starts this executable as a grandchild holding stdout (the
// machine descriptor), in a new session when escape is set, and records its
// pid in hostsim-grandchild.pid.
func spawnSleeper(machine int, escape bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	d, err := unix.FcntlInt(uintptr(machine), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(d), "machine")
	defer out.Close()
	cmd := exec.Command(self)
	cmd.Env = []string{"ZEO_HOSTSIM_SCENARIO=" + string(scSleeper)}
	cmd.Stdout = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: escape}
	if err := cmd.Start(); err != nil {
		return err
	}
	return os.WriteFile("hostsim-grandchild.pid", []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}

// sleeper is the grandchild: it outlives SIGTERM and sleeps until killed.
func sleeper() {
	signal.Ignore(syscall.SIGTERM)
	hang()
}

// socketConn wraps the runtime descriptor as a net.Conn through a
// close-on-exec dup, and marks the original close-on-exec so no grandchild
// inherits the channel.
func socketConn(fd int) (net.Conn, error) {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(d), "runtime")
	defer f.Close()
	return net.FileConn(f)
}

// hang blocks until a signal ends the process. (An empty select would
// make the runtime report a deadlock and exit.)
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}
