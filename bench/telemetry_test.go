package bench

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Telemetry's cost: supervise.Supervisor.Invoke one at a time with no
// providers (off) and with an SDK TracerProvider exporting every span
// synchronously to an in-memory exporter and an SDK MeterProvider with a
// manual reader (on): every span recorded, every measurement aggregated.
//
//	cd bench && go test -run '^$' -bench Telemetry -benchtime 200x

// telemetrySupervisor returns a Supervisor of f's launcher on l, with
// telemetry when exp is set.
func (f *superviseFixture) telemetrySupervisor(b *testing.B, l ledger.Ledger, exp *tracetest.InMemoryExporter) *supervise.Supervisor {
	b.Helper()
	cfg := supervise.Config{Ledger: l, Launcher: f.launcher, Provider: f.binding, HostPythonVersion: f.binding.PythonVersion,
		Dispatcher: receiptDispatcher{}, SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace"}
	if exp != nil {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() {
			tp.Shutdown(context.Background())
			mp.Shutdown(context.Background())
		})
		cfg.TracerProvider, cfg.MeterProvider = tp, mp
	}
	s, err := supervise.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// BenchmarkTelemetry compares Invoke with telemetry off and on, for
// example.echo and example.two_effects (19 spans an invocation) on the
// bolt ledger and example.two_effects on the memory ledger (no fsync:
// the smallest invocation the telemetry is added to):
//
//   - <row>/Paired: one off and one on in every iteration, the order
//     swapped each time (benchPaired): x-off is on's wall time ÷ off's;
//   - <row>/PairedCPU: the same, with this process's CPU (RUSAGE_SELF,
//     the collector included, the hosts not) around each call: cpu-x-off
//     is on's ÷ off's, and added-cpu-ns/op their difference;
//   - <row>/Off, <row>/On: each alone (benchRows), for the bytes and
//     allocations per invocation.
func BenchmarkTelemetry(b *testing.B) {
	f := newSuperviseFixture(b)
	rows := []struct {
		name   string
		ledger func(b *testing.B) ledger.Ledger
		call   func() supervise.Call
	}{
		{"Echo", func(b *testing.B) ledger.Ledger { return openBolt(b) }, f.echoCall},
		{"TwoEffects", func(b *testing.B) ledger.Ledger { return openBolt(b) }, f.effectsCall},
		{"TwoEffectsMemory", func(b *testing.B) ledger.Ledger {
			l := memory.New()
			b.Cleanup(func() { l.Close(context.Background()) })
			return l
		}, f.effectsCall},
	}
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			exp := tracetest.NewInMemoryExporter()
			off := f.telemetrySupervisor(b, r.ledger(b), nil)
			on := f.telemetrySupervisor(b, r.ledger(b), exp)
			runOff := func() { invokeSucceeded(b, off, r.call()) }
			runOn := func() {
				invokeSucceeded(b, on, r.call())
				exp.Reset() // the spans are not kept from one invocation to the next
			}
			benchPaired(b, "Paired", runOn, runOff, "on", "off", "x-off")
			b.Run("PairedCPU", func(b *testing.B) {
				var cpu [2]time.Duration
				run := func(i int, row func()) {
					c0 := processCPU()
					row()
					cpu[i] += processCPU() - c0
				}
				odd := false
				for b.Loop() {
					if odd {
						run(1, runOff)
						run(0, runOn)
					} else {
						run(0, runOn)
						run(1, runOff)
					}
					odd = !odd
				}
				b.ReportMetric(float64(cpu[0].Nanoseconds())/float64(b.N), "on-cpu-ns/op")
				b.ReportMetric(float64(cpu[1].Nanoseconds())/float64(b.N), "off-cpu-ns/op")
				b.ReportMetric(float64((cpu[0]-cpu[1]).Nanoseconds())/float64(b.N), "added-cpu-ns/op")
				b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-x-off")
			})
			benchRows(b, map[string]func(){"Off": runOff, "On": runOn}, "Off", "On")
		})
	}
}
