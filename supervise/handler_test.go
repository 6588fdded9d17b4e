package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// lower is the lower layer used on its own, as a team with its own
// controller would: an attempt started, its context built, its bootstrap id
// issued, and a Handler for it.
type lower struct {
	l     ledger.Ledger
	ln    *launch.Launcher
	fence ledger.Fence
	inv   launch.Invocation
	cfg   handler.Config
}

// startLower creates operation op (when missing) for capability with
// args and budget, starts attempt attemptID and prepares its launch.
func startLower(t *testing.T, l ledger.Ledger, ln *launch.Launcher, op, attemptID, capability string, args map[string]any, budget int64) *lower {
	t.Helper()
	return startLowerUntil(t, l, ln, op, attemptID, capability, args, budget, time.Time{})
}

// startLowerUntil is startLower with the operation's deadline; zero means
// the one call gives.
func startLowerUntil(t *testing.T, l ledger.Ledger, ln *launch.Launcher, op, attemptID, capability string, args map[string]any, budget int64, deadline time.Time) *lower {
	t.Helper()
	ctx := testCtx(t)
	b := testBinding(t)
	m, err := manifest.Describe(b.Manifests, capability)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := manifest.PrepareRequest(m, args)
	if err != nil {
		t.Fatal(err)
	}
	c := call(op, capability, args, budget)
	if !deadline.IsZero() {
		c.Deadline = deadline
	}
	if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: capability,
		RequestDigest: prep.RequestDigest, ManifestDigest: b.ManifestDigest, EffectBudget: budget, Deadline: c.Deadline}); err != nil && !errors.Is(err, ledger.ErrChangedInput) {
		t.Fatal(err)
	}
	f, err := l.StartAttempt(ctx, scope, op, attemptID)
	if err != nil {
		t.Fatal(err)
	}
	view, err := l.Operation(ctx, scope, op)
	if err != nil {
		t.Fatal(err)
	}
	binding := ipc.AttemptBinding{OrganizationID: scope.OrganizationID, ProjectID: scope.ProjectID, SeatID: "seat-a",
		RuntimeBindingID: "runtime-a", PacketID: op, OperationID: op, AttemptID: attemptID, FencingGeneration: f.Generation,
		CapabilityID: capability, RequestDigest: prep.RequestDigest, ManifestDigest: b.ManifestDigest}
	bootID := "bootstrap-" + op + "-" + attemptID
	lc, err := handler.BuildContext(handler.ContextSpec{Provider: b, Manifest: m, Binding: binding, Operation: view,
		BootstrapID: bootID, Workspace: "/workspace-a"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := lc.LaunchDigest()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledgertest.Issue(ctx, l, f, bootID, d); err != nil {
		t.Fatal(err)
	}
	req, err := launch.EncodeRequest(capability, prep.Arguments)
	if err != nil {
		t.Fatal(err)
	}
	return &lower{l: l, ln: ln, fence: f, inv: launch.Invocation{Context: lc, Request: req},
		cfg: handler.Config{Ledger: l, Fence: f, Binding: binding, BootstrapID: bootID, Manifest: &m}}
}

// run launches the attempt's host with a fresh Handler (a fresh process
// and session) and returns the outcome and the Handler.
func (w *lower) run(t *testing.T) (*launch.Outcome, *handler.Handler) {
	t.Helper()
	out, h, err := w.try()
	if err != nil {
		t.Fatal(err)
	}
	return out, h
}

// try is run for another goroutine than the test's: it returns the error.
func (w *lower) try() (*launch.Outcome, *handler.Handler, error) {
	h, err := handler.New(w.cfg)
	if err != nil {
		return nil, nil, err
	}
	inv := w.inv
	inv.Handler = h
	out, err := w.ln.Invoke(context.Background(), inv)
	if err != nil {
		return out, h, fmt.Errorf("launch: %w", err)
	}
	return out, h, nil
}

// background runs w.try on another goroutine; the returned function waits
// for it and fails the test on error.
func (w *lower) background(t *testing.T) func() *handler.Handler {
	type res struct {
		h   *handler.Handler
		err error
	}
	done := make(chan res, 1)
	go func() { _, h, err := w.try(); done <- res{h, err} }()
	return func() *handler.Handler {
		t.Helper()
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.h
	}
}

// lastDecision returns the last decision, which must be method's, refused
// by the ledger with want.
func lastDecision(t *testing.T, h *handler.Handler, method ipc.Method, want error) handler.Answer {
	t.Helper()
	evs := h.Decisions()
	if len(evs) == 0 {
		t.Fatal("no decisions")
	}
	ev := evs[len(evs)-1]
	if ev.Method != method || ev.State != ipc.StateRefused || !errors.Is(ev.Refusal, want) {
		t.Fatalf("last decision %s %s (%v), want %s refused with %v", ev.Method, ev.State, ev.Refusal, method, want)
	}
	return ev
}

// TestStaleAttemptRefusedOnEveryMethod: the host of an attempt keeps
// talking after a newer attempt of its operation started; whichever method
// it sends next is refused with the ledger's stale-fence error, and the
// host ends refused.
func TestStaleAttemptRefusedOnEveryMethod(t *testing.T) {
	t.Parallel()
	two := map[string]any{"target": "doc-1"}
	t.Run("bootstrap", func(t *testing.T) {
		t.Parallel()
		l := openBolt(t, t.TempDir())
		old := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
		startLower(t, l, old.ln, "op", "attempt-2", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
		out, h := old.run(t)
		lastDecision(t, h, ipc.MethodBootstrap, ledger.ErrStaleFence)
		if out.Result.State != launch.StateRefused || out.Session.Frames != 1 {
			t.Fatalf("host %+v after %d frames", out.Result, out.Session.Frames)
		}
	})
	t.Run("invoke.admit", func(t *testing.T) {
		t.Parallel()
		l := openBolt(t, t.TempDir())
		old := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
		a := newAuthority()
		a.block = "admit"
		old.cfg.Authority = a
		wait := old.background(t)
		<-a.entered
		startLower(t, l, old.ln, "op", "attempt-2", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
		close(a.release)
		lastDecision(t, wait(), ipc.MethodAdmit, ledger.ErrStaleFence)
	})
	t.Run("effect.request", func(t *testing.T) {
		t.Parallel()
		l := openBolt(t, t.TempDir())
		old := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.two_effects@1.0.0", two, 2)
		a, d := newAuthority(), newDispatcher()
		a.block = "effect-1"
		old.cfg.Authority, old.cfg.Dispatcher = a, d
		wait := old.background(t)
		<-a.entered
		startLower(t, l, old.ln, "op", "attempt-2", "example.two_effects@1.0.0", two, 2)
		close(a.release)
		lastDecision(t, wait(), ipc.MethodEffect, ledger.ErrStaleFence)
		if d.total() != 0 {
			t.Fatalf("a stale attempt's effect was dispatched %d times", d.total())
		}
	})
	t.Run("result.publish", func(t *testing.T) {
		t.Parallel()
		l := openBolt(t, t.TempDir())
		old := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.two_effects@1.0.0", two, 2)
		d := newDispatcher()
		d.set("effect-2", "block")
		old.cfg.Dispatcher = d
		wait := old.background(t)
		<-d.entered
		startLower(t, l, old.ln, "op", "attempt-2", "example.two_effects@1.0.0", two, 2)
		close(d.release)
		lastDecision(t, wait(), ipc.MethodPublish, ledger.ErrStaleFence)
		// The effect consumed while the attempt was being fenced off is
		// recorded all the same (through Resolve): the truth is kept.
		view, err := l.Operation(context.Background(), scope, "op")
		if err != nil {
			t.Fatal(err)
		}
		if view.Result != nil || len(view.Effects) != 2 || view.Effects[1].State != ledger.EffectConfirmed || view.Effects[1].ReceiptID != "rcpt-effect-2" {
			t.Fatalf("ledger after the stale publish: %+v", view)
		}
	})
}

// TestBootstrapReplay: a second child presenting a bootstrap id another
// child redeemed is refused, and the first redemption stands.
func TestBootstrapReplay(t *testing.T) {
	t.Parallel()
	l := openBolt(t, t.TempDir())
	w := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
	a := newAuthority()
	a.admit = port.Refuse // the first child ends after its admission, unpublished
	w.cfg.Authority = a
	first, h1 := w.run(t)
	if evs := h1.Decisions(); len(evs) != 2 || evs[0].State != ipc.StateAllowed || first.Result.State != launch.StateRefused {
		t.Fatalf("first child: %+v, %+v", evs, first.Result)
	}
	second, h2 := w.run(t)
	lastDecision(t, h2, ipc.MethodBootstrap, ledger.ErrBootstrapRedeemed)
	if second.Process.PID == first.Process.PID || second.Result.State != launch.StateRefused {
		t.Fatalf("second child %d: %+v", second.Process.PID, second.Result)
	}
	view, err := l.Operation(context.Background(), scope, "op")
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Bootstraps) != 1 || view.Bootstraps[0].RedeemedPID != first.Process.PID || view.Bootstraps[0].RedeemedSessionID != h1.Decisions()[0].SessionID {
		t.Fatalf("bootstrap record %+v, first child %d", view.Bootstraps, first.Process.PID)
	}
}

// TestCancelSeenThroughTheLedger: a cancellation made by another
// controller (straight in the ledger, no signal in this process) is heard
// at the attempt's next request, a redelivery included.
func TestCancelSeenThroughTheLedger(t *testing.T) {
	t.Parallel()
	l := openBolt(t, t.TempDir())
	w := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.redeliver@1.0.0", map[string]any{"target": "doc-1"}, 1)
	d := newDispatcher()
	d.set("effect-1", "block")
	w.cfg.Dispatcher = d
	wait := w.background(t)
	<-d.entered
	if _, err := l.Cancel(context.Background(), scope, "op", "cancelled by another controller"); err != nil {
		t.Fatal(err)
	}
	close(d.release)
	evs := wait().Decisions()
	if len(evs) != 4 || evs[2].State != ipc.StateAllowed || !evs[3].Redelivery || evs[3].State != ipc.StateCancelled {
		t.Fatalf("decisions %+v: want the consumed effect allowed, then its redelivery cancelled", evs)
	}
	if d.count("effect-1") != 1 {
		t.Fatalf("dispatched %d times", d.count("effect-1"))
	}
}

// resultDispatcher consumes every effect and returns result as its result
// object.
type resultDispatcher struct{ result map[string]any }

func (d resultDispatcher) Dispatch(_ context.Context, x port.Dispatch) (port.Receipt, error) {
	return port.Receipt{ReceiptID: "rcpt-" + x.LogicalEffectID, Result: d.result}, nil
}

// TestEffectResultTheHostWouldRefuse: a Dispatcher's result object that the
// host's strict parser would refuse (1e20 is written 100000000000000000000,
// which it reads as an integer past 2^53) is never sent. The effect stays
// recorded as consumed, with its receipt, and the host is answered
// needs_reconciliation naming the value: a reply it can read, so the
// session goes on and ends cleanly.
func TestEffectResultTheHostWouldRefuse(t *testing.T) {
	t.Parallel()
	l := openBolt(t, t.TempDir())
	w := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	w.cfg.Dispatcher = resultDispatcher{result: map[string]any{"n": 1e20}}
	out, h := w.run(t)
	if out.SessionErr != nil {
		t.Fatalf("the session was poisoned: %v", out.SessionErr)
	}
	evs := h.Decisions()
	if len(evs) != 3 {
		t.Fatalf("decisions %+v: want bootstrap, admit and effect-1", evs)
	}
	ev := evs[2]
	if ev.Method != ipc.MethodEffect || ev.State != ipc.StateNeedsReconciliation || !ev.Dispatched ||
		!strings.Contains(ev.Reason, `receipt "rcpt-effect-1"`) || !strings.Contains(ev.Reason, "/n") {
		t.Fatalf("effect-1 decided %s %q (dispatched %v), want needs_reconciliation naming the receipt and /n", ev.State, ev.Reason, ev.Dispatched)
	}
	if ev.Effect == nil || ev.Effect.State != ledger.EffectConfirmed || ev.Effect.ReceiptID != "rcpt-effect-1" {
		t.Fatalf("effect-1 recorded as %+v, want confirmed with its receipt", ev.Effect)
	}
	if n := out.Session.States[ipc.StateNeedsReconciliation]; n != 1 || out.Session.Published {
		t.Fatalf("session: %d needs_reconciliation replies, published %v", n, out.Session.Published)
	}
	if out.Result.State != launch.StateNeedsReconciliation {
		t.Fatalf("host result %+v, want needs_reconciliation", out.Result)
	}
	view, err := l.Operation(context.Background(), scope, "op")
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Effects) != 1 || view.Effects[0].State != ledger.EffectConfirmed || view.Effects[0].ReceiptID != "rcpt-effect-1" || view.Result != nil {
		t.Fatalf("ledger: effects %+v, result %+v", view.Effects, view.Result)
	}
}

// TestAdmitRechecksTheBinding: at invoke.admit the Handler re-checks that
// the attempt's binding names the operation's capability, request digest
// and manifest digest; a binding that does not is refused before the
// Authority is asked, and nothing is admitted in the ledger.
func TestAdmitRechecksTheBinding(t *testing.T) {
	t.Parallel()
	other := canon.Digest("sha256:" + strings.Repeat("0", 64))
	for _, tt := range []struct {
		name   string
		mutate func(*ipc.AttemptBinding)
		reason string
	}{
		{"capability", func(b *ipc.AttemptBinding) { b.CapabilityID = "example.fail@1.0.0" },
			`the attempt names capability "example.fail@1.0.0", the operation "example.echo@1.0.0"`},
		{"request digest", func(b *ipc.AttemptBinding) { b.RequestDigest = other },
			"the attempt's request digest " + string(other) + " is not the operation's"},
		{"manifest digest", func(b *ipc.AttemptBinding) { b.ManifestDigest = other },
			"the attempt's manifest digest " + string(other) + " is not the operation's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := openBolt(t, t.TempDir())
			w := startLower(t, l, newLauncher(t, 0), "op", "attempt-1", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
			tt.mutate(&w.cfg.Binding)
			a := newAuthority()
			a.admit = port.Refuse // its reason would name it
			w.cfg.Authority = a
			out, h := w.run(t)
			evs := h.Decisions()
			if len(evs) != 2 || evs[0].State != ipc.StateAllowed {
				t.Fatalf("decisions %+v: want bootstrap allowed, then invoke.admit", evs)
			}
			if ev := evs[1]; ev.Method != ipc.MethodAdmit || ev.State != ipc.StateRefused || !strings.Contains(ev.Reason, tt.reason) {
				t.Fatalf("invoke.admit decided %s %q, want refused: %q", ev.State, ev.Reason, tt.reason)
			}
			if out.SessionErr != nil || out.Result.State != launch.StateRefused {
				t.Fatalf("host %+v, session %v: want refused, session ended cleanly", out.Result, out.SessionErr)
			}
			view, err := l.Operation(context.Background(), scope, "op")
			if err != nil {
				t.Fatal(err)
			}
			if len(view.Attempts) != 1 || view.Attempts[0].Admitted {
				t.Fatalf("attempts %+v: want the one attempt not admitted", view.Attempts)
			}
		})
	}
}

// TestAdmitAfterTheDeadline: an invoke.admit that reaches the Handler after
// the operation's deadline is refused with the ledger's
// ErrDeadlineExceeded, and nothing is admitted. The Handler is driven as a
// Session drives it: a launched host would be stopped by the launcher at
// the deadline, before its invoke.admit could be decided.
func TestAdmitAfterTheDeadline(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := memory.New()
	deadline := time.Now().Add(2 * time.Second).Truncate(time.Millisecond) // room for the setup on a loaded machine
	args := map[string]any{"text": "x"}
	w := startLowerUntil(t, l, nil, "op", "attempt-1", "example.echo@1.0.0", args, 0, deadline)
	h, err := handler.New(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := w.inv.Context.LaunchDigest()
	if err != nil {
		t.Fatal(err)
	}
	call := ipc.Call{Binding: w.cfg.Binding, SessionID: "session-1"}
	call.Sequence, call.Method = 1, ipc.MethodBootstrap
	d, err := h.Bootstrap(ctx, ipc.BootstrapRequest{Call: call,
		Payload: ipc.BootstrapPayload{BootstrapID: w.cfg.BootstrapID, LaunchDigest: ld, PID: os.Getpid()}})
	if err != nil || d.State != ipc.StateAllowed {
		t.Fatalf("bootstrap: %+v, %v", d, err)
	}
	// Wait for the deadline itself: the condition under test.
	<-time.After(time.Until(deadline.Add(time.Millisecond)))
	call.Sequence, call.Method = 2, ipc.MethodAdmit
	d, err = h.Admit(ctx, ipc.AdmitRequest{Call: call, Payload: ipc.AdmitPayload{Arguments: args}})
	if err != nil || d.State != ipc.StateRefused {
		t.Fatalf("invoke.admit after the deadline: %+v, %v; want refused", d, err)
	}
	lastDecision(t, h, ipc.MethodAdmit, ledger.ErrDeadlineExceeded)
	view, err := l.Operation(ctx, scope, "op")
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Attempts) != 1 || view.Attempts[0].Admitted {
		t.Fatalf("attempts %+v: want the one attempt not admitted", view.Attempts)
	}
}
