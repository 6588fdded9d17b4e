package launch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// Permission bits of one class (owner, group or other).
const (
	permExec = 1
	permRead = 4
)

// aclXattr is the extended attribute that holds a POSIX access ACL.
const aclXattr = "system.posix_acl_access"

// shebang starts a script the kernel runs through the interpreter it
// names.
const shebang = "#!"

// checkUserAccess returns a *contain.UserAccessError when u could not execute
// interpreter or enter dir, judged by permission bits (see
// contain.UserAccessError), or nil. A uid 0 passes: root needs no permission bit
// to enter or read, and Interpreter's own execute bits are checked by
// validate for everyone.
func checkUserAccess(u contain.User, interpreter, dir string) error {
	if u.UID == 0 {
		return nil
	}
	if err := reachable(u, "Interpreter", interpreter); err != nil {
		return err
	}
	if err := permits(u, "Interpreter", interpreter, permExec, "execute"); err != nil {
		return err
	}
	if isScript(interpreter) {
		if err := permits(u, "Interpreter", interpreter, permRead, "read"); err != nil {
			return err
		}
	}
	if err := reachable(u, "Dir", dir); err != nil {
		return err
	}
	return permits(u, "Dir", dir, permExec, "enter")
}

// reachable checks that u may enter every directory above path: those of
// path as written, and those of its target with every symbolic link
// resolved.
func reachable(u contain.User, field, path string) error {
	dirs := ancestors(path)
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		dirs = append(dirs, ancestors(real)...)
	}
	for _, d := range dirs {
		if err := permits(u, field, d, permExec, "enter"); err != nil {
			return err
		}
	}
	return nil
}

// ancestors returns the directories above the absolute path, from the
// root down.
func ancestors(path string) []string {
	var out []string
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// permits returns a *contain.UserAccessError when path's permission bits (its
// target's, for a symbolic link) deny u the permission bit, or nil; also
// nil when path cannot be examined (validate reports that) or has an
// access control list.
func permits(u contain.User, field, path string, bit uint32, need string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	perm := uint32(fi.Mode().Perm())
	var granted bool
	switch {
	case st.Uid == u.UID:
		granted = perm>>6&bit != 0
	case st.Gid == u.GID:
		granted = perm>>3&bit != 0
	default:
		granted = perm&bit != 0
	}
	if granted || hasACL(path) {
		return nil
	}
	return &contain.UserAccessError{User: u, Field: field, Path: path, Need: need, Mode: fi.Mode(), Owner: st.Uid, Group: st.Gid}
}

// hasACL reports whether path carries a POSIX access ACL, whose entries
// the permission bits do not show.
func hasACL(path string) bool {
	_, err := syscall.Getxattr(path, aclXattr, nil)
	return err == nil || errors.Is(err, syscall.ERANGE)
}

// isScript reports whether the file at path starts with "#!": the kernel
// then runs the interpreter it names, which must read the file.
func isScript(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [len(shebang)]byte
	n, _ := f.Read(head[:])
	return bytes.Equal(head[:n], []byte(shebang))
}
