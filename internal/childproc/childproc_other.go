//go:build unix && !linux

package childproc

import (
	"errors"
	"os"
	"strconv"

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
func SweepCloexec() error {
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
		if fd, err := strconv.Atoi(n); err == nil && fd >= 3 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
