package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// BenchmarkCgroup measures what the cgroup layer (contain.Cgroup,
// process.Cgroup: a cgroup per host, made, started into with clone3,
// killed, awaited empty and removed) adds, from the call to the result,
// in interleaved runs: every iteration runs each mode once, so that load
// drifting on the machine reaches every mode alike. Pairs (without, with
// the layer):
//
//   - Hostsim/contained: the simulated host, every containment layer on;
//   - Hostsim/uncontained: the same, Containment.Off = AllLayers;
//   - Python/cold and Python/warm: the Python test host, cold and through
//     a zygote (each warm child moves itself into its own cgroup);
//   - OneShot: the process backend's JSON protocol (bench/capecho), a
//     process per call.
//
// It reports each mode's p50 in ms and the ratio with ÷ without
// (<pair>-x). It is skipped where this machine has no usable delegated
// cgroup v2. Run with -benchtime 30x or so:
//
//	cd bench && go test -run '^$' -bench Cgroup -benchtime 30x
func BenchmarkCgroup(b *testing.B) {
	probe, err := process.New(process.Config{Cgroup: process.Cgroup{Required: true}})
	if err != nil {
		b.Skipf("no cgroup layer here: %v", err)
	}
	probe.Close(context.Background())
	dir := b.TempDir()
	inv := echoInvocation(b)
	inv.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()
	type mode struct {
		pair string
		with bool
		call func() error
	}
	launchCall := func(invoke func(context.Context, launch.Invocation) (*launch.Outcome, error), warm bool) func() error {
		return func() error {
			in := inv
			in.Handler = allowAll{}
			out, err := invoke(context.Background(), in)
			switch {
			case err != nil:
				return err
			case out.Result.State != launch.StateSucceeded:
				return fmt.Errorf("state %s", out.Result.State)
			case out.Process.Warm != warm:
				return fmt.Errorf("warm %v", out.Process.Warm)
			}
			return nil
		}
	}
	newLauncher := func(b *testing.B, cfg launch.Config, c contain.Config, cg bool) *launch.Launcher {
		cfg.Dir = b.TempDir()
		cfg.Containment = c
		cfg.Containment.Cgroup = contain.Cgroup{Off: !cg, Required: cg}
		l, err := launch.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
	run := func(b *testing.B, modes []mode) {
		times := map[string][]time.Duration{}
		key := func(m mode) string {
			if m.with {
				return m.pair + "-cg"
			}
			return m.pair + "-nocg"
		}
		for _, m := range modes { // once each, untimed: first-use costs
			if err := m.call(); err != nil {
				b.Fatalf("%s: %v", key(m), err)
			}
		}
		for range b.N {
			for _, m := range modes {
				start := time.Now()
				if err := m.call(); err != nil {
					b.Fatalf("%s: %v", key(m), err)
				}
				times[key(m)] = append(times[key(m)], time.Since(start))
			}
		}
		p50 := func(ds []time.Duration) float64 {
			slices.Sort(ds)
			return float64(ds[len(ds)/2].Microseconds()) / 1000
		}
		for _, m := range modes {
			b.ReportMetric(p50(times[key(m)]), key(m)+"-ms")
			if m.with {
				b.ReportMetric(p50(times[key(m)])/p50(times[m.pair+"-nocg"]), m.pair+"-x")
			}
		}
	}

	b.Run("Hostsim", func(b *testing.B) {
		hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
		cfg := launch.Config{Interpreter: hostsim, Verifier: environment.Trust{}, AllowRootHost: true,
			Env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.11.7"}}
		var modes []mode
		for _, p := range []struct {
			name string
			c    contain.Config
		}{{"contained", contain.Config{}}, {"uncontained", contain.Config{Off: contain.AllLayers}}} {
			for _, cg := range []bool{false, true} {
				modes = append(modes, mode{p.name, cg, launchCall(newLauncher(b, cfg, p.c, cg).Invoke, false)})
			}
		}
		run(b, modes)
	})
	b.Run("Python", func(b *testing.B) {
		python := testpyhost.Interpreter(b)
		modules := b.TempDir()
		if err := testpyhost.Install(modules); err != nil {
			b.Fatal(err)
		}
		cfg := launch.Config{Interpreter: python, Args: []string{"-m", "zeotesthost"},
			Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Verifier: environment.Trust{}, AllowRootHost: true}
		var modes []mode
		for _, cg := range []bool{false, true} {
			l := newLauncher(b, cfg, contain.Config{}, cg)
			z, err := l.StartZygote(context.Background(), launch.ZygoteConfig{Provider: inv.Context.Provider,
				Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { z.Close() })
			modes = append(modes, mode{"cold", cg, launchCall(l.Invoke, false)}, mode{"warm", cg, launchCall(z.Invoke, true)})
		}
		run(b, modes)
	})
	b.Run("OneShot", func(b *testing.B) {
		bin := buildTool(b, dir, "capecho", "./capecho", false)
		tmp, err := os.MkdirTemp("", "cgbench")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		params := capParams()
		var modes []mode
		for _, cg := range []bool{false, true} {
			backend, err := process.New(process.Config{TempDir: tmp, Cgroup: process.Cgroup{Off: !cg, Required: cg}})
			if err != nil {
				b.Fatal(err)
			}
			defer backend.Close(context.Background())
			inst, err := backend.Start(context.Background(), capabilityruntime.BackendSpec{Type: "bench:capecho", Version: "1.0.0",
				Protocol: capabilityruntime.ProtocolJSONV1, Entrypoint: bin, RootDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			modes = append(modes, mode{"oneshot", cg, func() error {
				resp, err := inst.Execute(context.Background(), &capabilityruntime.Request{Params: params})
				if err == nil && len(resp.Result) != len(params) {
					err = errors.New("short result")
				}
				return err
			}})
		}
		run(b, modes)
	})
}
