//go:build !linux && !darwin

package launch

import (
	"context"
	"syscall"
)

// The launcher needs descriptor inheritance at fixed numbers, process groups
// and AF_UNIX socketpairs: Linux (first class) and macOS (best effort) only
// (doc/design.md, “Platforms”). Elsewhere — Windows first of all — the
// package reports that at compile time, through the undefined name below,
// rather than failing at run time.
var _ = launch_supports_only_linux_and_darwin

// Stubs so that the name above is the only compile error.
func checkSupported() error { return ErrUnsupported }

func (l *Launcher) run(context.Context, spec) (hostRun, error) {
	return hostRun{}, ErrUnsupported
}

func signalGroup(int, syscall.Signal) error { return ErrUnsupported }
