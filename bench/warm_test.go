//go:build linux

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// firstFrame is an allow-all Runtime that notes when the host's first
// frame (bootstrap) arrived.
type firstFrame struct {
	allowAll
	at time.Time
}

func (f *firstFrame) Bootstrap(ctx context.Context, r ipc.BootstrapRequest) (ipc.Decision, error) {
	f.at = time.Now()
	return f.allowAll.Bootstrap(ctx, r)
}

// BenchmarkWarmLaunch compares cold and warm launches of the Python
// stand-in host (internal/testkit/testpyhost: zeo_core.adapters.runtime_host,
// laid out and importing as upstream's host does — rfc8785, pydantic,
// jsonschema and its own contract models, built at import — and the
// protocol far enough to bootstrap, echo and publish) on the recorded
// echo invocation, one at a time (One) and four at a time (Four),
// interleaved: every iteration runs each mode in turn, so that load
// drifting on the machine reaches every mode alike. The modes:
//
//   - cold: Launcher.Invoke, `python -m zeo_core.adapters.runtime_host`;
//   - warm: Zygote.Invoke with the default ZygoteConfig: each host forked
//     when its invocation arrives from a server that preloaded the
//     host's discovered import closure;
//   - fixed: the same from a server that preloaded the fixed list the
//     default was before (pydantic, pydantic.main, jsonschema), which
//     leaves each child to build the host's contract models;
//   - spare: the default with ZygoteConfig.Spare (a child forked ahead);
//   - pretouch: Spare and PreTouch (the spare copies its writable pages
//     while it waits).
//
// For each mode it reports, in ms, the p50, p90 and p99 of the time from
// the call to the first frame (first-) and the p50 and p90 to the call's
// return (whole-), and the ratios of the warm modes' first-p50 and
// whole-p50 to cold's (first-x-cold, x-cold). Iterations are b.N rounds;
// run with -benchtime 40x or so.
func BenchmarkWarmLaunch(b *testing.B) {
	l, _, _ := standInLauncher(b)
	inv := echoInvocation(b)
	inv.Context.DeadlineUnixMS = time.Now().Add(24 * time.Hour).UnixMilli()
	modes := []warmMode{{"cold", l.Invoke, nil}}
	for _, m := range []struct {
		name            string
		preload         []string
		spare, pretouch bool
	}{{"warm", nil, false, false}, {"fixed", []string{"pydantic", "pydantic.main", "jsonschema"}, false, false},
		{"spare", nil, true, false}, {"pretouch", nil, true, true}} {
		z, err := l.StartZygote(context.Background(), launch.ZygoteConfig{Provider: inv.Context.Provider,
			Preload: m.preload, Spare: m.spare, PreTouch: m.pretouch})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { z.Close() })
		if st := z.Stats(); st.Discovered != (m.preload == nil) {
			b.Fatalf("%s: the server preloaded %q (discovered %v)", m.name, st.Preloaded, st.Discovered)
		}
		modes = append(modes, warmMode{m.name, z.Invoke, z})
	}
	for _, parallel := range []int{1, 4} {
		b.Run(map[int]string{1: "One", 4: "Four"}[parallel], func(b *testing.B) {
			runWarmModes(b, modes, inv, parallel, true)
			if parallel > 1 {
				return
			}
			// What a waiting spare costs: its private (copied) memory, once
			// it is ready; and the server's resident memory.
			time.Sleep(time.Second)
			for _, m := range modes[1:] {
				server := m.z.Stats().ServerPID
				b.ReportMetric(memoryMB(server, "Rss:"), m.name+"-server-rss-MB")
				kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", server, server))
				for _, k := range strings.Fields(string(kids)) {
					if pid, err := strconv.Atoi(k); err == nil {
						b.ReportMetric(memoryMB(pid, "Private_Dirty:"), m.name+"-spare-private-MB")
					}
				}
			}
		})
	}
}

