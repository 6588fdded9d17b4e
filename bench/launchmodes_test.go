package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// launchMode is one way of launching the echo invocation that the
// containment benchmarks (BenchmarkContainment, BenchmarkContainmentEgress)
// time side by side.
type launchMode struct {
	name string
	// baseline is the mode whose p50 this one's is divided by, reported
	// as the metric ratio; a mode that is its own baseline has no ratio.
	baseline, ratio string
	inv             launch.Invocation
	// warm is whether the launch must have been a warm one.
	warm   bool
	invoke func(context.Context, launch.Invocation) (*launch.Outcome, error)
}

// runLaunchModes launches once in every mode per iteration, so that load
// drifting on the machine reaches every mode alike, and reports each
// mode's p50 in ms ("<name>-ms") and its ratio to its baseline.
func runLaunchModes(b *testing.B, modes []launchMode) {
	whole := map[string][]time.Duration{}
	for range b.N {
		for _, m := range modes {
			in := m.inv
			in.Handler = allowAll{}
			start := time.Now()
			out, err := m.invoke(context.Background(), in)
			d := time.Since(start)
			if err != nil || out.Result.State != launch.StateSucceeded {
				b.Fatalf("%s: %v", m.name, err)
			}
			if out.Process.Warm != m.warm {
				b.Fatalf("%s: warm %v", m.name, out.Process.Warm)
			}
			whole[m.name] = append(whole[m.name], d)
		}
	}
	p50 := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds()) / 1000
	}
	for _, m := range modes {
		v := p50(whole[m.name])
		b.ReportMetric(v, m.name+"-ms")
		if m.name != m.baseline {
			b.ReportMetric(v/p50(whole[m.baseline]), m.ratio)
		}
	}
}

// ratioTo is the ratio metric's usual name, "<name>-x-<baseline>".
func ratioTo(name, baseline string) string { return fmt.Sprintf("%s-x-%s", name, baseline) }

// containmentTools builds the simulated host and cmd/zeo-launch-init
// into a temporary directory and returns their paths.
func containmentTools(b *testing.B) (hostsim, initBin string) {
	dir := b.TempDir()
	return buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true),
		buildTool(b, dir, "zeo-launch-init", "./cmd/zeo-launch-init", true)
}

// containedLauncher is a launcher of cfg with containment c, in a
// directory of its own.
func containedLauncher(b *testing.B, cfg launch.Config, c contain.Config) *launch.Launcher {
	cfg.Dir = b.TempDir()
	cfg.Containment = c
	l, err := launch.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// hostsimLaunch is the launch.Config of the simulated host built at
// hostsim, uncontained until the caller sets Containment.
func hostsimLaunch(hostsim string) launch.Config {
	return launch.Config{Interpreter: hostsim, Verifier: environment.Trust{}, AllowRootHost: true,
		Env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.11.7"}}
}

// pythonLaunch is the launch.Config of the Python test host, installed
// into a temporary directory; it skips b without python3 and pydantic.
func pythonLaunch(b *testing.B) launch.Config {
	python := testpyhost.Interpreter(b)
	modules := b.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		b.Fatal(err)
	}
	return launch.Config{Interpreter: python, Args: []string{"-m", "zeotesthost"},
		Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Verifier: environment.Trust{}, AllowRootHost: true}
}

// startEchoZygote starts a zygote of l for provider with what the echo
// invocation imports preloaded, closed when b ends.
func startEchoZygote(b *testing.B, l *launch.Launcher, provider manifest.ProviderBinding) *launch.Zygote {
	z, err := l.StartZygote(context.Background(), launch.ZygoteConfig{Provider: provider,
		Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { z.Close() })
	return z
}
