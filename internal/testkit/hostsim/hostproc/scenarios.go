//go:build linux

package hostproc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
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
	groups, _ := os.Getgroups()
	gs := make([]any, 0, len(groups))
	for _, g := range groups {
		gs = append(gs, int64(g))
	}
	return map[string]any{
		"uid":         int64(os.Getuid()),
		"gid":         int64(os.Getgid()),
		"groups":      gs,
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
		if err := spawnSleeper(h.machine, h.marker, false); err != nil {
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

// spawnSleeper starts this executable (with the marker arguments that made
// it the host) as a grandchild holding stdout (the machine descriptor), in
// a new session when escape is set, and records its pid in
// hostsim-grandchild.pid.
func spawnSleeper(machine int, marker []string, escape bool) error {
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
	cmd := exec.Command(self, marker...)
	cmd.Env = []string{EnvScenario + "=" + string(scSleeper)}
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

// crash ends the process at once with SIGKILL.
func crash() {
	unix.Kill(os.Getpid(), unix.SIGKILL)
	hang()
}

// hang blocks until a signal ends the process. (An empty select would
// make the runtime report a deadlock and exit.)
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// hangBeforePublish makes inv's capability, once it has returned, record
// this process's pid in hostsim-paused.pid in the working directory and
// block: its effects are done and confirmed, its result never published.
func hangBeforePublish(inv *hostsim.Invocation) {
	activate := inv.Activate
	inv.Activate = func() error {
		if activate != nil {
			if err := activate(); err != nil {
				return err
			}
		}
		p := inv.Provider
		inv.Provider = func(ctx context.Context, args map[string]any, effects *hostsim.EffectPort) hostsim.Outcome {
			p(ctx, args, effects) // its outcome is never published
			if err := os.WriteFile(PausedPIDFile, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
				return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZEO_HOSTSIM_PAUSE"}
			}
			for { // as hang does: blocked until killed
				time.Sleep(time.Hour)
			}
		}
		return nil
	}
}

// probeParent tries what a host must not be able to do to the Runtime that
// started it (scProbe): read its environment, 4 KiB of its memory and its
// descriptor list through /proc, and send a frame on the socket whose
// SCM_CREDENTIALS name the parent's pid instead of its own. Each result is
// "ok" or the error; environ_has_secret says whether the parent's
// environment held ZEO_CONTROLLER_SECRET.
func probeParent(runtimeFD int) map[string]any {
	ppid := os.Getppid()
	proc := "/proc/" + strconv.Itoa(ppid)
	result := func(err error) string {
		if err == nil {
			return "ok"
		}
		return err.Error()
	}
	env, envErr := os.ReadFile(proc + "/environ")
	_, fdErr := os.ReadDir(proc + "/fd")
	return map[string]any{
		"ppid":               int64(ppid),
		"environ":            result(envErr),
		"environ_has_secret": strings.Contains(string(env), "ZEO_CONTROLLER_SECRET="),
		"mem":                result(readParentMem(proc)),
		"fds":                result(fdErr),
		"forge":              result(forgeCredentials(runtimeFD, ppid)),
	}
}

// readParentMem reads 4 KiB of the process at proc (a /proc/<pid>
// directory) from the start of its first mapping, or from 4 MiB when its
// maps cannot be read.
func readParentMem(proc string) error {
	addr := int64(4 << 20)
	if maps, err := os.ReadFile(proc + "/maps"); err == nil {
		start, _, _ := strings.Cut(string(maps), "-")
		if a, err := strconv.ParseInt(start, 16, 64); err == nil {
			addr = a
		}
	}
	f, err := os.Open(proc + "/mem")
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.ReadAt(make([]byte, 4096), addr)
	return err
}

// forgeCredentials sends a complete frame ({}) on fd with SCM_CREDENTIALS
// that name pid, not this process. The kernel refuses credentials that
// are not the sender's own unless the sender is privileged (root).
func forgeCredentials(fd, pid int) error {
	cred := unix.Ucred{Pid: int32(pid), Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
	return unix.Sendmsg(fd, []byte{0, 0, 0, 2, '{', '}'}, unix.UnixCredentials(&cred), nil, 0)
}
