package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

var scopeA = ledger.Scope{OrganizationID: "org-a", ProjectID: "proj-1"}

// receipts is a Dispatcher that consumes every effect and counts them.
type receipts struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *receipts) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[d.LogicalEffectID]++
	return port.Receipt{ReceiptID: "rcpt-" + d.AuthorizationID}, nil
}

// demoWorld is the simulated demo provider admitted for org-a, with a
// consuming dispatcher and a budget of two effects per operation.
func demoWorld(t *testing.T) (*world, *receipts) {
	d := &receipts{}
	w := newWorld(t, agent.Config{EffectBudget: 2, Supervisor: supervise.Config{Dispatcher: d}},
		catalogue.Admission{Binding: hostsim.DemoBinding(), Audience: []catalogue.Audience{{OrganizationID: "org-a"}}})
	return w, d
}

// twoEffectsConsent is what example.two_effects needs from account.
func twoEffectsConsent(account string, ops ...string) cataloguestore.Consent {
	return cataloguestore.Consent{Scope: scopeA, Account: account, Capabilities: []string{"example.two_effects@1.0.0"},
		Services: []string{"runtime.effects"}, EffectKinds: []string{"write", "external_communication"}, EffectOperations: ops}
}

// TestRunConsent follows a capability that needs a connection account:
// refused before anything runs without consent, run once granted, held
// for approval when consent for one effect is revoked, and continued to
// its result once it is granted again; with two accounts that could serve,
// the run must name one.
func TestRunConsent(t *testing.T) {
	noLeaks(t)
	ctx := testCtx(t)
	w, d := demoWorld(t)
	run := func(op, account string) (agent.RunResult, error) {
		return w.f.Run(ctx, scopeA, agent.RunRequest{CapabilityID: "example.two_effects@1.0.0",
			Arguments: map[string]any{"target": "doc-" + op}, OperationID: op, Account: account})
	}

	res, err := run("op-no-consent", "")
	var ce *catalogue.ConsentError
	if !errors.As(err, &ce) || res.State != "" {
		t.Fatalf("without consent: %+v, %v; want a *catalogue.ConsentError and nothing run", res, err)
	}
	if _, err := w.l.Operation(ctx, scopeA, "op-no-consent"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("a run refused for consent recorded its operation: %v", err)
	}

	if _, err := w.cat.Grant(ctx, twoEffectsConsent("connection-a", "prepare", "commit")); err != nil {
		t.Fatal(err)
	}
	res, err = run("op-1", "")
	if err != nil || res.State != launch.StateSucceeded || !strings.Contains(string(res.Artifact), `"receipts":["rcpt-`) {
		t.Fatalf("with consent: %+v, %v", res, err)
	}

	// Consent for commit revoked: the second effect is held, nothing is
	// dispatched for it, and the operation waits.
	if _, err := w.cat.Revoke(ctx, cataloguestore.Consent{Scope: scopeA, Account: "connection-a", EffectOperations: []string{"commit"}}); err != nil {
		t.Fatal(err)
	}
	res, err = run("op-2", "")
	if !errors.Is(err, supervise.ErrWaitingApproval) || res.State != launch.StateWaitingApproval ||
		!strings.Contains(res.Next, `call run again with operation_id "op-2"`) || !strings.Contains(res.Reason, "effect_operation:commit") {
		t.Fatalf("commit revoked: %+v, %v", res, err)
	}
	if _, err := w.cat.Grant(ctx, twoEffectsConsent("connection-a", "commit")); err != nil {
		t.Fatal(err)
	}
	res, err = run("op-2", "")
	if err != nil || res.State != launch.StateSucceeded {
		t.Fatalf("continued after the grant: %+v, %v", res, err)
	}
	d.mu.Lock()
	if d.n["effect-1"] != 2 || d.n["effect-2"] != 2 {
		t.Errorf("dispatches %v; want each effect once per operation (two operations)", d.n)
	}
	d.mu.Unlock()

	// A second account could serve: the run must name one.
	if _, err := w.cat.Grant(ctx, twoEffectsConsent("connection-b", "prepare", "commit")); err != nil {
		t.Fatal(err)
	}
	_, err = run("op-3", "")
	var ae *catalogue.AccountError
	if !errors.As(err, &ae) || len(ae.Candidates) != 2 {
		t.Fatalf("two accounts, none named: %v; want a *catalogue.AccountError naming both", err)
	}
	if res, err := run("op-3", "connection-a"); err != nil || res.State != launch.StateSucceeded {
		t.Fatalf("naming connection-a: %+v, %v", res, err)
	}
	// The effect names connection-a, the operation runs with connection-b.
	res, err = run("op-4", "connection-b")
	if !errors.Is(err, supervise.ErrRefused) || !strings.Contains(res.Reason+res.Detail, "connection-b") {
		t.Errorf("effects on another account than the run's: %+v, %v", res, err)
	}
}

