package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// BenchmarkZeohost is the zeohost backend's Execute beside
// supervise.Supervisor.Invoke called directly, on the same Supervisor (the
// backend's), the same bolt ledger and the same simulated host executable
// running example.echo@1.0.0 of testdata/examples/binding.json, a new
// operation per call:
//
//   - Execute: zeohost's BackendInstance.Execute (params checked, one
//     Invoke, the result's artifact read back from the ledger into the
//     Response);
//
//   - Invoke: Supervisor.Invoke of the same call;
//
//   - Paired: one of each in every iteration, their order alternated, with
//     the ratio x-invoke (Execute ÷ Invoke; goal ≤ 1.05);
//
//   - PairedReconnected: the same, each repeating an operation it already
//     completed, so that nothing is launched (a ledger read, and for
//     Execute the artifact read): the backend's own cost, in µs, with no
//     process to hide it.
//
//     cd bench && go test -run '^$' -bench '^BenchmarkZeohost$' -benchtime 200x -count 5
func BenchmarkZeohost(b *testing.B) {
	f := newSuperviseFixture(b)
	l := openBolt(b)
	ctx := context.Background()
	zb, err := zeohost.New(zeohost.Config{
		Supervisor: supervise.Config{Ledger: l, HostPythonVersion: f.binding.PythonVersion, Dispatcher: receiptDispatcher{},
			SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace"},
		Launch: launch.Config{Verifier: environment.Trust{}, AllowRootHost: true, Dir: b.TempDir()},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer zb.Close(ctx)
	sc := ledger.Scope{OrganizationID: "org", ProjectID: "project"}
	inst, err := zb.Start(ctx, capabilityruntime.BackendSpec{
		Type: "bench:zeo-demo", Version: "1.0.0", Entrypoint: filepath.Base(f.hostsim), RootDir: filepath.Dir(f.hostsim),
		Config: map[string]any{zeohost.ConfigBinding: f.binding,
			zeohost.ConfigScope: map[string]any{"organization_id": sc.OrganizationID, "project_id": sc.ProjectID}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close(ctx)
	sup := zb.Supervisor()
	var seq atomic.Int64
	args := map[string]any{"text": "hello"}
	rows := map[string]func(){
		"Execute": func() {
			resp, err := inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{
				zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: args,
				zeohost.ParamOperationID: fmt.Sprint("op-x-", seq.Add(1))}})
			if err != nil || resp.Result[zeohost.ResultData] == nil {
				b.Fatalf("Execute: %v, %v", resp, err)
			}
		},
		"Invoke": func() {
			binding := f.binding
			o, err := sup.Invoke(ctx, supervise.Call{Scope: sc, OperationID: fmt.Sprint("op-i-", seq.Add(1)),
				CapabilityID: "example.echo@1.0.0", Binding: &binding, Arguments: args})
			if err != nil || o.State != launch.StateSucceeded {
				b.Fatalf("Invoke: %v", err)
			}
		},
	}
	// Operations already completed, for the reconnected rows.
	rows["ExecuteDone"] = func() {
		resp, err := inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{
			zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: args, zeohost.ParamOperationID: "op-done-x"}})
		if err != nil || resp.Result[zeohost.ResultData] == nil {
			b.Fatalf("Execute: %v, %v", resp, err)
		}
	}
	rows["InvokeDone"] = func() {
		binding := f.binding
		o, err := sup.Invoke(ctx, supervise.Call{Scope: sc, OperationID: "op-done-i",
			CapabilityID: "example.echo@1.0.0", Binding: &binding, Arguments: args})
		if err != nil || o.State != launch.StateSucceeded {
			b.Fatalf("Invoke: %v", err)
		}
	}
	for _, r := range rows {
		r() // warm: the starter, the provider cache; completes the Done operations
	}
	benchRows(b, rows, "Execute", "Invoke")
	paired := func(name, execute, invoke string) {
		benchPaired(b, name, rows[execute], rows[invoke], "Execute", "Invoke", "x-invoke")
	}
	paired("Paired", "Execute", "Invoke")
	paired("PairedReconnected", "ExecuteDone", "InvokeDone")
}