// standInLauncher installs the Python stand-in host and returns an
// uncontained launcher running it (as the warm rows always were;
// BenchmarkContainment measures what containment adds), the interpreter
// and the modules' directory.
func standInLauncher(b *testing.B) (l *launch.Launcher, python, modules string) {
	python = testpyhost.Interpreter(b)
	modules = b.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		b.Fatal(err)
	}
	l, err := launch.New(launch.Config{
		Interpreter: python, Args: []string{"-m", testpyhost.HostModule}, Dir: b.TempDir(),
		Env:      []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"},
		Verifier: environment.Trust{}, AllowRootHost: true,
		Containment: contain.Config{Off: contain.AllLayers},
	})
	if err != nil {
		b.Fatal(err)
	}
	return l, python, modules
}

// warmMode is one way of launching that BenchmarkWarmLaunch and
// BenchmarkProviderWarm time: "cold" (Launcher.Invoke) or a zygote's.
type warmMode struct {
	name   string
	invoke func(context.Context, launch.Invocation) (*launch.Outcome, error)
	z      *launch.Zygote // nil for cold
}

// runWarmModes runs inv b.N rounds, each launching in every mode with
// parallel calls at once, and reports, in ms, the p50 and p90 (and the
// first frame's p99 with firstP99) of the time from the call to the
// first frame (first-) and to the call's return (whole-), and the ratios
// of the warm modes' p50s to cold's (first-x-cold, x-cold).
func runWarmModes(b *testing.B, modes []warmMode, inv launch.Invocation, parallel int, firstP99 bool) {
	once := func(m warmMode) (first, whole time.Duration) {
		in := inv
		h := &firstFrame{}
		in.Handler = h
		start := time.Now()
		out, err := m.invoke(context.Background(), in)
		whole = time.Since(start)
		if err != nil || out.Result.State != launch.StateSucceeded || out.Process.Warm != (m.name != "cold") {
			var stderr []byte
			if out != nil {
				stderr = out.Process.StderrTail
			}
			b.Fatalf("%s: %v (warm %v) %s", m.name, err, out != nil && out.Process.Warm, stderr)
		}
		return h.at.Sub(start), whole
	}
	first := map[string][]time.Duration{}
	whole := map[string][]time.Duration{}
	var mu sync.Mutex
	for range b.N {
		for _, m := range modes {
			var wg sync.WaitGroup
			for range parallel {
				wg.Go(func() {
					f, w := once(m)
					mu.Lock()
					first[m.name] = append(first[m.name], f)
					whole[m.name] = append(whole[m.name], w)
					mu.Unlock()
				})
			}
			wg.Wait()
		}
	}
	ms := func(ds []time.Duration, q float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(q*float64(len(ds)-1))].Microseconds()) / 1e3
	}
	for _, m := range modes {
		b.ReportMetric(ms(first[m.name], 0.5), m.name+"-first-p50-ms")
		b.ReportMetric(ms(first[m.name], 0.9), m.name+"-first-p90-ms")
		if firstP99 {
			b.ReportMetric(ms(first[m.name], 0.99), m.name+"-first-p99-ms")
		}
		b.ReportMetric(ms(whole[m.name], 0.5), m.name+"-whole-p50-ms")
		b.ReportMetric(ms(whole[m.name], 0.9), m.name+"-whole-p90-ms")
		if m.name != "cold" {
			b.ReportMetric(ms(first[m.name], 0.5)/ms(first["cold"], 0.5), fmt.Sprintf("%s-first-x-cold", m.name))
			b.ReportMetric(ms(whole[m.name], 0.5)/ms(whole["cold"], 0.5), fmt.Sprintf("%s-x-cold", m.name))
		}
	}
}

// memoryMB returns the field of /proc/pid/smaps_rollup (kB) in MB, or -1.
func memoryMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return -1
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err == nil {
				return float64(kb) / 1024
			}
		}
	}
	return -1
}
