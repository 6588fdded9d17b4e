package supervise

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// BenchmarkTelemetryCalls makes the telemetry calls of one invocation
// with two effects (19 spans: the operation, the attempt, five methods,
// ten ledger writes, two dispatches; and the metrics) without the
// invocation: the instrumentation's own cost, which
// bench/BenchmarkTelemetry measures against a whole Invoke. Off is a nil
// *telemetry, as a Supervisor without providers has; on exports every
// span to memory and aggregates every measurement.
//
//	go test -run '^$' -bench TelemetryCalls ./supervise/
func BenchmarkTelemetryCalls(b *testing.B) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		tp.Shutdown(context.Background())
		mp.Shutdown(context.Background())
	})
	for _, on := range []bool{false, true} {
		name := "off"
		var t *telemetry
		if on {
			name = "on"
			var err error
			if t, err = newTelemetry(tp, mp); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			c := &Call{Scope: ledger.Scope{OrganizationID: "o", ProjectID: "p"}, OperationID: "op", CapabilityID: "cap@1.0.0"}
			o := &Outcome{State: launch.StateSucceeded, AttemptID: "a", Generation: 1}
			for b.Loop() {
				ctx, ic := t.invoke(context.Background(), c, "ctl")
				actx, as := t.attempt(ctx)
				for _, k := range []writeKind{writeAcquireLease, writeLaunchAttempt} {
					if t != nil {
						_, w := t.write(actx, k)
						w.end(nil)
					}
				}
				for i, m := range []ipc.Method{ipc.MethodBootstrap, ipc.MethodAdmit, ipc.MethodEffect, ipc.MethodEffect, ipc.MethodPublish} {
					var eff *ipc.EffectRequest
					if m == ipc.MethodEffect {
						eff = &ipc.EffectRequest{LogicalEffectID: "e", Operation: "x", ConnectionRef: "c"}
					}
					mctx, ms := t.method(actx, ipc.Call{Method: m, Sequence: int64(i)}, eff)
					if t != nil {
						_, w := t.write(mctx, writeAdmit)
						w.end(nil)
					}
					if eff != nil {
						t.debited("cap@1.0.0")
						_, ds := t.dispatch(mctx, &Dispatch{LogicalEffectID: "e"})
						ds.end(nil)
						if t != nil {
							_, w := t.write(mctx, writeConfirmEffect)
							w.end(nil)
						}
						t.effectDecided("cap@1.0.0", &Event{Dispatched: true, Effect: &ledger.Effect{State: ledger.EffectConfirmed}})
					}
					ms.endMethod(ipc.StateAllowed, nil)
				}
				if t != nil {
					_, w := t.write(actx, writeRecordAttempt)
					w.end(nil)
				}
				as.endAttempt(&attempt{o: o}, nil)
				ic.end(o, nil)
				exp.Reset()
			}
		})
	}
}
