package launch

import (
	"context"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Discover runs one static discovery command of the host (doc/protocol.md,
// “Static discovery”): Config.Args, then args, with b's canonical JSON on
// FD 3, nothing on FD 4 and an empty stdin, once the Verifier has
// accepted b's environment. ctx bounds the run; without a deadline it is
// bounded by DefaultDiscoveryTimeout. It returns what the launcher
// observed of the process: judging its one output line is the caller's,
// and package launch/discovery does it for every command of the protocol
// (describe, doctor, capabilities list, capabilities describe).
//
// Errors are those of starting a host: ErrInvalidContext for a binding
// that cannot be encoded, the Verifier's, and the start failure; the
// Process is then nil. Discover is safe for concurrent use.
func (l *Launcher) Discover(ctx context.Context, b manifest.ProviderBinding, args ...string) (*Process, error) {
	bb, err := canon.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the provider binding: %w", ErrInvalidContext, err)
	}
	if err := l.cfg.Verifier.VerifyEnvironment(ctx, b); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDiscoveryTimeout)
		defer cancel()
	}
	r, err := l.run(ctx, spec{args: args, fd3: bb})
	if err != nil {
		return nil, err
	}
	return r.p, nil
}
