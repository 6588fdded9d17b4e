//go:build unix

// Package childproc holds the process primitives that the launchers of this
// module share: marking inherited descriptors close-on-exec before a child
// starts, so that it gets only the descriptors it is given, and waiting for
// a child's exit without reaping it, so that its process group can still be
// signalled while the group id is certainly its own; and making the
// socketpair a child is handed one end of, close-on-exec in the parent.
package childproc

import (
	"os"
	"strconv"
)

// ChildCloseSlack is how far above the highest descriptor open now
// ChildFDBound reaches, for descriptors other goroutines open before the
// child forks. The kernel gives a new descriptor the lowest free number,
// so those fill the gaps first and pass the highest one only when there
// are none left.
const ChildCloseSlack = 256

// ChildFDBound returns a descriptor number above every descriptor this
// process can hold when a child forks right after the call: the highest
// open now plus ChildCloseSlack. A launcher pads its child's descriptor
// list (os/exec's ExtraFiles) with nil entries up to it, and the child
// then closes each of those numbers itself, after the fork and before the
// exec (a nil entry of os.ProcAttr.Files is closed when the process
// starts): no descriptor opened without close-on-exec, even by another
// goroutine while the child forks, reaches the program. Only a descriptor
// placed past the bound on purpose (dup2 to a high number) or more than
// ChildCloseSlack opened at once without a gap to fill could escape; the
// close-on-exec sweep (SweepCloexec) still covers those that exist before
// it runs.
func ChildFDBound() (int, error) {
	d, err := os.Open(fdDir)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, err
	}
	highest := 2
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil {
			highest = max(highest, fd)
		}
	}
	return highest + 1 + ChildCloseSlack, nil
}
