// Command dispatcher shows a custom port.Dispatcher: the credential
// holder that consumes the effects the ledger has authorized.
//
// The service here is a document store in memory that deduplicates on the
// authorization id, as a real service must on its idempotency key. The
// dispatcher gives each of its three answers:
//
//   - consumed: a Receipt (and a result object for the host);
//   - certainly not consumed: port.NotConsumed, answered refused;
//   - uncertain (a timeout after the request left): any other error, which
//     the ledger records unknown until it is resolved.
//
// The uncertain effect is then reconciled: the service is asked by
// authorization id, the ledger is told (Supervisor.Resolve), and the next
// attempt of the operation completes without dispatching it again.
//
//	go run ./examples/dispatcher
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

func main() {
	supervisetest.RunHost()
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dispatcher:", err)
		os.Exit(1)
	}
}

// store is the outside service: it applies an operation to a document
// once per idempotency key.
type store struct {
	mu      sync.Mutex        // guards the fields below
	applied map[string]string // idempotency key → receipt
	log     []string          // what was applied, in order
	// lose makes the next reply for this operation get lost after the
	// operation was applied: the caller cannot know whether it was.
	lose string
}

var errTimeout = errors.New("store: no reply within 2s")

// apply performs op on target once per key and returns its receipt.
func (s *store) apply(key, op, target string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.applied[key]; ok {
		return r, nil // a retry of the same request: the same receipt
	}
	r := fmt.Sprintf("store-%d", len(s.applied)+1)
	s.applied[key] = r
	s.log = append(s.log, op+" "+target)
	if s.lose == op {
		s.lose = ""
		return "", errTimeout
	}
	return r, nil
}

// lookup reports what the store did under key.
func (s *store) lookup(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.applied[key]
	return r, ok
}

// storeDispatcher holds the store's credentials: it is the only code that
// performs effects.
type storeDispatcher struct {
	s     *store
	mu    sync.Mutex // guards calls
	calls int
}

// Dispatch consumes one authorized effect. The authorization id is stable
// across attempts and controller restarts: it is the idempotency key.
func (d *storeDispatcher) Dispatch(ctx context.Context, e port.Dispatch) (port.Receipt, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	target, _ := e.Request.Arguments["target"].(string)
	if target == "archived" {
		// Refused before anything was done: certainly not consumed.
		return port.Receipt{}, port.NotConsumed("document " + target + " is read-only")
	}
	r, err := d.s.apply(e.AuthorizationID, e.Request.Operation, target)
	if err != nil {
		// The request may have been applied: uncertain, never "not consumed".
		return port.Receipt{}, fmt.Errorf("%s on %s: %w", e.Request.Operation, target, err)
	}
	return port.Receipt{ReceiptID: r, Result: map[string]any{"applied": e.Request.Operation}}, nil
}

func run(ctx context.Context, w io.Writer) error {
	launcher, cleanup, err := hostLauncher(supervisetest.WellBehaved)
	if err != nil {
		return err
	}
	defer cleanup()
	l := memory.New()
	defer l.Close(ctx)
	st := &store{applied: map[string]string{}}
	d := &storeDispatcher{s: st}
	sup, err := supervise.New(supervise.Config{Ledger: l, Launcher: launcher, Provider: supervisetest.Binding(), Dispatcher: d,
		SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "workspace-1", HostPythonVersion: supervisetest.PythonVersion})
	if err != nil {
		return err
	}
	// Close drains the invocations within its bound and releases the
	// controller's lease once nothing of it can still write.
	defer sup.Close(context.WithoutCancel(ctx))
	scope := ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"}
	call := func(op, target string) supervise.Call {
		return supervise.Call{Scope: scope, OperationID: op, CapabilityID: "example.two_effects@1.0.0",
			Arguments: map[string]any{"target": target}, EffectBudget: 2}
	}
	report := func(name string, o *supervise.Outcome, err error) {
		fmt.Fprintf(w, "%s: %s", name, o.State)
		for _, e := range o.Effects {
			fmt.Fprintf(w, "; %s %s", e.LogicalEffectID, e.State)
			if e.ReceiptID != "" {
				fmt.Fprintf(w, " %s", e.ReceiptID)
			}
		}
		fmt.Fprintln(w)
		if err != nil {
			fmt.Fprintf(w, "  next: needs reconciliation %t, refused %t\n",
				errors.Is(err, supervise.ErrNeedsReconciliation), errors.Is(err, supervise.ErrRefused))
		}
	}

	// Consumed: both effects applied, each with its receipt.
	o, err := sup.Invoke(ctx, call("op-1", "doc-1"))
	if o == nil {
		return err
	}
	report("doc-1", o, err)

	// Not consumed: the store refuses before acting; nothing was done.
	o, err = sup.Invoke(ctx, call("op-2", "archived"))
	if o == nil {
		return err
	}
	report("archived", o, err)

	// Uncertain: the commit is applied but its reply is lost.
	st.lose = "commit"
	o, err = sup.Invoke(ctx, call("op-3", "doc-3"))
	if o == nil {
		return err
	}
	report("doc-3", o, err)

	// Reconciliation: ask the store by idempotency key, tell the ledger.
	unknown, err := l.ListUnknown(ctx)
	if err != nil {
		return err
	}
	for _, e := range unknown {
		res := ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}
		if r, ok := st.lookup(e.AuthorizationID); ok {
			res = ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: r}
		}
		if _, err := sup.Resolve(ctx, e.Scope, e.OperationID, e.LogicalEffectID, res); err != nil {
			return err
		}
		fmt.Fprintf(w, "resolved %s %s: %s %s\n", e.OperationID, e.LogicalEffectID, res.State, res.ReceiptID)
	}

	// The next attempt: both effects are redelivered from the ledger.
	o, err = sup.Invoke(ctx, call("op-3", "doc-3"))
	if o == nil {
		return err
	}
	report("doc-3 again", o, err)
	fmt.Fprintf(w, "dispatcher calls %d; store applied %q\n", d.calls, st.log)
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
