package process

import "golang.org/x/sys/unix"

// awaitExit blocks until pid has exited, without reaping it, and reports
// whether it could tell (false if waitid is refused, and the caller then
// reaps without killing stragglers).
func awaitExit(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil
	}
}

// sweepCloexec marks every descriptor from 3 up close-on-exec, in one system
// call where the kernel has close_range (5.11 and later).
func sweepCloexec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == unix.ENOSYS || err == unix.EINVAL || err == unix.EPERM {
		return sweepCloexecSlow()
	}
	return err
}
