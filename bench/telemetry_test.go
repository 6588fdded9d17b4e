package bench

import (
	"context"
	"slices"
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
// providers (off) and with an SDK TracerProvider exporting every span to
// an in-memory exporter, synchronously or (Batched) through the SDK's
// batch span processor, and an SDK MeterProvider with a manual reader
// (on): every span recorded, every measurement aggregated.
//
//	cd bench && go test -run '^$' -bench Telemetry -benchtime 200x

// telemetrySupervisor returns a Supervisor of f's launcher on l, with
// telemetry when exp is set: every span exported to exp synchronously, on
// the goroutine that ends it (sdktrace.WithSyncer), or, when batched, by
// the SDK's batch span processor on a goroutine of its own
// (sdktrace.WithBatcher, its defaults), as a production exporter is
// configured.
func (f *superviseFixture) telemetrySupervisor(b *testing.B, l ledger.Ledger, exp *tracetest.InMemoryExporter, batched bool) *supervise.Supervisor {
	b.Helper()
	cfg := supervise.Config{Ledger: l, Launcher: f.launcher, Provider: f.binding, HostPythonVersion: f.binding.PythonVersion,
		Dispatcher: receiptDispatcher{}, SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace"}
	if exp != nil {
		export := sdktrace.WithSyncer(exp)
		if batched {
			export = sdktrace.WithBatcher(exp)
		}
		tp := sdktrace.NewTracerProvider(export)
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
// the smallest invocation the telemetry is added to), each with the spans
// exported synchronously (the harshest case: the export runs on the
// invocation's goroutines) and, in the rows named Batched, by the SDK's
// batch span processor (the configuration of a production exporter),
// and NullMemory, whose "on" is a second Supervisor without telemetry:
// the ratio two alike Supervisors give, the noise floor of the others:
//
//   - <row>/Paired: one off and one on in every iteration, the order
//     swapped each time (benchPaired): x-off is on's wall time ÷ off's;
//   - <row>/PairedMedian: the same, each call's wall time and this
//     process's CPU (RUSAGE_SELF around the call: the collector
//     included, the hosts not) kept: x-off-p50 and cpu-x-off-p50 are the
//     ratios of on's and off's medians, which a stall of the loaded
//     machine in one call does not move;
//   - <row>/Off, <row>/On: each alone (benchRows), for the bytes and
//     allocations per invocation.
func BenchmarkTelemetry(b *testing.B) {
	f := newSuperviseFixture(b)
	type row struct {
		name    string
		ledger  func(b *testing.B) ledger.Ledger
		call    func() supervise.Call
		batched bool
		null    bool // "on" is a second Supervisor without telemetry
	}
	bolt := func(b *testing.B) ledger.Ledger { return openBolt(b) }
	mem := func(b *testing.B) ledger.Ledger {
		l := memory.New()
		b.Cleanup(func() { l.Close(context.Background()) })
		return l
	}
	var rows []row
	for _, batched := range []bool{false, true} {
		suffix := ""
		if batched {
			suffix = "Batched"
		}
		rows = append(rows, row{name: "Echo" + suffix, ledger: bolt, call: f.echoCall, batched: batched},
			row{name: "TwoEffects" + suffix, ledger: bolt, call: f.effectsCall, batched: batched},
			row{name: "TwoEffectsMemory" + suffix, ledger: mem, call: f.effectsCall, batched: batched})
	}
	// The bench's own noise floor, measured beside the rows above: two
	// Supervisors alike, neither with telemetry, on the memory ledger.
	rows = append(rows, row{name: "NullMemory", ledger: mem, call: f.effectsCall, null: true})
	for _, r := range rows {
		b.Run(r.name, func(b *testing.B) {
			exp := tracetest.NewInMemoryExporter()
			off := f.telemetrySupervisor(b, r.ledger(b), nil, false)
			onExp := exp
			if r.null {
				onExp = nil
			}
			on := f.telemetrySupervisor(b, r.ledger(b), onExp, r.batched)
			runOff := func() { invokeSucceeded(b, off, r.call()) }
			runOn := func() {
				invokeSucceeded(b, on, r.call())
				exp.Reset() // the spans are not kept from one invocation to the next
			}
			benchPaired(b, "Paired", runOn, runOff, "on", "off", "x-off")
			b.Run("PairedMedian", func(b *testing.B) {
				// wall and cpu hold each call's times, [0] on and [1] off.
				var wall, cpu [2][]time.Duration
				run := func(i int, row func()) {
					t0, c0 := time.Now(), processCPU()
					row()
					cpu[i] = append(cpu[i], processCPU()-c0)
					wall[i] = append(wall[i], time.Since(t0))
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
				p50 := func(d []time.Duration) float64 {
					slices.Sort(d)
					return float64(d[len(d)/2].Nanoseconds())
				}
				on, off := p50(wall[0]), p50(wall[1])
				b.ReportMetric(on, "on-p50-ns")
				b.ReportMetric(off, "off-p50-ns")
				b.ReportMetric(on/off, "x-off-p50")
				on, off = p50(cpu[0]), p50(cpu[1])
				b.ReportMetric(on, "on-cpu-p50-ns")
				b.ReportMetric(off, "off-cpu-p50-ns")
				b.ReportMetric(on/off, "cpu-x-off-p50")
			})
			benchRows(b, map[string]func(){"Off": runOff, "On": runOn}, "Off", "On")
		})
	}
}
