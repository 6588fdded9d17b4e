package launch

import (
	"context"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// EnvironmentVerifier checks, before every launch, that the provider
// environment the launcher is about to execute is the one the binding's
// environment_digest names. The host never checks it: a string in a context
// document cannot measure an environment (doc/protocol.md,
// “Launcher duties”, duty 1).
//
// VerifyEnvironment returns nil when the environment matches, an error
// wrapping ErrEnvironmentMismatch when it does not, and any other error when
// it could not tell; every non-nil error refuses the launch. Implementations
// must be safe for concurrent use.
type EnvironmentVerifier interface {
	VerifyEnvironment(ctx context.Context, p manifest.ProviderBinding) error
}
