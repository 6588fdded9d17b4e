//go:build unix && !linux

package childproc

import (
	"errors"
	"os"
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
