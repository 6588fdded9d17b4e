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

// BenchmarkContainmentEgress measures what containment costs a launch
// allowed the network with network_hosts set (its own network namespace,
// the loopback brought up, the egress proxy started and stopped), from
// the call to the result, interleaved as BenchmarkContainment is. The
// echo invocation carries network_allowed true and network_hosts
// ["api.example.com"] in every mode except nonet. Modes:
//
//   - off: Containment{Off: AllLayers};
//   - egress: every layer on, cmd/zeo-launch-init as InitPath;
//   - netoff: the same with the network layer off (what such a launch
//     cost before the egress layer: no namespace, the whole network);
//   - nonet: every layer on, network_allowed false (the empty namespace);
//   - warm-off, warm, warm-nonet (Python only): Zygote.Invoke with an
//     uncontained zygote, with a contained one (which launches an
//     invocation allowed the network cold), and with a contained one and
//     network_allowed false (forked warm).
//
// It reports each mode's p50 in ms and its ratio to off (the warm modes:
// to warm-off):
//
//	cd bench && go test -run '^$' -bench ContainmentEgress -benchtime 30x
func BenchmarkContainmentEgress(b *testing.B) {
	dir := b.TempDir()
	hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
	initBin := buildTool(b, dir, "zeo-launch-init", "./cmd/zeo-launch-init", true)
	base := echoInvocation(b)
	base.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()
	network := base
	network.Context.NetworkAllowed = true
	network.Context.NetworkHosts = []string{"api.example.com"}

	type mode struct {
		name, baseline string
		inv            launch.Invocation
		warm           bool
		invoke         func(context.Context, launch.Invocation) (*launch.Outcome, error)
	}
	modesFor := func(b *testing.B, cfg launch.Config, warm bool) []mode {
		var modes []mode
		for _, m := range []struct {
			name string
			c    launch.Containment
			inv  launch.Invocation
		}{{"off", launch.Containment{Off: launch.AllLayers}, network},
			{"egress", launch.Containment{InitPath: initBin}, network},
			{"netoff", launch.Containment{InitPath: initBin, Off: launch.LayerNetwork}, network},
			{"nonet", launch.Containment{InitPath: initBin}, base}} {
			c := cfg
			c.Dir = b.TempDir()
			c.Containment = m.c
			l, err := launch.New(c)
			if err != nil {
				b.Fatal(err)
			}
			modes = append(modes, mode{name: m.name, baseline: "off", inv: m.inv, invoke: l.Invoke})
			if !warm || (m.name != "off" && m.name != "egress") {
				continue
			}
			z, err := l.StartZygote(context.Background(), launch.ZygoteConfig{Provider: base.Context.Provider,
				Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { z.Close() })
			if m.name == "off" {
				modes = append(modes, mode{name: "warm-off", baseline: "warm-off", inv: network, warm: true, invoke: z.Invoke})
			} else {
				modes = append(modes, mode{name: "warm", baseline: "warm-off", inv: network, invoke: z.Invoke},
					mode{name: "warm-nonet", baseline: "warm-off", inv: base, warm: true, invoke: z.Invoke})
			}
		}
		return modes
	}
	run := func(b *testing.B, modes []mode) {
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
				b.ReportMetric(v/p50(whole[m.baseline]), fmt.Sprintf("%s-x-%s", m.name, m.baseline))
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
