package bolt

import "fmt"

// lockedBy says who holds the lock of the file at path, for the error of
// an Open that timed out waiting for it. Linux lists flock holders in
// /proc/locks by device and inode, with the pid of the process that took
// the lock (a child that inherited the descriptor holds it too, so the pid
// is a hint, not a proof); without it the sentence names no pid.
func lockedBy(path string, readOnly bool) string {
	pid := ""
	if p, ok := flockHolder(path); ok {
		pid = fmt.Sprintf(" (pid %d, per /proc/locks)", p)
	}
	if readOnly {
		return "the file is held by a running controller or another read-write open" + pid +
			", and a read-only open shares it only with other readers: stop that process to inspect the file, or use ledger/postgres for many readers beside a controller"
	}
	return "another owner holds the file lock" + pid + "; stop that owner or use another file"
}
