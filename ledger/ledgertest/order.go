package ledgertest

// Cases for protocol order: bootstrap, admission (bound to the request
// digest and the deadline), then effects and the result.

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// testOrder: bootstrap redeemed, then admit, then effects and the result,
// per attempt. Recording outcomes needs no admission.
func testOrder(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 3)
	mustCreate(t, l, sp)
	f1 := mustStart(t, l, scopeA, "op1", "a1")
	d := Digest("e")
	notAdmitted := func(f ledger.Fence, when string) {
		t.Helper()
		_, err := l.BeginEffect(bg, f, "e", d)
		wantErr(t, "BeginEffect "+when, err, ledger.ErrOutOfOrder)
		_, err = l.AcceptResult(bg, f, Digest("data"), nil)
		wantErr(t, "AcceptResult "+when, err, ledger.ErrOutOfOrder)
	}
	_, err := l.Admit(bg, f1, sp.RequestDigest)
	wantErr(t, "Admit before any bootstrap", err, ledger.ErrOutOfOrder)
	notAdmitted(f1, "before any bootstrap")
	if _, err := issue(l, f1, "b1", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	_, err = l.Admit(bg, f1, sp.RequestDigest)
	wantErr(t, "Admit before the bootstrap is redeemed", err, ledger.ErrOutOfOrder)
	notAdmitted(f1, "before admission")
	if _, err := l.RedeemBootstrap(bg, f1, ledger.Redemption{BootstrapID: "b1", LaunchDigest: Digest("launch"), PID: 5, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	notAdmitted(f1, "after the bootstrap, before admission")
	// The order check comes before the request digest check only until
	// the attempt bootstrapped; now a wrong digest is changed input.
	_, err = l.Admit(bg, f1, Digest("other"))
	wantErr(t, "Admit with another request digest", err, ledger.ErrChangedInput)
	if _, err := l.Admit(bg, f1, sp.RequestDigest); err != nil {
		t.Fatal(err)
	}
	mustBegin(t, l, f1, "e", d)
	// A new attempt starts from the beginning: a1's redemption and
	// admission do not carry over.
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	_, err = l.Admit(bg, f2, sp.RequestDigest)
	wantErr(t, "Admit of a new attempt that has not bootstrapped", err, ledger.ErrOutOfOrder)
	notAdmitted(f2, "by a new attempt") // a redelivery of e too
	// But it may record the outcome of its predecessor's effect.
	if _, err := l.MarkUnknown(bg, f2, "e", d); err != nil {
		t.Fatalf("MarkUnknown by an attempt not admitted: %v", err)
	}
	v := mustView(t, l, scopeA, "op1")
	if v.Operation.EffectsUsed != 1 || v.Result != nil || v.Attempts[1].Admitted {
		t.Fatalf("refused calls wrote something: %+v", v)
	}
	ready(t, l, f2)
	if g := mustBegin(t, l, f2, "e", d); !g.Redelivery || g.Effect.State != ledger.EffectUnknown {
		t.Fatalf("redelivery after admission = %+v", g)
	}
	Check(t, l, f2)
}

func testAdmit(t *testing.T, l ledger.Ledger) {
	mustCreate(t, l, spec(scopeA, "op1", 1))
	f := mustStart(t, l, scopeA, "op1", "a1")
	if _, err := issue(l, f, "b", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "b", LaunchDigest: Digest("launch"), PID: 3, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Admit(bg, f, Digest("other request"))
	wantErr(t, "admit with another request digest", err, ledger.ErrChangedInput)
	a, err := l.Admit(bg, f, Digest("request:op1"))
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "admitted", a, ledger.Attempt{AttemptID: "a1", Generation: 1, Admitted: true})
	a, err = l.Admit(bg, f, Digest("request:op1"))
	if err != nil || !a.Admitted {
		t.Fatalf("re-admit: %+v, %v", a, err)
	}
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	_, err = l.Admit(bg, f, Digest("request:op1"))
	wantStale(t, "admit by fenced attempt", err)
	v := mustView(t, l, scopeA, "op1")
	diff(t, "attempts", v.Attempts, []ledger.Attempt{{AttemptID: "a1", Generation: 1, Admitted: true}, {AttemptID: "a2", Generation: 2}})
	Check(t, l, f2)
}

func testDeadline(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 3)
	sp.Deadline = time.Now().Add(-time.Minute)
	mustCreate(t, l, sp)
	f := mustStart(t, l, scopeA, "op1", "a1")
	if _, err := issue(l, f, "b", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "b", LaunchDigest: Digest("launch"), PID: 3, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Admit(bg, f, sp.RequestDigest)
	wantErr(t, "admit past deadline", err, ledger.ErrDeadlineExceeded)
	// New effects past the deadline: admit and authorize one effect before
	// it passes, then wait for it. The deadline grows until admission and
	// that authorization beat it, so a slow machine costs time, never a
	// false failure.
	var late ledger.Fence
	for i, wait := 0, 50*time.Millisecond; ; i, wait = i+1, wait*2 {
		sp := spec(scopeA, fmt.Sprint("late", i), 3)
		sp.Deadline = time.Now().Add(wait)
		mustCreate(t, l, sp)
		late = mustStart(t, l, scopeA, sp.OperationID, "a1")
		err := prepare(l, late)
		if err == nil {
			_, err = l.BeginEffect(bg, late, "before", Digest("e1"))
		}
		if errors.Is(err, ledger.ErrDeadlineExceeded) && wait < time.Minute {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(sp.Deadline))
		break
	}
	_, err = l.BeginEffect(bg, late, "e1", Digest("e1"))
	wantErr(t, "new effect past deadline", err, ledger.ErrDeadlineExceeded)
	// Redeliveries and outcomes of effects authorized in time stay allowed.
	if g := mustBegin(t, l, late, "before", Digest("e1")); !g.Redelivery {
		t.Fatalf("redelivery past deadline = %+v", g)
	}
	if _, err := l.ConfirmEffect(bg, late, "before", Digest("e1"), "r"); err != nil {
		t.Fatalf("confirm past deadline: %v", err)
	}
	// A zero deadline never expires.
	sp2 := spec(scopeA, "op2", 1)
	sp2.Deadline = time.Time{}
	mustCreate(t, l, sp2)
	f2 := mustStart(t, l, scopeA, "op2", "a1")
	ready(t, l, f2)
	Check(t, l, f, f2, late)
}
