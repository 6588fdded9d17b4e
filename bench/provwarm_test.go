//go:build linux

package bench

import (
	"context"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// largeInvocation is an invocation of large.cap_00@1.0.0 of the large
// stand-in provider (zeotestlarge: 30 capabilities with large schemas),
// with the recorded echo's attempt and bootstrap ids.
func largeInvocation(b *testing.B, python, modules string) launch.Invocation {
	b.Helper()
	raws, err := testpyhost.LargeManifests(python, modules)
	if err != nil {
		b.Fatal(err)
	}
	ms := make([]manifest.CapabilityManifest, len(raws))
	for i, r := range raws {
		if ms[i], err = manifest.DecodeManifest(r); err != nil {
			b.Fatal(err)
		}
	}
	inv := echoInvocation(b)
	c := &inv.Context
	c.Provider.Factory, c.Provider.Manifests = testpyhost.LargeProvider, ms
	if c.Provider.ManifestDigest, err = manifest.InventoryDigest(ms); err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	p, err := manifest.PrepareRequest(ms[0], args)
	if err != nil {
		b.Fatal(err)
	}
	id := ms[0].ID.String()
	c.Attempt.CapabilityID, c.Attempt.RequestDigest, c.Attempt.ManifestDigest = id, p.RequestDigest, c.Provider.ManifestDigest
	c.AdmittedCapabilities = []string{id}
	if inv.Request, err = launch.EncodeRequest(id, args); err != nil {
		b.Fatal(err)
	}
	return inv
}

// BenchmarkProviderWarm compares, on the large stand-in provider
// (testpyhost's zeotestlarge, run by the stand-in host
// zeo_core.adapters.runtime_host, which validates the admitted
// inventory, imports the provider and activates its generation on every
// call, as upstream's host does), one call and four at a time,
// interleaved in every iteration:
//
//   - cold: Launcher.Invoke;
//   - warm: Zygote.Invoke with the default ZygoteConfig (the host's
//     import closure preloaded; the provider is imported, and its
//     generation activated, in each host);
//   - provwarm: Zygote.Invoke with ZygoteConfig.ProviderWarm (the
//     generation activated once in the server; each host starts from
//     it) and Spare.
//
// It reports the p50 and p90 (ms) from the call to the first frame
// (first-) and to its return (whole-), and the ratios of the warm modes'
// p50s to cold's (first-x-cold, x-cold). Run with -benchtime 5x or so:
// a cold call of this provider takes seconds.
func BenchmarkProviderWarm(b *testing.B) {
	// Uncontained, as BenchmarkWarmLaunch's rows.
	l, python, modules := standInLauncher(b)
	inv := largeInvocation(b, python, modules)
	inv.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()
	files := map[string]canon.Digest{}
	for k, v := range testpyhost.HostFiles() {
		files[k] = canon.Digest(v)
	}
	pw := &launch.ProviderWarm{OrganizationID: inv.Context.Attempt.OrganizationID, ProjectID: inv.Context.Attempt.ProjectID,
		Hosts: []launch.HostVersion{{Name: "stand-in", Files: files}}}
	modes := []warmMode{{"cold", l.Invoke, nil}}
	for _, m := range []struct {
		name string
		cfg  launch.ZygoteConfig
	}{{"warm", launch.ZygoteConfig{}}, {"provwarm", launch.ZygoteConfig{ProviderWarm: pw, Spare: true}}} {
		m.cfg.Provider = inv.Context.Provider
		start := time.Now()
		z, err := l.StartZygote(context.Background(), m.cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { z.Close() })
		if st := z.Stats(); st.ProviderWarm != nil {
			b.Logf("%s server ready in %v: %v", m.name, time.Since(start), st.ProviderWarm.Phases)
		}
		modes = append(modes, warmMode{m.name, z.Invoke, z})
	}
	for _, parallel := range []int{1, 4} {
		b.Run(map[int]string{1: "One", 4: "Four"}[parallel], func(b *testing.B) {
			runWarmModes(b, modes, inv, parallel, false)
		})
	}
}