// TestRunPinnedGeneration checks that an operation started on one
// generation continues on it after a newer one is admitted, while a new
// operation runs on the newer one.
func TestRunPinnedGeneration(t *testing.T) {
	noLeaks(t)
	ctx := testCtx(t)
	w, _ := demoWorld(t)
	if _, err := w.cat.Grant(ctx, twoEffectsConsent("connection-a", "prepare")); err != nil {
		t.Fatal(err)
	}
	req := agent.RunRequest{CapabilityID: "example.two_effects@1.0.0", Arguments: map[string]any{"target": "t"}, OperationID: "op-old"}
	if res, _ := w.f.Run(ctx, scopeA, req); res.State != launch.StateWaitingApproval {
		t.Fatalf("first run: %+v", res)
	}
	b := hostsim.DemoBinding()
	b.Generation = 2
	if _, err := w.cat.Admit(ctx, catalogue.Admission{Binding: b, Audience: []catalogue.Audience{{OrganizationID: "org-a"}}}); err != nil {
		t.Fatal(err)
	}
	if d, err := w.f.Describe(ctx, scopeA, "example.two_effects@1.0.0"); err != nil || d.Generation != 2 {
		t.Fatalf("describe after generation 2: %+v, %v", d, err)
	}
	if _, err := w.cat.Grant(ctx, twoEffectsConsent("connection-a", "commit")); err != nil {
		t.Fatal(err)
	}
	res, err := w.f.Run(ctx, scopeA, req)
	if err != nil || res.State != launch.StateSucceeded {
		t.Fatalf("continued: %+v, %v", res, err)
	}
	for op, want := range map[string]int64{"op-old": 1} {
		pin, err := w.l.OperationPin(ctx, scopeA, op)
		if err != nil || pin.Generation != want {
			t.Errorf("%s pinned to %+v, %v; want generation %d", op, pin, err, want)
		}
	}
	req.OperationID = "op-new"
	if res, err := w.f.Run(ctx, scopeA, req); err != nil || res.State != launch.StateSucceeded {
		t.Fatalf("new operation: %+v, %v", res, err)
	}
	if pin, err := w.l.OperationPin(ctx, scopeA, "op-new"); err != nil || pin.Generation != 2 {
		t.Errorf("op-new pinned to %+v, %v; want generation 2", pin, err)
	}
}

// TestRunInvalid checks refusals before anything runs.
func TestRunInvalid(t *testing.T) {
	ctx := testCtx(t)
	w, _ := demoWorld(t)
	for _, req := range []agent.RunRequest{
		{CapabilityID: "example.echo@1.0.0", OperationID: strings.Repeat("o", 257)},
		{CapabilityID: ""},
		{CapabilityID: "example.echo@1.0.0", Account: strings.Repeat("a", 257)},
	} {
		res, err := w.f.Run(ctx, scopeA, req)
		if res.State != "" || !(errors.Is(err, agent.ErrInvalidCall) || errors.Is(err, catalogue.ErrInvalidCall)) {
			t.Errorf("Run(%.40v) = %+v, %v; want an invalid request", req, res, err)
		}
	}
	if _, err := w.f.Search(ctx, ledger.Scope{}, agent.SearchRequest{}); err == nil {
		t.Error("search with an empty scope succeeded")
	}
	if _, err := w.f.Search(ctx, scopeA, agent.SearchRequest{Limit: agent.MaxPageSize + 1}); !errors.Is(err, agent.ErrInvalidCall) {
		t.Errorf("limit past the maximum: %v", err)
	}
	if _, err := w.f.Search(ctx, scopeA, agent.SearchRequest{Query: "x", Cursor: "AQ"}); !errors.Is(err, agent.ErrInvalidCursor) {
		t.Errorf("damaged cursor: %v", err)
	}
}

