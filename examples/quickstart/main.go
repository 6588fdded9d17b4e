// Command quickstart runs capability operations with package supervise: a
// memory ledger, the module's simulated host as the provider's host (this
// executable, re-executed), and a dispatcher that stands for the
// credential holder.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

func main() {
	supervisetest.RunHost() // this executable is also the host it launches
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// receipts is the dispatcher: it "performs" an effect and names the
// receipt after it. A real one calls the service that holds the
// credentials, with d.AuthorizationID as its idempotency key.
type receipts struct{}

func (receipts) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	return port.Receipt{ReceiptID: "receipt-" + d.LogicalEffectID}, nil
}

func run(ctx context.Context, w io.Writer) error {
	// The host: the simulated one here. For a real provider, launch.New
	// with Interpreter its environment's python, Args {"-m",
	// "zeo_core.adapters.runtime_host"} and a environment.TreeVerifier.
	launcher, cleanup, err := hostLauncher(supervisetest.WellBehaved)
	if err != nil {
		return err
	}
	defer cleanup()

	// The ledger: memory here; ledger/bolt (one file) or a shared backend
	// to survive a restart.
	l := memory.New()
	defer l.Close(ctx)

	// The supervisor, bound to one provider: the simulated provider's
	// binding (testdata/examples/binding.json); yours comes from
	// manifest.DecodeBinding.
	sup, err := supervise.New(supervise.Config{
		Ledger: l, Launcher: launcher, Provider: supervisetest.Binding(), Dispatcher: receipts{},
		SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "workspace-1",
		// A real provider's is its interpreter's platform.python_version().
		HostPythonVersion: supervisetest.PythonVersion,
	})
	if err != nil {
		return err
	}
	// Close drains the invocations within its bound and releases the
	// controller's lease once nothing of it can still write.
	defer sup.Close(context.WithoutCancel(ctx))
	scope := ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"}

	// A capability with no effects.
	out, err := sup.Invoke(ctx, supervise.Call{Scope: scope, OperationID: "op-echo",
		CapabilityID: "example.echo@1.0.0", Arguments: map[string]any{"text": "hello"}})
	if err != nil {
		// Every state but succeeded comes with an *OutcomeError; its
		// sentinel (errors.Is) says what to do next.
		var oe *supervise.OutcomeError
		if errors.As(err, &oe) {
			return fmt.Errorf("echo ended %s: %s", oe.Outcome.State, oe.Outcome.Reason)
		}
		return err
	}
	a, err := sup.Artifact(ctx, scope, out.Result.ArtifactRefs[0])
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "echo: %s, artifact %s\n", out.State, a.Bytes)

	// A capability with two effects: each is authorized by the ledger
	// (budget 2), dispatched once and confirmed with its receipt.
	effects := supervise.Call{Scope: scope, OperationID: "op-effects", CapabilityID: "example.two_effects@1.0.0",
		Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2}
	out, err = sup.Invoke(ctx, effects)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "two_effects: %s, budget %d of %d used\n", out.State, out.BudgetUsed, out.Budget)
	for _, e := range out.Effects {
		fmt.Fprintf(w, "  %s: %s, receipt %s\n", e.LogicalEffectID, e.State, e.ReceiptID)
	}

	// The same operation again (a caller that lost the answer): the
	// accepted result, from the ledger, with nothing launched.
	again, err := sup.Invoke(ctx, effects)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "again: %s, reconnected %t, launched %t, same result %t\n", again.State, again.Reconnected,
		again.Launched, again.Result.DataDigest == out.Result.DataDigest)
	return nil
}

// hostLauncher returns a launcher of the simulated host (this executable,
// re-executed; see supervisetest.RunHost) behaving as sc, working in a
// fresh temporary directory that cleanup removes.
func hostLauncher(sc supervisetest.Scenario) (l *launch.Launcher, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "example-host-")
	if err != nil {
		return nil, nil, err
	}
	cfg, err := supervisetest.LaunchConfig(dir, sc)
	if err == nil {
		l, err = launch.New(cfg)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return l, func() { os.RemoveAll(dir) }, nil
}
