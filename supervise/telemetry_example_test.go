package supervise_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// ExampleConfig_telemetry gives a Supervisor an OpenTelemetry
// TracerProvider and MeterProvider: here the SDK's, recording in memory;
// a controller passes the ones its process exports with (OTLP, say). The
// Supervisor never touches OpenTelemetry's global providers, and without
// these two fields it reports nothing.
func ExampleConfig_telemetry() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tracers := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tracers.Shutdown(ctx)
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(ctx)

	lc, err := supervisetest.LaunchConfig(os.TempDir(), supervisetest.WellBehaved)
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := launch.New(lc)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := supervise.New(supervise.Config{
		Ledger: memory.New(), Launcher: ln, Provider: supervisetest.Binding(), Dispatcher: receipts{},
		SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "/workspace", HostPythonVersion: supervisetest.PythonVersion,
		TracerProvider: tracers, MeterProvider: meters,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)
	if _, err := s.Invoke(ctx, supervise.Call{
		Scope:       ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"},
		OperationID: "operation-1", CapabilityID: supervisetest.TwoEffects,
		Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute),
	}); err != nil {
		fmt.Println(err)
		return
	}

	count := map[string]int{}
	for _, sp := range spans.GetSpans() {
		count[sp.Name]++
	}
	for _, name := range slices.Sorted(maps.Keys(count)) {
		fmt.Println(name, count[name])
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "zeo.runtime.effects" {
			fmt.Println(m.Name, sum.DataPoints[0].Value, m.Unit)
		}
	}
	// Output:
	// zeo.attempt 1
	// zeo.dispatch 2
	// zeo.invoke 1
	// zeo.ipc.bootstrap 1
	// zeo.ipc.effect.request 2
	// zeo.ipc.invoke.admit 1
	// zeo.ipc.result.publish 1
	// zeo.ledger.accept_result 1
	// zeo.ledger.acquire_lease 1
	// zeo.ledger.admit 1
	// zeo.ledger.begin_effect 2
	// zeo.ledger.confirm_effect 2
	// zeo.ledger.launch_attempt 1
	// zeo.ledger.record_attempt 1
	// zeo.ledger.redeem_bootstrap 1
	// zeo.runtime.effects 2 {effect}
}
