package launch

import (
	"os"

	"golang.org/x/sys/unix"
)

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

// setNotDumpable marks the whole process non-dumpable (see
// Config.LeaveDumpable).
func setNotDumpable() error {
	return os.NewSyscallError("prctl(PR_SET_DUMPABLE)", unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0))
}
