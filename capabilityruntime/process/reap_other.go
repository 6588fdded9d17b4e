//go:build unix && !linux

package process

// awaitExit cannot observe an exit without reaping here; the caller reaps
// and does not kill the group's stragglers.
func awaitExit(int) bool { return false }

// sweepCloexec marks every descriptor from 3 up close-on-exec.
func sweepCloexec() error { return sweepCloexecSlow() }
