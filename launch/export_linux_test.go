package launch

import "context"

// ZygoteSource is the server program StartZygote writes.
var ZygoteSource = zygoteSource

// StartZygoteFrom is StartZygote with source as the server program, for
// tests whose server must answer wrongly on purpose.
func (l *Launcher) StartZygoteFrom(ctx context.Context, cfg ZygoteConfig, source []byte) (*Zygote, error) {
	return l.startZygote(ctx, cfg, source)
}

// ServerLost reports whether the zygote knows its current server is lost
// (false when it has none): what a test that kills the server waits for
// before it expects the next invocation to start a fresh one.
func (z *Zygote) ServerLost() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.cur != nil && z.cur.isLost()
}
