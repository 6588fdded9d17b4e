package contain

import (
	"fmt"
	"io/fs"
)

// User is the identity a host runs as (launch.Config.User): a uid and a primary
// gid, with no supplementary groups.
type User struct {
	UID, GID uint32
}

// UserAccessError is launch.New's refusal of a launch.Config whose User could
// not use a path the host needs: execute Interpreter (and read it, when it is
// a "#!" script), or enter Dir, or enter a directory on the way to either.
// launch.New finds it from the paths' permission bits and owners, for User's
// uid and gid with no supplementary groups, as the host will run; a path with
// a POSIX access control list is left to the kernel, since its bits do not
// tell. It is among the errors launch.New's launch.ErrInvalidConfig joins:
// find it with errors.As. Linux only; elsewhere launch.New does not look.
type UserAccessError struct {
	// User is launch.Config.User.
	User User
	// Field is the launch.Config field whose path User cannot use: "Interpreter"
	// or "Dir".
	Field string
	// Path is the path that refuses User: Field's own, a directory above
	// it, or a directory a symbolic link on the way leads through.
	Path string
	// Need is what User lacks on Path: "execute", "read" or "enter" (a
	// directory's search permission).
	Need string
	// Mode is Path's mode; Owner and Group its owner's uid and gid.
	Mode         fs.FileMode
	Owner, Group uint32
}

// Error says who cannot do what to which path, and why (its mode and
// owner), in one line.
func (e *UserAccessError) Error() string {
	return fmt.Sprintf("%s: User %d:%d cannot %s %s (%v, owner %d:%d): give that user the permission, or choose a User who has it",
		e.Field, e.User.UID, e.User.GID, e.Need, e.Path, e.Mode, e.Owner, e.Group)
}
