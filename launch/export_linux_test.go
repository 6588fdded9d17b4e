package launch

import "context"

// ZygoteSource is the server program StartZygote writes.
var ZygoteSource = zygoteSource

// StartZygoteFrom is StartZygote with source as the server program, for
// tests whose server must answer wrongly on purpose.
func (l *Launcher) StartZygoteFrom(ctx context.Context, cfg ZygoteConfig, source []byte) (*Zygote, error) {
	return l.startZygote(ctx, cfg, source)
}
