package launch

import "context"

// Zygote launches hosts warm (see the Linux documentation). It needs
// pidfds, which macOS lacks: StartZygote returns ErrUnsupported there.
type Zygote struct {
	l         *Launcher
	groupFlag bool
}

// StartZygote returns ErrUnsupported: warm launch needs Linux.
func (l *Launcher) StartZygote(context.Context, ZygoteConfig) (*Zygote, error) {
	return nil, ErrUnsupported
}

// Invoke returns ErrUnsupported.
func (z *Zygote) Invoke(context.Context, Invocation) (*Outcome, error) { return nil, ErrUnsupported }

// Close does nothing.
func (z *Zygote) Close() error { return nil }

// Launcher returns the Launcher the zygote was started from.
func (z *Zygote) Launcher() *Launcher { return z.l }

// Stats returns zeros.
func (z *Zygote) Stats() ZygoteStats { return ZygoteStats{} }

func (z *Zygote) run(ctx context.Context, s spec) (hostRun, error) { return z.l.run(ctx, s) }
