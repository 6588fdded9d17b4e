// Package embedder is a module of its own that tests its Dispatcher and
// Authority with nothing but the public test host (supervisetest) and the
// memory ledger it brings, as an embedder's module would.
package embedder

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

func TestMain(m *testing.M) { supervisetest.Main(m) }

// store is the embedder's Dispatcher: it records each effect under its
// authorization id and loses its answer (an uncertain effect) for the
// target "flaky" on commit.
type store struct {
	mu    sync.Mutex
	calls map[string]int
}

func (s *store) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[d.LogicalEffectID]++
	if d.Request.Arguments["target"] == "flaky" && d.Request.Operation == "commit" {
		return port.Receipt{}, errors.New("store: connection reset after the write was sent")
	}
	return port.Receipt{ReceiptID: "store-" + d.AuthorizationID}, nil
}

func (s *store) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[id]
}

// policy is the embedder's Authority: no effect on the target "secret".
type policy struct{}

func (policy) Admit(context.Context, port.Admission) (port.Verdict, error) {
	return port.Verdict{Decision: port.Allow}, nil
}

func (policy) Effect(_ context.Context, q port.EffectQuestion) (port.Verdict, error) {
	if q.Request.Arguments["target"] == "secret" {
		return port.Verdict{Decision: port.Refuse, Reason: "secret documents are read-only"}, nil
	}
	return port.Verdict{Decision: port.Allow}, nil
}

var scope = ledger.Scope{OrganizationID: "org-1", ProjectID: "project-1"}

func newSupervisor(t *testing.T, sc supervisetest.Scenario) (*supervise.Supervisor, *store) {
	t.Helper()
	d := &store{calls: map[string]int{}}
	cfg := supervisetest.SupervisorConfig(t, sc)
	cfg.Dispatcher, cfg.Authority = d, policy{}
	s, err := supervise.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s, d
}

func call(op, capability, target string) supervise.Call {
	return supervise.Call{Scope: scope, OperationID: op, CapabilityID: capability,
		Arguments: map[string]any{"target": target}, EffectBudget: 2, Deadline: time.Now().Add(time.Minute)}
}

func TestEffectsAndRedelivery(t *testing.T) {
	s, d := newSupervisor(t, supervisetest.WellBehaved)
	ctx := t.Context()
	c := call("op-ok", supervisetest.TwoEffects, "doc-1")
	o, err := s.Invoke(ctx, c)
	if err != nil || o.BudgetUsed != 2 {
		t.Fatalf("Invoke = %+v, %v", o, err)
	}
	a, err := s.Artifact(ctx, scope, o.Result.ArtifactRefs[0])
	if err != nil || !strings.Contains(string(a.Bytes), `"store-`) {
		t.Fatalf("artifact %q, %v", a.Bytes, err)
	}
	again, err := s.Invoke(ctx, c)
	if err != nil || !again.Reconnected || again.Launched {
		t.Fatalf("again = %+v, %v", again, err)
	}
	if d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("dispatches %v, want each once", d.calls)
	}
}

func TestAuthorityRefuses(t *testing.T) {
	s, d := newSupervisor(t, supervisetest.WellBehaved)
	o, err := s.Invoke(t.Context(), call("op-secret", supervisetest.TwoEffects, "secret"))
	if !errors.Is(err, supervise.ErrRefused) || !strings.Contains(o.Reason, "read-only") {
		t.Fatalf("Invoke = %+v, %v; want refused with the policy's reason", o, err)
	}
	if d.count("effect-1") != 0 {
		t.Fatalf("a refused effect was dispatched")
	}
}

func TestUncertainEffect(t *testing.T) {
	s, d := newSupervisor(t, supervisetest.WellBehaved)
	ctx := t.Context()
	c := call("op-flaky", supervisetest.TwoEffects, "flaky")
	o, err := s.Invoke(ctx, c)
	if !errors.Is(err, supervise.ErrNeedsReconciliation) {
		t.Fatalf("Invoke = %+v, %v; want needs reconciliation", o, err)
	}
	if len(o.Effects) != 2 || o.Effects[1].State != ledger.EffectUnknown {
		t.Fatalf("effects %+v, want effect-2 unknown", o.Effects)
	}
	// The store is asked and says the write landed.
	if _, err := s.Resolve(ctx, scope, c.OperationID, "effect-2",
		ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "store-reconciled"}); err != nil {
		t.Fatal(err)
	}
	o, err = s.Invoke(ctx, c)
	if err != nil {
		t.Fatalf("after Resolve: %+v, %v", o, err)
	}
	a, err := s.Artifact(ctx, scope, o.Result.ArtifactRefs[0])
	if err != nil || !strings.Contains(string(a.Bytes), `"store-reconciled"`) {
		t.Fatalf("artifact %q, %v", a.Bytes, err)
	}
	if d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("dispatches %v, want each once", d.calls)
	}
}

func TestCrash(t *testing.T) {
	s, _ := newSupervisor(t, supervisetest.WellBehaved)
	o, err := s.Invoke(t.Context(), supervise.Call{Scope: scope, OperationID: "op-crash",
		CapabilityID: supervisetest.Crash, Arguments: map[string]any{}, Deadline: time.Now().Add(time.Minute)})
	if !errors.Is(err, supervise.ErrProtocol) || !o.Launched {
		t.Fatalf("Invoke = %+v, %v; want a protocol error of a launched host", o, err)
	}
	crashing, _ := newSupervisor(t, supervisetest.CrashExit)
	o, err = crashing.Invoke(t.Context(), call("op-exit", supervisetest.TwoEffects, "doc-1"))
	if !errors.Is(err, supervise.ErrProtocol) {
		t.Fatalf("Invoke = %+v, %v; want a protocol error", o, err)
	}
}
