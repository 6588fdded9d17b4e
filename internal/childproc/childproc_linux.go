package childproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fdDir lists this process's open descriptors.
const fdDir = "/proc/self/fd"

// CanAwaitUnreaped reports whether AwaitExit works here. On Linux it does,
// with waitid(WNOWAIT).
const CanAwaitUnreaped = true

// AwaitExit blocks until p has exited, without reaping it: through its pidfd
// when Go holds one (no pid reuse possible), by pid otherwise (still safe:
// an unreaped child's pid cannot be reused). Until p is reaped, its pid and
// process group id stay its own.
func AwaitExit(p *os.Process) error {
	var info unix.Siginfo
	var werr error
	herr := p.WithHandle(func(h uintptr) {
		werr = waitid(unix.P_PIDFD, int(h), &info)
	})
	if errors.Is(herr, os.ErrNoHandle) {
		return waitid(unix.P_PID, p.Pid, &info)
	}
	if herr != nil {
		return herr
	}
	return werr
}

func waitid(idType, id int, info *unix.Siginfo) error {
	for {
		err := unix.Waitid(idType, id, info, unix.WEXITED|unix.WNOWAIT, nil)
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
	return sweepByListing("/proc/self/fd")
}

// sweepByListing is SweepCloexec by listing the descriptors in dir: one
// fcntl per descriptor without the flag.
func sweepByListing(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	self := int(d.Fd())
	var errs []error
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 || fd == self {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed meanwhile, or already close-on-exec
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err != nil {
			errs = append(errs, fmt.Errorf("fd %d: %w", fd, err))
		}
	}
	return errors.Join(errs...)
}
