//go:build unix && !linux

package sockettest

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// socketpair returns a connected AF_UNIX stream pair, both ends
// close-on-exec. Where there is no SOCK_CLOEXEC (darwin, the BSDs) the
// flag is set under syscall.ForkLock, as the standard library does, so
// that no concurrent fork inherits the pair.
func socketpair() ([2]int, error) {
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
