package launch

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// setNotDumpable does nothing on darwin, which has no PR_SET_DUMPABLE (see
// Config.LeaveDumpable).
func setNotDumpable() error { return nil }
