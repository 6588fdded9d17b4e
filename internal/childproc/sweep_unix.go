//go:build unix

package childproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

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
