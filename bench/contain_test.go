package bench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
)

// BenchmarkContainment measures what containment (launch.Containment,
// every layer on) adds to a launch, from the call to the result, in
// interleaved runs: every iteration launches once in each mode, so that
// load drifting on the machine reaches every mode alike. Hosts: the
// simulated host (Go, static; Hostsim) and the Python test host
// (internal/testkit/testpyhost; Python, skipped without python3 and pydantic).
// Modes:
//
//   - off: Containment{Off: AllLayers}, without the cgroup layer either
//     (Cgroup.Off): a launch as before containment existed;
//   - self: the default (the cgroup layer included where this machine
//     has one, see BenchmarkCgroup), the host started as this test binary
//     re-executed (launch.Init), whose package inits every launch pays;
//   - init: Containment.InitPath set to cmd/zeo-launch-init;
//   - init-nonet: the same without the network layer (what the empty
//     network namespace costs);
//   - warm-off, warm (Python only): Zygote.Invoke without and with
//     containment (the server contained, a nested Landlock layer per
//     child).
//
// It reports each mode's p50 in ms and its ratio to off (x-off; warm to
// warm-off). Run with -benchtime 30x or so:
//
//	cd bench && go test -run '^$' -bench Containment -benchtime 30x
func BenchmarkContainment(b *testing.B) {
	dir := b.TempDir()
	hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
	initBin := buildTool(b, dir, "zeo-launch-init", "./cmd/zeo-launch-init", true)
	inv := echoInvocation(b)
	inv.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()

	type mode struct {
		name   string
		invoke func(context.Context, launch.Invocation) (*launch.Outcome, error)
	}
	modesFor := func(b *testing.B, cfg launch.Config, warm bool) []mode {
		var modes []mode
		for _, m := range []struct {
			name string
			c    launch.Containment
		}{{"off", launch.Containment{Off: launch.AllLayers, Cgroup: launch.Cgroup{Off: true}}}, {"self", launch.Containment{}},
			{"init", launch.Containment{InitPath: initBin}},
			{"init-nonet", launch.Containment{InitPath: initBin, Off: launch.LayerNetwork}}} {
			c := cfg
			c.Dir = b.TempDir()
			c.Containment = m.c
			l, err := launch.New(c)
			if err != nil {
				b.Fatal(err)
			}
			modes = append(modes, mode{m.name, l.Invoke})
			if warm && (m.name == "off" || m.name == "init") {
				z, err := l.StartZygote(context.Background(), launch.ZygoteConfig{Provider: inv.Context.Provider,
					Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { z.Close() })
				name := "warm"
				if m.name == "off" {
					name = "warm-off"
				}
				modes = append(modes, mode{name, z.Invoke})
			}
		}
		return modes
	}
	run := func(b *testing.B, modes []mode) {
		whole := map[string][]time.Duration{}
		for range b.N {
			for _, m := range modes {
				in := inv
				in.Handler = allowAll{}
				start := time.Now()
				out, err := m.invoke(context.Background(), in)
				d := time.Since(start)
				if err != nil || out.Result.State != launch.StateSucceeded {
					b.Fatalf("%s: %v", m.name, err)
				}
				if want := m.name == "warm" || m.name == "warm-off"; out.Process.Warm != want {
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
			base := "off"
			if m.name == "warm" {
				base = "warm-off"
			}
			if m.name != base {
				b.ReportMetric(v/p50(whole[base]), fmt.Sprintf("%s-x-off", m.name))
			}
		}
	}
	b.Run("Hostsim", func(b *testing.B) {
		run(b, modesFor(b, launch.Config{Interpreter: hostsim, Verifier: launch.TrustEnvironment{}, AllowRootHost: true,
			Env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.11.7"}}, false))
	})
	b.Run("Python", func(b *testing.B) {
		python := testpyhost.Interpreter(b)
		modules := b.TempDir()
		if err := testpyhost.Install(modules); err != nil {
			b.Fatal(err)
		}
		run(b, modesFor(b, launch.Config{Interpreter: python, Args: []string{"-m", "zeotesthost"},
			Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Verifier: launch.TrustEnvironment{}, AllowRootHost: true}, true))
	})
}
