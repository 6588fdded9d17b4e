package launch

import "context"

// ProvwarmSource is the provider-warm server program StartZygote writes.
var ProvwarmSource = provwarmSource

// StartProviderWarmFrom is StartZygote with source as the provider-warm
// server program, for tests whose server must answer wrongly on purpose.
func (l *Launcher) StartProviderWarmFrom(ctx context.Context, cfg ZygoteConfig, source []byte) (*Zygote, error) {
	return l.startZygoteWith(ctx, cfg, zygoteSource, source)
}
