package zeohost_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// A controller registers the zeohost backend under its kind and runs a ZEO
// provider through the registry. The ledger and the policy are the
// backend's Go config; the spec names only the binding, the interpreter
// and the scope. Here the simulated host (a test double standing in for a
// provider environment's python) runs the demo binding on the memory
// ledger; a second Execute with the same operation id is answered from the
// ledger without launching.
func ExampleBackend_Start() {
	ctx := context.Background()
	// The simulated host is this test binary re-executed (its TestMain
	// calls supervisetest.RunHost): the "interpreter" is the binary, and
	// the launch template keeps the marker argument that selects the host.
	lc, err := supervisetest.LaunchConfig(os.TempDir(), supervisetest.WellBehaved)
	if err != nil {
		fmt.Println(err)
		return
	}
	interpreter := lc.Interpreter
	lc.Interpreter = "" // each BackendSpec names its own
	b, err := zeohost.New(zeohost.Config{
		Supervisor: supervise.Config{Ledger: memory.New(), HostPythonVersion: supervisetest.PythonVersion,
			SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "/workspace"},
		Launch: lc,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var r capabilityruntime.Registry
	if err := r.Register(b.BackendName(), b); err != nil {
		fmt.Println(err)
		return
	}
	defer r.CloseBackends(ctx)

	inst, err := r.Start(ctx, zeohost.Kind, capabilityruntime.BackendSpec{
		Type: "acme:demo", Version: "1.0.0",
		Entrypoint: filepath.Base(interpreter), RootDir: filepath.Dir(interpreter), // the environment's interpreter
		Config: map[string]any{
			zeohost.ConfigBinding: supervisetest.Binding(),
			zeohost.ConfigScope:   map[string]any{"organization_id": "org-1", "project_id": "project-1"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer inst.Close(ctx)

	req := &capabilityruntime.Request{Params: map[string]any{
		zeohost.ParamCapabilityID: "example.echo@1.0.0",
		zeohost.ParamArguments:    map[string]any{"text": "hello"},
		zeohost.ParamOperationID:  "operation-1",
	}}
	for range 2 {
		resp, err := inst.Execute(ctx, req)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.Result[zeohost.ResultState], resp.Result[zeohost.ResultData], "reconnected:", resp.Result[zeohost.ResultReconnected])
	}
	// Output:
	// succeeded map[text:hello] reconnected: false
	// succeeded map[text:hello] reconnected: true
}