// gate is an Authority (the embedder's, asked after the catalogue) that
// holds each invoke.admit until released, and says when one is waiting.
// The question asked before launch passes.
type gate struct {
	entered chan string
	release chan struct{}
}

func (g gate) Admit(ctx context.Context, a port.Admission) (port.Verdict, error) {
	if a.BeforeLaunch {
		return port.Verdict{Decision: port.Allow}, nil
	}
	g.entered <- a.Operation.OperationID
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return port.Verdict{Decision: port.Allow}, nil
}

func (gate) Effect(context.Context, port.EffectQuestion) (port.Verdict, error) {
	return port.Verdict{Decision: port.Allow}, nil
}

// TestRunReservationBusy runs a serial_per_capability capability twice at
// once through the facade: the second run is answered refused, naming
// the reservation's holder and saying to run again, without launching;
// run again with its operation id once the first ended, it succeeds.
func TestRunReservationBusy(t *testing.T) {
	noLeaks(t)
	ctx := testCtx(t)
	m := echoManifest(t, "serial.echo@1.0.0", "An echo that runs one at a time")
	m.Effects.Concurrency = manifest.SerialPerCapability
	g := gate{entered: make(chan string, 4), release: make(chan struct{})}
	w := newWorld(t, agent.Config{Supervisor: supervise.Config{Authority: g}},
		catalogue.Admission{Binding: binding(t, "serial:factory", 1, m), Audience: []catalogue.Audience{{OrganizationID: "org-a"}}})
	req := func(op string) agent.RunRequest {
		return agent.RunRequest{CapabilityID: "serial.echo@1.0.0", Arguments: map[string]any{"text": op}, OperationID: op}
	}
	first := make(chan error, 1)
	go func() {
		_, err := w.f.Run(ctx, scopeA, req("op-first"))
		first <- err
	}()
	if op := <-g.entered; op != "op-first" {
		t.Fatalf("%s entered admission first", op)
	}
	// op-first holds the capability's reservation inside invoke.admit.
	res, err := w.f.Run(ctx, scopeA, req("op-second"))
	if !errors.Is(err, cataloguestore.ErrReserved) || res.State != launch.StateRefused || res.Outcome.Launched ||
		!strings.Contains(res.Detail, "op-first") || !strings.Contains(res.Next, `call run again with operation_id "op-second"`) {
		t.Fatalf("second run while the first holds the reservation: %+v, %v", res, err)
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("first run: %v", err)
	}
	res, err = w.f.Run(ctx, scopeA, req("op-second"))
	if err != nil || res.State != launch.StateSucceeded || string(res.Artifact) != `{"text":"op-second"}` {
		t.Fatalf("second run again: %+v, %v", res, err)
	}
	if rs, err := w.cat.Reservations(ctx, scopeA); err != nil || len(rs) != 0 {
		t.Errorf("reservations left: %+v, %v", rs, err)
	}
}

// TestRunConcurrentOneOperation runs one operation twenty times at once
// through the facade, as agents retrying over MCP do: one host is
// launched, and every answer agrees with the ledger's one result.
func TestRunConcurrentOneOperation(t *testing.T) {
	noLeaks(t)
	ctx := testCtx(t)
	w, _ := demoWorld(t)
	const n = 20
	results := make([]agent.RunResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = w.f.Run(ctx, scopeA, agent.RunRequest{CapabilityID: "example.echo@1.0.0",
				Arguments: map[string]any{"text": "once"}, OperationID: "op-twenty"})
		}()
	}
	wg.Wait()
	view, err := w.l.Operation(ctx, scopeA, "op-twenty")
	if err != nil || view.Result == nil {
		t.Fatalf("operation: %+v, %v", view, err)
	}
	launched := 0
	for i, r := range results {
		if errs[i] != nil || r.State != launch.StateSucceeded || string(r.Artifact) != `{"text":"once"}` {
			t.Fatalf("run %d: %+v, %v", i, r, errs[i])
		}
		if r.Outcome.Result.DataDigest != view.Result.DataDigest {
			t.Fatalf("run %d answered result %s, the ledger holds %s", i, r.Outcome.Result.DataDigest, view.Result.DataDigest)
		}
		if r.Outcome.Launched && !r.Outcome.Shared {
			launched++
		}
	}
	if launched != 1 || len(view.Attempts) != 1 {
		t.Fatalf("%d runs launched a host, %d attempts recorded; want 1 and 1", launched, len(view.Attempts))
	}
}
