package bench

import (
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
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
//     uncontained zygote, with a contained one (which forks the
//     invocation allowed the network warm, with its own egress listener
//     bound by the server and served by the launcher's proxy), and with a
//     contained one and network_allowed false.
//
// It reports each mode's p50 in ms and its ratio to off (the warm modes:
// to warm-off):
//
//	cd bench && go test -run '^$' -bench ContainmentEgress -benchtime 30x
func BenchmarkContainmentEgress(b *testing.B) {
	hostsim, initBin := containmentTools(b)
	base := echoInvocation(b)
	base.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()
	network := base
	network.Context.NetworkAllowed = true
	network.Context.NetworkHosts = []string{"api.example.com"}

	modesFor := func(b *testing.B, cfg launch.Config, warm bool) []launchMode {
		var modes []launchMode
		for _, m := range []struct {
			name string
			c    contain.Config
			inv  launch.Invocation
		}{{"off", contain.Config{Off: contain.AllLayers}, network},
			{"egress", contain.Config{InitPath: initBin}, network},
			{"netoff", contain.Config{InitPath: initBin, Off: contain.LayerNetwork}, network},
			{"nonet", contain.Config{InitPath: initBin}, base}} {
			l := containedLauncher(b, cfg, m.c)
			modes = append(modes, launchMode{name: m.name, baseline: "off", ratio: ratioTo(m.name, "off"), inv: m.inv, invoke: l.Invoke})
			if !warm || (m.name != "off" && m.name != "egress") {
				continue
			}
			z := startEchoZygote(b, l, base.Context.Provider)
			if m.name == "off" {
				modes = append(modes, launchMode{name: "warm-off", baseline: "warm-off", inv: network, warm: true, invoke: z.Invoke})
			} else {
				modes = append(modes, launchMode{name: "warm", baseline: "warm-off", ratio: ratioTo("warm", "warm-off"), inv: network, warm: true, invoke: z.Invoke},
					launchMode{name: "warm-nonet", baseline: "warm-off", ratio: ratioTo("warm-nonet", "warm-off"), inv: base, warm: true, invoke: z.Invoke})
			}
		}
		return modes
	}
	b.Run("Hostsim", func(b *testing.B) { runLaunchModes(b, modesFor(b, hostsimLaunch(hostsim), false)) })
	b.Run("Python", func(b *testing.B) { runLaunchModes(b, modesFor(b, pythonLaunch(b), true)) })
}
