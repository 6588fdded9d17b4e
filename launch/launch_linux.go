package launch

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// canAwaitUnreaped: Linux waits for exit with waitid(WNOWAIT), so the group
// can be signalled after the leader exits and before it is reaped.
const canAwaitUnreaped = true

func checkSupported() error { return nil }

// sealedFile returns a memfd holding data at offset 0, sealed against any
// change (shrink, grow, write, further seals), close-on-exec.
func sealedFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	const seals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, os.NewSyscallError("fcntl(F_ADD_SEALS)", err)
	}
	return f, nil
}

// awaitExit blocks until p has exited without reaping it: through its pidfd
// when Go holds one (no pid reuse possible), by pid otherwise (still safe:
// an unreaped child's pid cannot be reused).
func awaitExit(p *os.Process) error {
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

// sweepCloexec marks every descriptor ≥ 3 of this process close-on-exec
// (runc's CloseExecFrom(3)). Go opens everything close-on-exec; this catches
// descriptors opened by cgo or raw syscalls without it. Since Linux 5.11 one
// close_range(CLOSE_RANGE_CLOEXEC) call does it in the kernel, closing
// nothing; older kernels (ENOSYS, or EINVAL for the unknown flag) get the
// same marking by listing /proc/self/fd.
func sweepCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if err != unix.ENOSYS && err != unix.EINVAL && err != unix.EPERM {
		return os.NewSyscallError("close_range", err)
	}
	return sweepCloexecProc()
}

// sweepCloexecProc is sweepCloexec by listing /proc/self/fd: one fcntl per
// descriptor without the flag.
func sweepCloexecProc() error {
	d, err := os.Open("/proc/self/fd")
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

// socketpair returns a connected AF_UNIX stream pair, both ends
// close-on-exec from birth.
func socketpair() ([2]int, error) {
	return unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
}
