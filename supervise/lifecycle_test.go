package supervise_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// TestCancelMidEffect: Cancel while an effect is being dispatched. The
// dispatch is not interrupted and its receipt is recorded (the effect was
// consumed); the host's next request is answered cancelled, it ends
// cancelled by itself, and the operation stays cancelled for every later
// call.
func TestCancelMidEffect(t *testing.T) {
	t.Parallel()
	ctx, l, d, s := setup(t, func(c *supervise.Config) {
		c.CancelGrace = 20 * time.Second // the host must end by itself, not be killed
	})
	d.set("effect-1", "block")
	c := call("op-cancel", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	type result struct {
		o   *supervise.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := s.Invoke(ctx, c)
		done <- result{o, err}
	}()
	<-d.entered
	if _, err := s.Cancel(ctx, scope, "op-cancel", "the user changed their mind"); err != nil {
		t.Fatal(err)
	}
	close(d.release)
	r := <-done
	wantState(t, r.o, r.err, launch.StateCancelled, supervise.ErrCancelled)
	if r.o.Launch.Process.Stopped != launch.StopNone || r.o.Launch.Process.ExitCode != 6 {
		t.Fatalf("host was stopped (%q) or exited %d; want it to end cancelled by itself (6)", r.o.Launch.Process.Stopped, r.o.Launch.Process.ExitCode)
	}
	if d.count("effect-1") != 1 || d.count("effect-2") != 0 {
		t.Fatalf("dispatches %v", d.calls)
	}
	var states []ipc.ReplyState
	for _, ev := range r.o.Decisions {
		states = append(states, ev.State)
	}
	if len(states) != 4 || states[2] != ipc.StateAllowed || states[3] != ipc.StateCancelled {
		t.Fatalf("replies %v, want allowed bootstrap, admit, effect-1, then cancelled", states)
	}
	view, err := l.Operation(ctx, scope, "op-cancel")
	if err != nil {
		t.Fatal(err)
	}
	if view.Operation.State != ledger.OperationCancelled || len(view.Effects) != 1 || view.Effects[0].State != ledger.EffectConfirmed {
		t.Fatalf("after cancel: %+v", view)
	}
	again, err := s.Invoke(ctx, c)
	wantState(t, again, err, launch.StateCancelled, supervise.ErrCancelled)
	if again.Launched {
		t.Fatal("a cancelled operation was launched again")
	}
}

// TestCancelStopsASilentHost: a host that sends nothing after Cancel is
// stopped once the cancel grace has passed.
func TestCancelStopsASilentHost(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	cfg := config(t, l, newLauncher(t, 200*time.Millisecond, "ZEO_HOSTSIM_SCENARIO=hang"))
	cfg.CancelGrace = 50 * time.Millisecond
	var started = make(chan struct{}, 1)
	cfg.Observer = func(ev supervise.Event) {
		if ev.Kind == supervise.EventLaunch {
			started <- struct{}{}
		}
	}
	s := newSupervisor(t, cfg)
	done := make(chan error, 1)
	var o *supervise.Outcome
	go func() {
		var err error
		o, err = s.Invoke(ctx, call("op-silent", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
		done <- err
	}()
	<-started
	// Cancel until the running Invoke is reached (it registers just after
	// EventLaunch); the ledger answers the same to every repeat.
	for {
		if _, err := s.Cancel(ctx, scope, "op-silent", "stop"); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			wantState(t, o, err, launch.StateCancelled, supervise.ErrCancelled)
			if o.Launch.Process.Stopped != launch.StopCancelled {
				t.Fatalf("process %+v, want stopped after cancel", o.Launch.Process)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestWaitingApprovalThenApprove: the authority holds an effect; nothing is
// recorded or dispatched for it; once approved, a new attempt of the same
// operation succeeds.
func TestWaitingApprovalThenApprove(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	d, a := newDispatcher(), newAuthority()
	a.effect["effect-1"] = port.Hold
	cfg := config(t, l, newLauncher(t, 0))
	cfg.Dispatcher, cfg.Authority = d, a
	s := newSupervisor(t, cfg)
	c := call("op-approve", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	o, err := s.Invoke(ctx, c)
	wantState(t, o, err, launch.StateWaitingApproval, supervise.ErrWaitingApproval)
	if d.total() != 0 || o.BudgetUsed != 0 || len(o.Effects) != 0 || !strings.Contains(o.Reason, "test authority: hold effect-1") {
		t.Fatalf("held: %d dispatches, budget used %d, effects %v, reason %q", d.total(), o.BudgetUsed, o.Effects, o.Reason)
	}
	a.mu.Lock()
	a.effect["effect-1"] = port.Allow
	a.mu.Unlock()
	o2, err := s.Invoke(ctx, c)
	wantState(t, o2, err, launch.StateSucceeded, nil)
	if o2.AttemptID == o.AttemptID || o2.Generation != o.Generation+1 || d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("after approval: attempt %s gen %d (was %s %d), dispatches %v", o2.AttemptID, o2.Generation, o.AttemptID, o.Generation, d.calls)
	}
	// A held admission works the same way.
	a.mu.Lock()
	a.admit = port.Hold
	a.mu.Unlock()
	o3, err := s.Invoke(ctx, call("op-approve-admission", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o3, err, launch.StateWaitingApproval, supervise.ErrWaitingApproval)
}

// TestUncertainThenResolve: an uncertain dispatch is recorded unknown and
// answered needs_reconciliation; after Resolve the next attempt proceeds,
// redelivering the resolved effect with its receipt and dispatching the
// rest, each once.
func TestUncertainThenResolve(t *testing.T) {
	t.Parallel()
	ctx, _, d, s := setup(t, nil)
	d.set("effect-1", "uncertain")
	c := call("op-uncertain", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	o, err := s.Invoke(ctx, c)
	wantState(t, o, err, launch.StateNeedsReconciliation, supervise.ErrNeedsReconciliation)
	if len(o.Effects) != 1 || o.Effects[0].State != ledger.EffectUnknown || o.Host.EffectDisposition != launch.EffectUnknown {
		t.Fatalf("effects %+v, host %+v", o.Effects, o.Host)
	}
	rec, err := s.Recover(ctx)
	if err != nil || len(rec.Unknown) != 1 || rec.Unknown[0].LogicalEffectID != "effect-1" || len(rec.Fenced) != 0 {
		t.Fatalf("Recover = %+v, %v", rec, err)
	}
	// Before it is resolved, another attempt is answered the same.
	o2, err := s.Invoke(ctx, c)
	wantState(t, o2, err, launch.StateNeedsReconciliation, supervise.ErrNeedsReconciliation)
	if _, err := s.Resolve(ctx, scope, "op-uncertain", "effect-1", ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt-reconciled"}); err != nil {
		t.Fatal(err)
	}
	o3, err := s.Invoke(ctx, c)
	wantState(t, o3, err, launch.StateSucceeded, nil)
	if d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("dispatches %v, want each effect once", d.calls)
	}
	a, err := s.Artifact(ctx, scope, o3.Result.ArtifactRefs[0])
	if err != nil || !strings.Contains(string(a.Bytes), `"rcpt-reconciled","rcpt-effect-2"`) {
		t.Fatalf("artifact %q, %v", a.Bytes, err)
	}
}

// TestNotConsumed: a dispatcher that is certain the effect was not
// consumed gets it recorded so and answered refused; a redelivery in a
// later attempt is answered refused again without dispatching.
func TestNotConsumed(t *testing.T) {
	t.Parallel()
	ctx, _, d, s := setup(t, nil)
	d.set("effect-1", "not-consumed")
	c := call("op-nc", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	for range 2 {
		o, err := s.Invoke(ctx, c)
		wantState(t, o, err, launch.StateRefused, supervise.ErrRefused)
		if len(o.Effects) != 1 || o.Effects[0].State != ledger.EffectNotConsumed || !strings.Contains(o.Reason, "refused") {
			t.Fatalf("effects %+v, reason %q", o.Effects, o.Reason)
		}
	}
	if d.count("effect-1") != 1 {
		t.Fatalf("dispatched %d times, want 1", d.count("effect-1"))
	}
}

// TestBudgetRefusal: a new effect past the operation's budget is refused
// by the ledger without dispatching, and the reason says so.
func TestBudgetRefusal(t *testing.T) {
	t.Parallel()
	ctx, _, d, s := setup(t, nil)
	o, err := s.Invoke(ctx, call("op-budget", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 1))
	// The host's own counter (total_dispatch_budget 1) refuses effect-2
	// locally: the capability fails without a second request.
	wantState(t, o, err, launch.StateFailed, supervise.ErrFailed)
	if d.total() != 1 || o.BudgetUsed != 1 {
		t.Fatalf("dispatches %d, budget used %d", d.total(), o.BudgetUsed)
	}
	// The caller learns why: the budget, not a silent failure.
	if !strings.Contains(o.Reason, "effect budget used up (1 of 1 effects)") {
		t.Fatalf("reason %q does not say the budget was used up", o.Reason)
	}
}

// TestPreflight: what the host would refuse anyway is refused before
// anything is launched or recorded, saying why.
func TestPreflight(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	ln := newLauncher(t, 0)
	cfg := config(t, l, ln)
	cfg.HostPythonVersion = "3.13.1"
	if _, err := supervise.New(cfg); !errors.Is(err, supervise.ErrInvalidConfig) || !strings.Contains(err.Error(), `python_version "3.14.0" but the host interpreter is "3.13.1"`) {
		t.Fatalf("New with another interpreter: %v", err)
	}
	// The interpreter's version is required unless the check is left to
	// the host explicitly, and not both.
	cfg.HostPythonVersion = ""
	if _, err := supervise.New(cfg); !errors.Is(err, supervise.ErrInvalidConfig) || !strings.Contains(err.Error(), "HostPythonVersion is empty") || !strings.Contains(err.Error(), "SkipPythonVersionCheck") {
		t.Fatalf("New without the interpreter's version: %v", err)
	}
	cfg.SkipPythonVersionCheck = true
	if _, err := supervise.New(cfg); err != nil {
		t.Fatalf("New with the check left to the host: %v", err)
	}
	cfg.HostPythonVersion = hostsim.DefaultPythonVersion
	if _, err := supervise.New(cfg); !errors.Is(err, supervise.ErrInvalidConfig) || !strings.Contains(err.Error(), "both set") {
		t.Fatalf("New with a version and the check skipped: %v", err)
	}

	// example.mail is echo's manifest needing a credential and a binary
	// that Grants do not give, and network access.
	cfg = config(t, l, ln)
	ms := cfg.Provider.Manifests
	for _, m := range ms {
		if m.ID.Name == "echo" {
			m.ID.Name = "mail"
			m.Requirements.Credentials, m.Requirements.Binaries = []string{"gmail"}, []string{"sendmail"}
			m.Requirements.Network.Required = true
			ms = append(ms, m)
			break
		}
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider.Manifests, cfg.Provider.ManifestDigest = ms, d
	cfg.Grants = port.Grants{Binaries: []string{"sendmail"}}
	s := newSupervisor(t, cfg)
	cases := []struct {
		name     string
		c        supervise.Call
		state    launch.State
		sentinel error
		detail   string
	}{
		{"unknown capability", call("op-p1", "example.nope@1.0.0", nil, 0), launch.StateRefused, supervise.ErrRefused, "not in the provider's inventory"},
		{"schema", call("op-p2", "example.echo@1.0.0", map[string]any{"text": 4}, 0), launch.StateInvalidRequest, supervise.ErrInvalidRequest, "request schema"},
		{"unsafe float", call("op-p3", "example.echo@1.0.0", map[string]any{"text": "x", "n": []any{1.5, 1e20}}, 0),
			launch.StateInvalidRequest, supervise.ErrInvalidRequest, "/n/1"},
		{"unmet requirements", call("op-p4", "example.mail@1.0.0", map[string]any{"text": "x"}, 0), launch.StateUnavailable, supervise.ErrUnavailable,
			`requires credential "gmail" (not in Grants), network access (Grants.NetworkAllowed is false)`},
	}
	for _, tt := range cases {
		o, err := s.Invoke(ctx, tt.c)
		wantState(t, o, err, tt.state, tt.sentinel)
		if !errors.Is(err, supervise.ErrPreflight) || !strings.Contains(err.Error(), tt.detail) || o.Launched {
			t.Fatalf("%s: err %v, want ErrPreflight naming %q, nothing launched", tt.name, err, tt.detail)
		}
		if _, err := l.Operation(ctx, scope, tt.c.OperationID); !errors.Is(err, ledger.ErrNotFound) {
			t.Fatalf("%s: the operation was recorded: %v", tt.name, err)
		}
	}
	var de *port.DocumentError
	_, err = s.Invoke(ctx, cases[2].c)
	if !errors.As(err, &de) || de.Pointer != "/n/1" {
		t.Fatalf("err %v, want a *DocumentError at /n/1", err)
	}
}

// TestHostClaimIsEvidence: a host that claims success is judged against
// the ledger. Over a real success whose refs it forges, the ledger's
// accepted result is the outcome; over a failure, the claim is a protocol
// error and never becomes the outcome, in the Outcome or the evidence.
func TestHostClaimIsEvidence(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	s := newSupervisor(t, config(t, l, newLauncher(t, 0, "ZEO_HOSTSIM_SCENARIO=claim-success")))
	o, err := s.Invoke(ctx, call("op-forged-refs", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o, err, launch.StateSucceeded, nil)
	if o.Host.ArtifactRefs[0] != "artifact-forged" || o.Result.ArtifactRefs[0] == "artifact-forged" || !strings.Contains(o.Reason, "artifact refs") {
		t.Fatalf("host refs %v, accepted %v, reason %q", o.Host.ArtifactRefs, o.Result.ArtifactRefs, o.Reason)
	}
	o, err = s.Invoke(ctx, call("op-claimed", "example.fail@1.0.0", map[string]any{}, 0))
	wantState(t, o, err, launch.StateProtocolError, supervise.ErrProtocol)
	if o.Result != nil || o.Evidence == nil || o.Evidence.State != string(launch.StateProtocolError) {
		t.Fatalf("outcome %+v, evidence %+v", o, o.Evidence)
	}
	if v, err := l.Operation(ctx, scope, "op-claimed"); err != nil || v.Result != nil || v.Operation.State != ledger.OperationOpen {
		t.Fatalf("ledger after a false claim: %+v, %v", v, err)
	}
}

// TestCallerGivesUp: when the caller's context ends, the host is stopped,
// the outcome says why, and the attempt's evidence is recorded all the
// same.
func TestCallerGivesUp(t *testing.T) {
	t.Parallel()
	l := openBolt(t, t.TempDir())
	started := make(chan struct{}, 1)
	cfg := config(t, l, newLauncher(t, 50*time.Millisecond, "ZEO_HOSTSIM_SCENARIO=hang"))
	cfg.Observer = func(ev supervise.Event) {
		if ev.Kind == supervise.EventLaunch {
			started <- struct{}{}
		}
	}
	s := newSupervisor(t, cfg)
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() { <-started; cancel() }()
	o, err := s.Invoke(ctx, call("op-gave-up", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o, err, launch.StateProtocolError, supervise.ErrProtocol)
	if o.Launch.Process.Stopped != launch.StopCancelled || !strings.Contains(o.Reason, "context ended") ||
		o.Evidence == nil || o.Evidence.State != string(launch.StateProtocolError) {
		t.Fatalf("outcome %+v, evidence %+v", o, o.Evidence)
	}
}
