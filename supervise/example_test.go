package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// receipts is a Dispatcher that consumes every effect; a real one holds
// the credentials and calls the service, passing AuthorizationID on as its
// idempotency key.
type receipts struct{}

func (receipts) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	return port.Receipt{ReceiptID: "receipt-of-" + d.LogicalEffectID}, nil
}

// ExampleSupervisor_Invoke runs one operation with two effects against the
// simulated host of package supervisetest (a test double standing in for
// a real provider's zeo-capability), then invokes it again: the accepted result comes back
// from the ledger without a launch.
func ExampleSupervisor_Invoke() {
	ctx := context.Background()
	// The simulated host is this test binary, re-executed: its TestMain
	// calls supervisetest.Main. A real provider's launch.Config names its
	// environment's python and a environment.TreeVerifier.
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
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(context.Background())
	call := supervise.Call{
		Scope:       ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"},
		OperationID: "operation-1", CapabilityID: "example.two_effects@1.0.0",
		Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute),
	}
	o, err := s.Invoke(ctx, call)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(o.State, o.BudgetUsed, "effects")
	a, err := s.Artifact(ctx, call.Scope, o.Result.ArtifactRefs[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(a.Bytes))
	call.Deadline = time.Time{} // as recorded
	again, err := s.Invoke(ctx, call)
	fmt.Println(again.State, "launched:", again.Launched, "reconnected:", again.Reconnected, err)
	// Output:
	// succeeded 2 effects
	// {"receipts":["receipt-of-effect-1","receipt-of-effect-2"],"target":"doc-1"}
	// succeeded launched: false reconnected: true <nil>
}

// ExampleOutcomeError shows how a caller tells outcomes apart: every state
// but succeeded comes with an *OutcomeError wrapping the state's sentinel.
func ExampleOutcomeError() {
	// The simulated host is this test binary, re-executed: its TestMain
	// calls supervisetest.Main. A real provider's launch.Config names its
	// environment's python and a environment.TreeVerifier.
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
	s, err := supervise.New(supervise.Config{Ledger: memory.New(), Launcher: ln, Provider: supervisetest.Binding(),
		HostPythonVersion: supervisetest.PythonVersion, SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "/workspace"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(context.Background())
	_, err = s.Invoke(context.Background(), supervise.Call{
		Scope:       ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"},
		OperationID: "operation-2", CapabilityID: "example.fail@1.0.0", Arguments: map[string]any{},
	})
	var oe *supervise.OutcomeError
	switch {
	case errors.Is(err, supervise.ErrWaitingApproval):
		fmt.Println("approve, then invoke the same operation again")
	case errors.Is(err, supervise.ErrNeedsReconciliation):
		fmt.Println("reconcile the unknown effects with Resolve, then invoke again")
	case errors.As(err, &oe):
		fmt.Println(oe.Outcome.State, oe.Outcome.ErrorCode)
	}
	// Output:
	// failed ZEO_DEMO_DOMAIN_FAILURE
}
