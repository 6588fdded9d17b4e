package telemetry

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// BenchmarkTelemetryCalls makes the telemetry calls of one invocation
// with two effects (19 spans: the operation, the attempt, five methods,
// ten ledger writes, two dispatches; and the metrics) without the
// invocation: the instrumentation's own cost, which
// bench/BenchmarkTelemetry measures against a whole Invoke. Off is a nil
// *telemetry, as a Supervisor without providers has; on exports every
// span to memory and aggregates every measurement. There is no
// ipc.Session here, so every span ends at once, as outside an exchange:
// this is the instrumentation's whole work, wherever an invocation does
// it (a Session's Handler calls end most spans after the reply).
//
//	go test -run '^$' -bench TelemetryCalls ./supervise/internal/telemetry
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
		var t *T
		if on {
			name = "on"
			var err error
			if t, err = New(tp, mp, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			scope := ledger.Scope{OrganizationID: "o", ProjectID: "p"}
			o := &Ended{State: string(launch.StateSucceeded), AttemptID: "a", Generation: 1}
			for b.Loop() {
				ctx, ic := t.Invoke(context.Background(), scope, "op", "cap@1.0.0", "ctl")
				actx, as := t.Attempt(ctx)
				for _, k := range []writeKind{writeAcquireLease, writeLaunchAttempt} {
					if t != nil {
						wctx, w := t.write(actx, k)
						w.end(wctx, nil)
					}
				}
				for i, m := range []ipc.Method{ipc.MethodBootstrap, ipc.MethodAdmit, ipc.MethodEffect, ipc.MethodEffect, ipc.MethodPublish} {
					var eff *ipc.EffectRequest
					if m == ipc.MethodEffect {
						eff = &ipc.EffectRequest{LogicalEffectID: "e", Operation: "x", ConnectionRef: "c"}
					}
					mctx, ms := t.Method(actx, ipc.Call{Method: m, Sequence: int64(i)}, eff)
					if t != nil {
						wctx, w := t.write(mctx, writeAdmit)
						w.end(wctx, nil)
					}
					if eff != nil {
						t.Debited("cap@1.0.0")
						dctx, ds := t.Dispatch(mctx, &port.Dispatch{LogicalEffectID: "e"})
						ds.EndAfterReply(dctx, nil)
						if t != nil {
							wctx, w := t.write(mctx, writeConfirmEffect)
							w.end(wctx, nil)
						}
						t.EffectDecided("cap@1.0.0", string(ledger.EffectConfirmed))
					}
					ms.EndMethod(mctx, ipc.StateAllowed, nil)
				}
				if t != nil {
					wctx, w := t.write(actx, writeRecordAttempt)
					w.end(wctx, nil)
				}
				as.EndAttempt(o.AttemptID, o.Generation, o.State, nil)
				ic.End(o, nil)
				exp.Reset()
			}
		})
	}
}
