package agent

import (
	"context"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Discover is the catalogue's discovery port over a launcher: the host's
// own static `describe` of the binding, whose manifest digest admission
// compares with the binding's (package catalogue cannot import launch).
func Discover(ln *launch.Launcher) catalogue.DiscoverFunc {
	return func(ctx context.Context, b manifest.ProviderBinding) (canon.Digest, error) {
		d, err := discovery.Describe(ctx, ln, b)
		return d.ManifestDigest, err
	}
}
