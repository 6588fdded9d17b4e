package childproc

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdDir lists this process's open descriptors.
const fdDir = "/proc/self/fd"

// CanAwaitUnreaped reports whether AwaitExit works here. On Linux it does,
// with waitid(WNOWAIT).
const CanAwaitUnreaped = true

// AwaitExit blocks until p, a child of this process that nothing else
// reaps meanwhile, has exited, without reaping it: until p is reaped, its
// pid and process group id stay its own, so its group can still be
// signalled safely.
//
// The wait goes through the runtime's network poller: a pidfd of p becomes
// readable when p exits, and only then is waitid(WNOHANG|WNOWAIT) asked.
// A goroutine parked in the poller holds no thread. One parked for the
// host's whole life in a blocking waitid would, and it would keep the Go
// runtime's monitor thread polling every 20 µs instead of backing off to
// sleep; on a virtual machine, where each of those wake-ups costs tens of
// microseconds, that was most of the Runtime's own CPU per launch
// (BENCHMARKS.md, “supervise”). Where pidfds cannot be polled (Linux
// before 5.3, or a seccomp filter refusing pidfd_open), it falls back to
// the blocking waitid, which observes the same exit.
//
// The pidfd is opened here by pid rather than duplicated from the one Go
// holds: a duplicate shares its file status flags, and O_NONBLOCK on Go's
// pidfd would turn os/exec's own blocking waitid into EAGAIN. Opening by
// pid is safe because an unreaped child's pid cannot be reused.
func AwaitExit(p *os.Process) error { return awaitExit(p.Pid, pollablePidfd) }

// awaitExit is AwaitExit of pid with the pollable pidfd from open; tests
// give it openers that fail, to reach the blocking fallback.
func awaitExit(pid int, open func(pid int) (*os.File, error)) error {
	f, err := open(pid)
	if err == nil {
		defer f.Close()
		if done, err := awaitPolled(f, pid); done {
			return err
		}
	}
	var info unix.Siginfo
	return waitid(pid, &info, unix.WEXITED|unix.WNOWAIT)
}

// pollablePidfd returns a non-blocking pidfd of pid registered with the
// runtime's poller, or an error if pidfds are not available here.
func pollablePidfd(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	// NewFile registers a non-blocking descriptor with the poller.
	return os.NewFile(uintptr(fd), "pidfd"), nil
}

// awaitPolled waits through the poller for f, a pidfd of pid, to report
// pid's exit, and returns true with waitid's answer; it returns false if f
// cannot be polled (the poller refused it), and the caller then waits
// blocking.
func awaitPolled(f *os.File, pid int) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, nil
	}
	var werr error
	err = rc.Read(func(uintptr) bool {
		var info unix.Siginfo
		werr = waitid(pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG)
		// With WNOHANG and no exit yet, Linux writes a zero signal
		// number; an exit is reported as SIGCHLD.
		return werr != nil || info.Signo != 0
	})
	if err != nil {
		return false, nil
	}
	return true, werr
}

// waitid is waitid(P_PID, pid) with options, retried on EINTR.
func waitid(pid int, info *unix.Siginfo, options int) error {
	for {
		err := unix.Waitid(unix.P_PID, pid, info, options, nil)
		if err != unix.EINTR {
			return os.NewSyscallError("waitid", err)
		}
	}
}

// SweepCloexec marks every descriptor ≥ 3 of this process close-on-exec
// (runc's CloseExecFrom(3)). Go opens everything close-on-exec; this catches
// descriptors inherited from this process's parent or opened by cgo or raw
// syscalls without it. Since Linux 5.11 one close_range(CLOSE_RANGE_CLOEXEC)
// call does it in the kernel, closing nothing; older kernels (ENOSYS, or
// EINVAL for the unknown flag) get the same marking by listing
// /proc/self/fd.
func SweepCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL && err != unix.EPERM {
		return os.NewSyscallError("close_range", err)
	}
	return sweepByListing(fdDir)
}

// Socketpair returns a connected AF_UNIX stream pair, both ends
// close-on-exec from birth, so that a child gets one end only when it is
// handed over.
func Socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}
