package ledgertest

// Cases for bootstrap ids: issued to one attempt, redeemed exactly once.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
)

func testBootstrap(t *testing.T, l ledger.Ledger) {
	f1 := newOp(t, l, "op1", 1)
	launch := Digest("launch")
	b, err := issue(l, f1, "boot1", launch)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "issued", b, ledger.Bootstrap{BootstrapID: "boot1", AttemptID: "a1", Generation: 1, LaunchDigest: launch})
	b2, err := issue(l, f1, "boot1", launch)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "re-issued", b2, b)
	_, err = issue(l, f1, "boot1", Digest("other"))
	wantErr(t, "re-issue with another digest", err, ledger.ErrChangedInput)

	red := ledger.Redemption{BootstrapID: "boot1", LaunchDigest: launch, PID: 4242, SessionID: "sess-1"}
	wrong := red
	wrong.LaunchDigest = Digest("other")
	_, err = l.RedeemBootstrap(bg, f1, wrong)
	wantErr(t, "redeem with wrong launch digest", err, ledger.ErrChangedInput)
	missing := red
	missing.BootstrapID = "nope"
	_, err = l.RedeemBootstrap(bg, f1, missing)
	wantErr(t, "redeem unknown id", err, ledger.ErrNotFound)

	got, err := l.RedeemBootstrap(bg, f1, red)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "redeemed", got, ledger.Bootstrap{BootstrapID: "boot1", AttemptID: "a1", Generation: 1, LaunchDigest: launch, Redeemed: true, RedeemedPID: 4242, RedeemedSessionID: "sess-1"})
	// The same child and session again (a retry after an unknown outcome)
	// gets the recorded redemption; any other claimant is refused.
	again, err := l.RedeemBootstrap(bg, f1, red)
	if err != nil {
		t.Fatalf("identical retry of a redemption: %v", err)
	}
	diff(t, "redemption retried", again, got)
	for _, other := range []ledger.Redemption{
		{BootstrapID: red.BootstrapID, LaunchDigest: red.LaunchDigest, PID: 4243, SessionID: red.SessionID},
		{BootstrapID: red.BootstrapID, LaunchDigest: red.LaunchDigest, PID: red.PID, SessionID: "sess-2"},
	} {
		_, err = l.RedeemBootstrap(bg, f1, other)
		wantErr(t, fmt.Sprintf("second redemption by pid %d session %q", other.PID, other.SessionID), err, ledger.ErrBootstrapRedeemed)
	}
	// A new attempt fences the old one: redemption by the old attempt is
	// stale, and the new attempt cannot redeem the old attempt's id.
	if _, err := issue(l, f1, "boot2", launch); err != nil {
		t.Fatal(err)
	}
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	r2 := red
	r2.BootstrapID = "boot2"
	_, err = l.RedeemBootstrap(bg, f1, r2)
	wantStale(t, "redeem by fenced attempt", err)
	_, err = l.RedeemBootstrap(bg, f2, r2)
	wantStale(t, "redeem of an id issued to a fenced attempt", err)
	redeemed := map[string]bool{}
	for _, b := range mustView(t, l, scopeA, "op1").Bootstraps {
		redeemed[b.BootstrapID] = b.Redeemed
	}
	diff(t, "redeemed bootstrap ids", redeemed, map[string]bool{bootID(f1): true, "boot1": true, "boot2": false})
}

// testBootstrapReuse: a bootstrap id is one-shot and names one attempt of
// one operation. Offering it again for anything else — a later attempt of
// the same operation, an operation in the same or another scope, another
// launch digest — is ErrChangedInput, whether or not it was redeemed, and
// writes nothing.
func testBootstrapReuse(t *testing.T, l ledger.Ledger) {
	launch := Digest("launch")
	f1 := newOp(t, l, "op1", 1) // a1, admitted
	if _, err := issue(l, f1, "open", launch); err != nil {
		t.Fatal(err)
	}
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	other := newOp(t, l, "op2", 1)
	mustCreate(t, l, spec(scopeB, "op1", 1))
	otherScope := mustStart(t, l, scopeB, "op1", "a1")
	views := func() map[string]ledger.OperationView {
		return map[string]ledger.OperationView{
			"A/op1": mustView(t, l, scopeA, "op1"), "A/op2": mustView(t, l, scopeA, "op2"), "B/op1": mustView(t, l, scopeB, "op1"),
		}
	}
	before := views()
	for _, id := range []string{bootID(f1) /* redeemed */, "open" /* not redeemed */} {
		for name, f := range map[string]ledger.Fence{
			"the next attempt of its operation": f2,
			"another operation":                 other,
			"an operation in another scope":     otherScope,
		} {
			_, err := issue(l, f, id, launch)
			wantErr(t, fmt.Sprintf("issue %q to %s", id, name), err, ledger.ErrChangedInput)
		}
	}
	_, err := issue(l, f2, "open", Digest("other launch"))
	wantErr(t, "issue to the next attempt with another launch digest", err, ledger.ErrChangedInput)
	diff(t, "views after refused reuse", views(), before)
	// The id still belongs to a1, so a2 cannot redeem it either.
	_, err = l.RedeemBootstrap(bg, f2, ledger.Redemption{BootstrapID: "open", LaunchDigest: launch, PID: 9, SessionID: "s"})
	wantStale(t, "redeem an id of the fenced attempt", err)
	// Nor can another operation, which does not know the id.
	_, err = l.RedeemBootstrap(bg, other, ledger.Redemption{BootstrapID: "open", LaunchDigest: launch, PID: 9, SessionID: "s"})
	wantErr(t, "redeem another operation's id", err, ledger.ErrNotFound)
	// A fresh id for the new attempt is fine.
	if _, err := issue(l, f2, "fresh", launch); err != nil {
		t.Fatal(err)
	}
	Check(t, l, f2, other, otherScope)
}

func testRacingRedeem(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	if _, err := issue(l, f, "boot", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	const n = 16
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "boot", LaunchDigest: Digest("launch"), PID: 1000 + i, SessionID: fmt.Sprint("s", i)})
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("redeemed twice: by %d and %d", winner, i)
			}
			winner = i
		case !errors.Is(err, ledger.ErrBootstrapRedeemed):
			t.Fatalf("redemption %d: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no redemption succeeded")
	}
	for _, b := range mustView(t, l, scopeA, "op1").Bootstraps {
		if b.BootstrapID == "boot" && b.RedeemedPID != 1000+winner {
			t.Fatalf("recorded redeemer pid %d, winner was %d", b.RedeemedPID, 1000+winner)
		}
	}
}
