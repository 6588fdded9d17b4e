//go:build linux

package hostproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// The simulated installation: the interpreter version and the installed
// distribution the provider binding must name (doc/protocol.md,
// “Invocation sequence”, step 9). A test may change them through the
// environment it gives the launcher (see the package documentation,
// “Environment”).
func installed() (python, dist, version string) {
	python, dist, version = hostsim.DefaultPythonVersion, hostsim.DefaultDistribution, hostsim.DefaultVersion
	if v := os.Getenv(EnvPythonVersion); v != "" {
		python = v
	}
	if v := os.Getenv(EnvDistribution); v != "" {
		dist = v
	}
	if v := os.Getenv(EnvVersion); v != "" {
		version = v
	}
	return python, dist, version
}

// providers are the scripted capabilities, by capability name: what the
// simulated provider factory registers.
func providerFor(name string) hostsim.Provider {
	switch name {
	case "echo":
		if scenario(os.Getenv(EnvScenario)) == scHostileEcho {
			return hostileEcho
		}
		return hostsim.Echo()
	case "two_effects":
		return hostsim.TwoEffects()
	case "redeliver":
		return hostsim.Redeliver()
	case "fail":
		return func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
			return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZEO_DEMO_DOMAIN_FAILURE"}
		}
	case "cancel":
		return func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
			return hostsim.Outcome{Status: hostsim.OutcomeCancelled, ErrorCode: "ZEO_CAP_CANCELLED"}
		}
	case "nothing":
		return func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
			return hostsim.Outcome{Status: hostsim.OutcomeUnavailable, ErrorCode: "ZEO_DEMO_UNAVAILABLE"}
		}
	case "slow":
		// Waits arguments.millis milliseconds (or until the invocation's
		// context ends), then answers as echo: a call that is in flight for
		// as long as a test needs.
		return func(ctx context.Context, args map[string]any, _ *hostsim.EffectPort) hostsim.Outcome {
			var ms int64
			switch v := args["millis"].(type) {
			case int64:
				ms = v
			case float64:
				ms = int64(v)
			}
			t := time.NewTimer(time.Duration(ms) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return hostsim.Outcome{Status: hostsim.OutcomeCancelled, ErrorCode: "ZEO_CAP_CANCELLED"}
			}
			return hostsim.Outcome{Status: hostsim.OutcomeSuccess, Response: map[string]any{"text": args["text"]}}
		}
	case "crash":
		// Dies by SIGKILL in the middle of the invocation, after bootstrap
		// and before any result: the host lost, as a segfaulting
		// interpreter or the OOM killer would leave it.
		return func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
			crash()
			return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZEO_HOSTSIM_CRASH"}
		}
	case "noisy":
		// Provider output goes to the sink, never to the machine stdout.
		return func(_ context.Context, args map[string]any, _ *hostsim.EffectPort) hostsim.Outcome {
			os.Stdout.WriteString(`{"state":"succeeded","fake":true}` + "\n")
			os.Stderr.WriteString("Traceback (most recent call last): provider noise\n")
			return hostsim.Outcome{Status: hostsim.OutcomeSuccess, Response: map[string]any{"text": args["text"]}}
		}
	}
	return hostsim.Echo()
}

// newInvocation builds the hostsim invocation for a parsed context and
// request, with the activation, normalization, requirements and response
// checks the host performs.
func newInvocation(lc *launchContext, req request) *hostsim.Invocation {
	var entry manifest.CapabilityManifest
	var v manifest.Validator // one schema cache for activation and normalization
	inv := &hostsim.Invocation{
		Binding:                lc.Attempt,
		ProviderManifestDigest: lc.Provider.ManifestDigest,
		AdmittedCapabilities:   lc.AdmittedCapabilities,
		BootstrapID:            lc.BootstrapID,
		LaunchDigest:           lc.launchDigest,
		Deadline:               time.UnixMilli(lc.DeadlineUnixMS),
		RPCTimeout:             time.Duration(*lc.RPCTimeoutMS) * time.Millisecond,
		MaxMessageBytes:        *lc.MaxMessageBytes,
		Budget:                 lc.TotalDispatchBudget,
		CapabilityID:           req.CapabilityID,
		Arguments:              req.Arguments,
	}
	inv.Activate = func() error {
		python, dist, version := installed()
		p := lc.Provider
		if p.PythonVersion != python {
			return fmt.Errorf("interpreter %s, binding names %s", python, p.PythonVersion)
		}
		if p.Distribution != dist || p.Version != version {
			return fmt.Errorf("installed %s %s, binding names %s %s", dist, version, p.Distribution, p.Version)
		}
		if err := v.ValidateBinding(p); err != nil {
			return err
		}
		m, err := manifest.Describe(p.Manifests, req.CapabilityID)
		if err != nil {
			return err
		}
		entry = m
		inv.Provider = providerFor(m.ID.Name)
		return nil
	}
	inv.Normalize = func(args map[string]any) (map[string]any, error) {
		p, err := v.PrepareRequest(entry, args)
		if err != nil {
			return nil, err
		}
		return p.Arguments, nil
	}
	inv.Requirements = func() error { return requirementsMet(entry, lc) }
	inv.ValidateResponse = func(resp map[string]any) error { return v.ValidateResponse(entry, resp) }
	return inv
}

// requirementsMet is the host's requirements check (doc/protocol.md,
// “Requirements check”).
func requirementsMet(m manifest.CapabilityManifest, lc *launchContext) error {
	r := m.Requirements
	subset := func(need, have []string) bool {
		for _, n := range need {
			if !slices.Contains(have, n) {
				return false
			}
		}
		return true
	}
	switch {
	case !subset(r.Services, lc.Services), !subset(r.Services, []string{"runtime.effects"}),
		!subset(r.Credentials, lc.Credentials), !subset(r.Binaries, lc.Binaries),
		!subset(r.Network.Hosts, lc.NetworkHosts), r.Network.Required && !lc.NetworkAllowed,
		r.Filesystem.Read, r.Filesystem.Write:
		return errors.New("requirements not satisfiable")
	}
	return nil
}
