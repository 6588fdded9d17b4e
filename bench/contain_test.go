package bench

import (
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// BenchmarkContainment measures what containment (contain.Config,
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
//     re-executed (contain.Init), whose package inits every launch pays;
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
	hostsim, initBin := containmentTools(b)
	inv := echoInvocation(b)
	inv.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()

	modesFor := func(b *testing.B, cfg launch.Config, warm bool) []launchMode {
		var modes []launchMode
		for _, m := range []struct {
			name string
			c    contain.Config
		}{{"off", contain.Config{Off: contain.AllLayers, Cgroup: contain.Cgroup{Off: true}}}, {"self", contain.Config{}},
			{"init", contain.Config{InitPath: initBin}},
			{"init-nonet", contain.Config{InitPath: initBin, Off: contain.LayerNetwork}}} {
			l := containedLauncher(b, cfg, m.c)
			modes = append(modes, launchMode{name: m.name, baseline: "off", ratio: m.name + "-x-off", inv: inv, invoke: l.Invoke})
			if warm && (m.name == "off" || m.name == "init") {
				z := startEchoZygote(b, l, inv.Context.Provider)
				name, baseline := "warm", "off"
				if m.name == "off" {
					name = "warm-off"
				}
				if name == "warm" {
					baseline = "warm-off"
				}
				modes = append(modes, launchMode{name: name, baseline: baseline, ratio: name + "-x-off", inv: inv, warm: true, invoke: z.Invoke})
			}
		}
		return modes
	}
	b.Run("Hostsim", func(b *testing.B) { runLaunchModes(b, modesFor(b, hostsimLaunch(hostsim), false)) })
	b.Run("Python", func(b *testing.B) { runLaunchModes(b, modesFor(b, pythonLaunch(b), true)) })
}
