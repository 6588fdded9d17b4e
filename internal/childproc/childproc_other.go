//go:build unix && !linux

package childproc

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdDir lists this process's open descriptors.
const fdDir = "/dev/fd"

// CanAwaitUnreaped reports whether AwaitExit works here. It does not: x/sys
// has no waitid(WNOWAIT) outside Linux, so a child is reaped by Wait and its
// group can be signalled only while it runs. Best effort: descendants a child
// leaves behind after exiting on its own are not killed (doc/design.md,
// “Platforms”).
const CanAwaitUnreaped = false

// AwaitExit is not available here (CanAwaitUnreaped is false).
func AwaitExit(*os.Process) error { return errors.ErrUnsupported }

// SweepCloexec marks every descriptor ≥ 3 close-on-exec, listing them
// through /dev/fd.
func SweepCloexec() error { return sweepByListing(fdDir) }

// Socketpair returns a connected AF_UNIX stream pair, both ends
// close-on-exec. Where there is no SOCK_CLOEXEC (darwin, the BSDs) the
// flag is set under syscall.ForkLock, as the standard library does, so
// that no concurrent fork inherits the pair.
func Socketpair() ([2]int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	unix.CloseOnExec(fds[0])
	unix.CloseOnExec(fds[1])
	return fds, nil
}
