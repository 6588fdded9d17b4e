package launch

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// canAwaitUnreaped: darwin has no waitid(WNOWAIT) in x/sys, so the leader is
// reaped by Wait and the group is signalled only at the deadline, while the
// leader is still unreaped. Best effort: descendants a host leaves behind
// after exiting on its own are not killed (doc/design.md, “Platforms”).
const canAwaitUnreaped = false

func checkSupported() error { return nil }

// sealedFile returns an unlinked temporary file holding data at offset 0.
// darwin has no memfd or seals; the file is private to this process and
// the child once unlinked.
func sealedFile(name string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp("", name+"-*")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// awaitExit is not available on darwin (canAwaitUnreaped is false).
func awaitExit(*os.Process) error { return ErrUnsupported }

// sweepCloexec marks every descriptor ≥ 3 close-on-exec, listing them
// through /dev/fd.
func sweepCloexec() error {
	d, err := os.Open("/dev/fd")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		var fd int
		for _, c := range n {
			fd = fd*10 + int(c-'0')
		}
		if fd >= 3 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

// socketpair returns a connected AF_UNIX stream pair, both ends
// close-on-exec. darwin has no SOCK_CLOEXEC, so the flag is set under
// syscall.ForkLock, as the standard library does, so that no concurrent
// fork inherits the pair.
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
