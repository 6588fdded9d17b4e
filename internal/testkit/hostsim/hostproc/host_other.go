//go:build !linux

package hostproc

// Main is the simulated host's program. The simulated host reads /proc and
// Linux socket options; elsewhere it does nothing and returns
// protocol_error's exit status.
func Main(args []string) int { return 8 }
