package ledgertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
)

var bg = context.Background()

func testCreateOperation(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 3)
	o := mustCreate(t, l, sp)
	want := ledger.Operation{
		Scope: sp.Scope, OperationID: "op1", CapabilityID: sp.CapabilityID,
		RequestDigest: sp.RequestDigest, ManifestDigest: sp.ManifestDigest,
		EffectBudget: 3, Deadline: sp.Deadline, State: ledger.OperationOpen,
	}
	diff(t, "created operation", o, want)
	// A deadline in another time zone is the same instant.
	sp2 := sp
	sp2.Deadline = sp.Deadline.In(time.FixedZone("x", 3600))
	diff(t, "repeated create", mustCreate(t, l, sp2), want)
	for name, mut := range map[string]func(*ledger.OperationSpec){
		"capability": func(s *ledger.OperationSpec) { s.CapabilityID = "cap.other" },
		"request":    func(s *ledger.OperationSpec) { s.RequestDigest = Digest("other") },
		"manifest":   func(s *ledger.OperationSpec) { s.ManifestDigest = Digest("other") },
		"budget":     func(s *ledger.OperationSpec) { s.EffectBudget = 4 },
		"deadline":   func(s *ledger.OperationSpec) { s.Deadline = s.Deadline.Add(time.Nanosecond) },
	} {
		s := sp
		mut(&s)
		_, err := l.CreateOperation(bg, s)
		wantErr(t, "create with changed "+name, err, ledger.ErrChangedInput)
	}
	v := mustView(t, l, scopeA, "op1")
	diff(t, "view", v, ledger.OperationView{Operation: want, Attempts: v.Attempts, Bootstraps: v.Bootstraps, Effects: v.Effects})
	if len(v.Attempts)+len(v.Bootstraps)+len(v.Effects) != 0 || v.Result != nil {
		t.Fatalf("fresh operation view has records: %+v", v)
	}
	_, err := l.Operation(bg, scopeA, "nope")
	wantErr(t, "Operation(missing)", err, ledger.ErrNotFound)
	_, err = l.StartAttempt(bg, scopeA, "nope", "a1")
	wantErr(t, "StartAttempt(missing)", err, ledger.ErrNotFound)
}

func testInvalid(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	d := Digest("x")
	long := strings.Repeat("é", protocol.MaxIdentifierRunes+1)
	bad := func(m func(*ledger.OperationSpec)) ledger.OperationSpec { s := spec(scopeA, "op2", 1); m(&s); return s }
	badFence := f
	badFence.Generation = 0
	cases := []struct {
		name string
		call func() error
	}{
		{"empty org", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.Scope.OrganizationID = "" }))
			return err
		}},
		{"long op id", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.OperationID = long }))
			return err
		}},
		{"invalid utf8", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.CapabilityID = "\xff" }))
			return err
		}},
		{"bad digest", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.RequestDigest = "sha256:XYZ" }))
			return err
		}},
		{"negative budget", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.EffectBudget = -1 }))
			return err
		}},
		{"empty attempt", func() error { _, err := l.StartAttempt(bg, scopeA, "op1", ""); return err }},
		{"zero generation", func() error { _, err := l.BeginEffect(bg, badFence, "e", d); return err }},
		{"empty effect id", func() error { _, err := l.BeginEffect(bg, f, "", d); return err }},
		{"empty receipt", func() error { _, err := l.ConfirmEffect(bg, f, "e", d, ""); return err }},
		{"bad reason", func() error { _, err := l.MarkNotConsumed(bg, f, "e", d, "because"); return err }},
		{"bad resolution", func() error {
			_, err := l.Resolve(bg, scopeA, "op1", "e", d, ledger.Resolution{State: ledger.EffectUnknown})
			return err
		}},
		{"resolution without receipt", func() error {
			_, err := l.Resolve(bg, scopeA, "op1", "e", d, ledger.Resolution{State: ledger.EffectConfirmed})
			return err
		}},
		{"zero pid", func() error {
			_, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "b", LaunchDigest: d, SessionID: "s"})
			return err
		}},
		{"bad data digest", func() error { _, err := l.AcceptResult(bg, f, "", nil); return err }},
		{"huge artifact", func() error {
			_, err := l.AcceptResult(bg, f, d, make([]byte, ledger.MaxArtifactBytes+1))
			return err
		}},
		{"empty ref", func() error { _, err := l.Artifact(bg, scopeA, ""); return err }},
		{"bad cancel reason", func() error { _, err := l.Cancel(bg, scopeA, "op1", "\xff"); return err }},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), ledger.ErrInvalid)
	}
	Check(t, l, f)
	if v := mustView(t, l, scopeA, "op1"); len(v.Effects) != 0 || v.Result != nil || v.Operation.State != ledger.OperationOpen {
		t.Fatalf("refused calls wrote something: %+v", v)
	}
}

func testAttempts(t *testing.T, l ledger.Ledger) {
	mustCreate(t, l, spec(scopeA, "op1", 1))
	f1 := mustStart(t, l, scopeA, "op1", "a1")
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	f3 := mustStart(t, l, scopeA, "op1", "a3")
	if f1.Generation != 1 || f2.Generation != 2 || f3.Generation != 3 {
		t.Fatalf("generations %d %d %d, want 1 2 3", f1.Generation, f2.Generation, f3.Generation)
	}
	diff(t, "fence", f3, ledger.Fence{Scope: scopeA, OperationID: "op1", AttemptID: "a3", Generation: 3})
	// Repeating the current start is idempotent.
	diff(t, "repeated start", mustStart(t, l, scopeA, "op1", "a3"), f3)
	// Restarting a fenced attempt is refused.
	_, err := l.StartAttempt(bg, scopeA, "op1", "a1")
	fe := wantStale(t, "restart a1", err)
	if fe.CurrentGeneration != 3 || fe.CurrentAttemptID != "a3" || fe.Presented.Generation != 1 {
		t.Fatalf("FenceError = %+v", fe)
	}
	v := mustView(t, l, scopeA, "op1")
	diff(t, "attempts", v.Attempts, []ledger.Attempt{{AttemptID: "a1", Generation: 1}, {AttemptID: "a2", Generation: 2}, {AttemptID: "a3", Generation: 3}})
	// The stale fences cannot write; the current one can.
	_, err = l.BeginEffect(bg, f2, "e1", Digest("e1"))
	fe = wantStale(t, "BeginEffect with f2", err)
	if fe.Presented != f2 || fe.CurrentGeneration != 3 {
		t.Fatalf("FenceError = %+v", fe)
	}
	ready(t, l, f3)
	mustBegin(t, l, f3, "e1", Digest("e1"))
	// A forged fence from the future is refused too.
	forged := f3
	forged.Generation = 4
	_, err = l.BeginEffect(bg, forged, "e2", Digest("e2"))
	wantStale(t, "forged generation", err)
	forged = f3
	forged.AttemptID = "a4"
	_, err = l.BeginEffect(bg, forged, "e2", Digest("e2"))
	wantStale(t, "forged attempt id", err)
	Check(t, l, f3)
}

// fencedCalls lists every fenced write, each set up to succeed with a
// current fence, so the suite can check all of them refuse a stale one.
func fencedCalls(l ledger.Ledger, req canon.Digest) map[string]func(f ledger.Fence) error {
	d := Digest("eff")
	return map[string]func(f ledger.Fence) error{
		"IssueBootstrap": func(f ledger.Fence) error {
			_, err := l.IssueBootstrap(bg, f, "boot-new", Digest("launch"))
			return err
		},
		"RedeemBootstrap": func(f ledger.Fence) error {
			_, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "boot", LaunchDigest: Digest("launch"), PID: 42, SessionID: "s"})
			return err
		},
		"Admit":         func(f ledger.Fence) error { _, err := l.Admit(bg, f, req); return err },
		"BeginEffect":   func(f ledger.Fence) error { _, err := l.BeginEffect(bg, f, "eff-new", d); return err },
		"ConfirmEffect": func(f ledger.Fence) error { _, err := l.ConfirmEffect(bg, f, "eff-c", d, "r"); return err },
		"MarkNotConsumed": func(f ledger.Fence) error {
			_, err := l.MarkNotConsumed(bg, f, "eff-n", d, ledger.ReasonRefused)
			return err
		},
		"MarkUnknown":  func(f ledger.Fence) error { _, err := l.MarkUnknown(bg, f, "eff-u", d); return err },
		"AcceptResult": func(f ledger.Fence) error { _, err := l.AcceptResult(bg, f, Digest("data"), []byte("x")); return err },
	}
}

func testStaleEverywhere(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 10)
	mustCreate(t, l, sp)
	old := mustStart(t, l, scopeA, "op1", "a1")
	cur := mustStart(t, l, scopeA, "op1", "a2")
	if _, err := l.IssueBootstrap(bg, cur, "boot", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	ready(t, l, cur)
	for _, id := range []string{"eff-c", "eff-n", "eff-u"} {
		mustBegin(t, l, cur, id, Digest("eff"))
	}
	before := mustView(t, l, scopeA, "op1")
	calls := fencedCalls(l, sp.RequestDigest)
	for name, call := range calls {
		wantStale(t, name+" with stale fence", call(old))
	}
	diff(t, "view after refused stale writes", mustView(t, l, scopeA, "op1"), before)
	// Every one of them succeeds with the current fence (AcceptResult last).
	for _, name := range []string{"IssueBootstrap", "RedeemBootstrap", "Admit", "BeginEffect", "ConfirmEffect", "MarkNotConsumed", "MarkUnknown", "AcceptResult"} {
		if err := calls[name](cur); err != nil {
			t.Fatalf("%s with current fence: %v", name, err)
		}
	}
	Check(t, l, cur)
}

func testRacingAttempts(t *testing.T, l ledger.Ledger) {
	const n = 16
	sp := spec(scopeA, "op1", n*2)
	mustCreate(t, l, sp)
	fences := make([]ledger.Fence, n)
	errs := make([]error, n)
	// Each goroutine starts its attempt, then immediately bootstraps,
	// admits and writes with it; whoever is no longer current must be
	// refused at whichever of these steps it has reached.
	writeErrs := make([]error, n)
	parallel(n, func(i int) {
		fences[i], errs[i] = l.StartAttempt(bg, scopeA, "op1", fmt.Sprintf("a%02d", i))
		if errs[i] == nil {
			if writeErrs[i] = prepare(l, fences[i]); writeErrs[i] == nil {
				_, writeErrs[i] = l.BeginEffect(bg, fences[i], fmt.Sprintf("e%02d", i), Digest("e"))
			}
		}
	})
	gens := map[int64]bool{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("StartAttempt %d: %v", i, err)
		}
		if gens[fences[i].Generation] {
			t.Fatalf("generation %d issued twice", fences[i].Generation)
		}
		gens[fences[i].Generation] = true
	}
	for g := int64(1); g <= n; g++ {
		if !gens[g] {
			t.Fatalf("generations %v, want exactly 1..%d", gens, n)
		}
	}
	v := mustView(t, l, scopeA, "op1")
	// Effects were written only by attempts current at the time; each
	// recorded effect names its attempt, and every refused write was stale.
	written := map[string]bool{}
	for _, e := range v.Effects {
		written[e.AttemptID] = true
	}
	for i, err := range writeErrs {
		switch {
		case err == nil:
			if !written[fences[i].AttemptID] {
				t.Fatalf("attempt %s: write acknowledged but not recorded", fences[i].AttemptID)
			}
		case errors.Is(err, ledger.ErrStaleFence):
			if written[fences[i].AttemptID] {
				t.Fatalf("attempt %s: write refused but recorded", fences[i].AttemptID)
			}
		default:
			t.Fatalf("attempt %s: write: %v", fences[i].AttemptID, err)
		}
	}
	// Afterwards only the newest fence writes.
	for _, f := range fences {
		_, err := l.BeginEffect(bg, f, "late", Digest("late"))
		if f.Generation == n {
			if err != nil {
				t.Fatalf("current fence: %v", err)
			}
		} else {
			wantStale(t, "late write by "+f.AttemptID, err)
		}
	}
	Check(t, l, fences[0])
}

func testBootstrap(t *testing.T, l ledger.Ledger) {
	f1 := newOp(t, l, "op1", 1)
	launch := Digest("launch")
	b, err := l.IssueBootstrap(bg, f1, "boot1", launch)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "issued", b, ledger.Bootstrap{BootstrapID: "boot1", AttemptID: "a1", Generation: 1, LaunchDigest: launch})
	b2, err := l.IssueBootstrap(bg, f1, "boot1", launch)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "re-issued", b2, b)
	_, err = l.IssueBootstrap(bg, f1, "boot1", Digest("other"))
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
	if _, err := l.IssueBootstrap(bg, f1, "boot2", launch); err != nil {
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
	if _, err := l.IssueBootstrap(bg, f1, "open", launch); err != nil {
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
			_, err := l.IssueBootstrap(bg, f, id, launch)
			wantErr(t, fmt.Sprintf("issue %q to %s", id, name), err, ledger.ErrChangedInput)
		}
	}
	_, err := l.IssueBootstrap(bg, f2, "open", Digest("other launch"))
	wantErr(t, "issue to the next attempt with another launch digest", err, ledger.ErrChangedInput)
	diff(t, "views after refused reuse", views(), before)
	// The id still belongs to a1, so a2 cannot redeem it either.
	_, err = l.RedeemBootstrap(bg, f2, ledger.Redemption{BootstrapID: "open", LaunchDigest: launch, PID: 9, SessionID: "s"})
	wantStale(t, "redeem an id of the fenced attempt", err)
	// Nor can another operation, which does not know the id.
	_, err = l.RedeemBootstrap(bg, other, ledger.Redemption{BootstrapID: "open", LaunchDigest: launch, PID: 9, SessionID: "s"})
	wantErr(t, "redeem another operation's id", err, ledger.ErrNotFound)
	// A fresh id for the new attempt is fine.
	if _, err := l.IssueBootstrap(bg, f2, "fresh", launch); err != nil {
		t.Fatal(err)
	}
	Check(t, l, f2, other, otherScope)
}

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
	if _, err := l.IssueBootstrap(bg, f1, "b1", Digest("launch")); err != nil {
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

func testRacingRedeem(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	if _, err := l.IssueBootstrap(bg, f, "boot", Digest("launch")); err != nil {
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

func testAdmit(t *testing.T, l ledger.Ledger) {
	mustCreate(t, l, spec(scopeA, "op1", 1))
	f := mustStart(t, l, scopeA, "op1", "a1")
	if _, err := l.IssueBootstrap(bg, f, "b", Digest("launch")); err != nil {
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
	if _, err := l.IssueBootstrap(bg, f, "b", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "b", LaunchDigest: Digest("launch"), PID: 3, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Admit(bg, f, sp.RequestDigest)
	wantErr(t, "admit past deadline", err, ledger.ErrDeadlineExceeded)
	// New effects past the deadline: admit before it passes, then wait for
	// it. The deadline grows until admission beats it, so a slow machine
	// costs time, never a false failure.
	var late ledger.Fence
	for i, wait := 0, 50*time.Millisecond; ; i, wait = i+1, wait*2 {
		sp := spec(scopeA, fmt.Sprint("late", i), 3)
		sp.Deadline = time.Now().Add(wait)
		mustCreate(t, l, sp)
		late = mustStart(t, l, scopeA, sp.OperationID, "a1")
		err := prepare(l, late)
		if errors.Is(err, ledger.ErrDeadlineExceeded) && wait < time.Minute {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		mustBegin(t, l, late, "before", Digest("e1"))
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

func testEffectLifecycle(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 5)
	d := Digest("charge 5 EUR")
	g := mustBegin(t, l, f, "pay", d)
	if g.Redelivery || g.Effect.State != ledger.EffectAuthorized || g.Effect.AuthorizationID == "" || g.Effect.Ordinal != 1 {
		t.Fatalf("first BeginEffect = %+v", g)
	}
	want := ledger.Effect{Scope: scopeA, OperationID: "op1", LogicalEffectID: "pay", RequestDigest: d,
		AuthorizationID: g.Effect.AuthorizationID, State: ledger.EffectAuthorized, AttemptID: "a1", Generation: 1, Ordinal: 1}
	diff(t, "authorized effect", g.Effect, want)
	again := mustBegin(t, l, f, "pay", d)
	diff(t, "redelivery", again, ledger.EffectGrant{Effect: want, Redelivery: true})

	e, err := l.ConfirmEffect(bg, f, "pay", d, "rcpt-1")
	if err != nil {
		t.Fatal(err)
	}
	want.State, want.ReceiptID = ledger.EffectConfirmed, "rcpt-1"
	diff(t, "confirmed", e, want)
	e, err = l.ConfirmEffect(bg, f, "pay", d, "rcpt-1")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "confirmed again", e, want)
	_, err = l.ConfirmEffect(bg, f, "pay", d, "rcpt-2")
	wantErr(t, "confirm with a second receipt", err, ledger.ErrInvalidTransition)
	_, err = l.MarkUnknown(bg, f, "pay", d)
	wantErr(t, "unknown after confirmed", err, ledger.ErrInvalidTransition)
	_, err = l.MarkNotConsumed(bg, f, "pay", d, ledger.ReasonRefused)
	wantErr(t, "not consumed after confirmed", err, ledger.ErrInvalidTransition)
	diff(t, "redelivery after confirm", mustBegin(t, l, f, "pay", d), ledger.EffectGrant{Effect: want, Redelivery: true})

	// not consumed
	d2 := Digest("mail")
	mustBegin(t, l, f, "mail", d2)
	e, err = l.MarkNotConsumed(bg, f, "mail", d2, ledger.ReasonWaitingApproval)
	if err != nil || e.State != ledger.EffectNotConsumed || e.Reason != ledger.ReasonWaitingApproval {
		t.Fatalf("MarkNotConsumed = %+v, %v", e, err)
	}
	if _, err := l.MarkNotConsumed(bg, f, "mail", d2, ledger.ReasonWaitingApproval); err != nil {
		t.Fatalf("repeat MarkNotConsumed: %v", err)
	}
	_, err = l.MarkNotConsumed(bg, f, "mail", d2, ledger.ReasonRefused)
	wantErr(t, "not consumed with another reason", err, ledger.ErrInvalidTransition)
	_, err = l.ConfirmEffect(bg, f, "mail", d2, "r")
	wantErr(t, "confirm after not consumed", err, ledger.ErrInvalidTransition)
	_, err = l.ConfirmEffect(bg, f, "missing", d2, "r")
	wantErr(t, "confirm unknown effect", err, ledger.ErrNotFound)

	v := mustView(t, l, scopeA, "op1")
	if v.Operation.EffectsUsed != 2 || len(v.Effects) != 2 || v.Effects[0].LogicalEffectID != "mail" {
		t.Fatalf("view = %+v", v)
	}
	u, err := l.ListUnknown(bg)
	if err != nil || len(u) != 0 {
		t.Fatalf("ListUnknown = %v, %v", u, err)
	}
}

func testUnknown(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 5)
	d := Digest("x")
	a := mustBegin(t, l, f, "e-auth", d).Effect // left authorized: a crash before the outcome
	mustBegin(t, l, f, "e-unk", d)
	u, err := l.MarkUnknown(bg, f, "e-unk", d)
	if err != nil || u.State != ledger.EffectUnknown {
		t.Fatalf("MarkUnknown = %+v, %v", u, err)
	}
	if _, err := l.MarkUnknown(bg, f, "e-unk", d); err != nil {
		t.Fatalf("repeat MarkUnknown: %v", err)
	}
	mustBegin(t, l, f, "e-done", d)
	if _, err := l.ConfirmEffect(bg, f, "e-done", d, "r"); err != nil {
		t.Fatal(err)
	}
	list, err := l.ListUnknown(bg)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ListUnknown", list, []ledger.Effect{a, u})

	// Unknown stays unknown: the fenced transitions cannot move it.
	_, err = l.ConfirmEffect(bg, f, "e-unk", d, "r")
	wantErr(t, "confirm unknown", err, ledger.ErrInvalidTransition)
	_, err = l.MarkNotConsumed(bg, f, "e-unk", d, ledger.ReasonRefused)
	wantErr(t, "not consumed from unknown", err, ledger.ErrInvalidTransition)
	// A redelivery of an unknown effect returns it as unknown.
	g := mustBegin(t, l, f, "e-unk", d)
	if !g.Redelivery || g.Effect.State != ledger.EffectUnknown {
		t.Fatalf("redelivery of unknown = %+v", g)
	}
	// Resolve works without a fence, even after a new attempt.
	mustStart(t, l, scopeA, "op1", "a2")
	r, err := l.Resolve(bg, scopeA, "op1", "e-unk", d, ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt"})
	if err != nil || r.State != ledger.EffectConfirmed || r.ReceiptID != "rcpt" || r.AuthorizationID != u.AuthorizationID {
		t.Fatalf("Resolve = %+v, %v", r, err)
	}
	if _, err := l.Resolve(bg, scopeA, "op1", "e-unk", d, ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt"}); err != nil {
		t.Fatalf("repeat Resolve: %v", err)
	}
	_, err = l.Resolve(bg, scopeA, "op1", "e-unk", d, ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
	wantErr(t, "resolve settled effect to another outcome", err, ledger.ErrInvalidTransition)
	r, err = l.Resolve(bg, scopeA, "op1", "e-auth", d, ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonCancelled})
	if err != nil || r.State != ledger.EffectNotConsumed {
		t.Fatalf("Resolve(authorized) = %+v, %v", r, err)
	}
	_, err = l.Resolve(bg, scopeB, "op1", "e-auth", d, ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonCancelled})
	wantErr(t, "resolve in another scope", err, ledger.ErrNotFound)
	list, err = l.ListUnknown(bg)
	if err != nil || len(list) != 0 {
		t.Fatalf("ListUnknown after resolve = %v, %v", list, err)
	}
	Check(t, l, f)
}

func testFingerprint(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 5)
	d, other := Digest("a"), Digest("b")
	for _, id := range []string{"c", "n", "u", "r"} {
		mustBegin(t, l, f, id, d)
	}
	before := mustView(t, l, scopeA, "op1")
	cases := map[string]func() error{
		"BeginEffect":     func() error { _, err := l.BeginEffect(bg, f, "c", other); return err },
		"ConfirmEffect":   func() error { _, err := l.ConfirmEffect(bg, f, "c", other, "r"); return err },
		"MarkNotConsumed": func() error { _, err := l.MarkNotConsumed(bg, f, "n", other, ledger.ReasonRefused); return err },
		"MarkUnknown":     func() error { _, err := l.MarkUnknown(bg, f, "u", other); return err },
		"Resolve": func() error {
			_, err := l.Resolve(bg, scopeA, "op1", "r", other, ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "x"})
			return err
		},
	}
	for name, c := range cases {
		wantErr(t, name+" with changed input", c(), ledger.ErrChangedInput)
	}
	// Also after the effect settled (the redelivery fast path).
	if _, err := l.ConfirmEffect(bg, f, "c", d, "r1"); err != nil {
		t.Fatal(err)
	}
	_, err := l.BeginEffect(bg, f, "c", other)
	wantErr(t, "BeginEffect on a confirmed effect with changed input", err, ledger.ErrChangedInput)
	_, err = l.ConfirmEffect(bg, f, "c", other, "r1")
	wantErr(t, "repeat confirm with changed input", err, ledger.ErrChangedInput)
	after := mustView(t, l, scopeA, "op1")
	if after.Operation.EffectsUsed != before.Operation.EffectsUsed {
		t.Fatalf("changed input debited the budget")
	}
}

func testBudget(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 2)
	mustBegin(t, l, f, "e1", Digest("1"))
	g2 := mustBegin(t, l, f, "e2", Digest("2"))
	if _, err := l.MarkNotConsumed(bg, f, "e2", Digest("2"), ledger.ReasonRefused); err != nil {
		t.Fatal(err)
	}
	_, err := l.BeginEffect(bg, f, "e3", Digest("3"))
	wantErr(t, "third effect", err, ledger.ErrBudgetExhausted)
	// Effects that were not consumed still count; redeliveries never do.
	if g := mustBegin(t, l, f, "e2", Digest("2")); !g.Redelivery || g.Effect.AuthorizationID != g2.Effect.AuthorizationID {
		t.Fatalf("redelivery at exhausted budget = %+v", g)
	}
	// The budget spans attempts.
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	ready(t, l, f2)
	_, err = l.BeginEffect(bg, f2, "e3", Digest("3"))
	wantErr(t, "third effect in a new attempt", err, ledger.ErrBudgetExhausted)
	if v := mustView(t, l, scopeA, "op1"); v.Operation.EffectsUsed != 2 {
		t.Fatalf("effects used = %d", v.Operation.EffectsUsed)
	}
	f0 := newOp(t, l, "zero", 0)
	_, err = l.BeginEffect(bg, f0, "e", Digest("e"))
	wantErr(t, "effect on zero budget", err, ledger.ErrBudgetExhausted)
	Check(t, l, f2, f0)
}

func testRedeliveryAcrossAttempts(t *testing.T, l ledger.Ledger) {
	f1 := newOp(t, l, "op1", 3)
	d := Digest("e")
	g1 := mustBegin(t, l, f1, "e", d)
	c1, err := l.ConfirmEffect(bg, f1, "e", d, "rcpt-1")
	if err != nil {
		t.Fatal(err)
	}
	mustBegin(t, l, f1, "pending", d)
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	ready(t, l, f2)
	g2 := mustBegin(t, l, f2, "e", d)
	diff(t, "redelivery in attempt 2", g2, ledger.EffectGrant{Effect: c1, Redelivery: true})
	if g2.Effect.AuthorizationID != g1.Effect.AuthorizationID || g2.Effect.AttemptID != "a1" {
		t.Fatalf("redelivery changed identity: %+v", g2)
	}
	// The old attempt cannot even learn about it any more.
	_, err = l.BeginEffect(bg, f1, "e", d)
	wantStale(t, "redelivery to the fenced attempt", err)
	// The new attempt may record the outcome of an effect its predecessor
	// authorized (testOrder: even before it is admitted).
	if _, err := l.MarkUnknown(bg, f2, "pending", d); err != nil {
		t.Fatal(err)
	}
	if v := mustView(t, l, scopeA, "op1"); v.Operation.EffectsUsed != 2 {
		t.Fatalf("effects used = %d, want 2", v.Operation.EffectsUsed)
	}
	Check(t, l, f2)
}

func testRacingSameEffect(t *testing.T, l ledger.Ledger) {
	const n = 32
	f := newOp(t, l, "op1", 5)
	d := Digest("same")
	grants := make([]ledger.EffectGrant, n)
	errs := make([]error, n)
	parallel(n, func(i int) { grants[i], errs[i] = l.BeginEffect(bg, f, "same", d) })
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("BeginEffect %d: %v", i, errs[i])
		}
		if !grants[i].Redelivery {
			fresh++
		}
		if grants[i].Effect != grants[0].Effect {
			t.Fatalf("racers got different effects: %+v vs %+v", grants[i].Effect, grants[0].Effect)
		}
	}
	if fresh != 1 {
		t.Fatalf("%d authorizations for one logical effect, want exactly 1", fresh)
	}
	// Racing confirmations with one receipt all succeed identically.
	effs := make([]ledger.Effect, n)
	parallel(n, func(i int) { effs[i], errs[i] = l.ConfirmEffect(bg, f, "same", d, "rcpt") })
	for i := range n {
		if errs[i] != nil || effs[i] != effs[0] {
			t.Fatalf("ConfirmEffect %d = %+v, %v", i, effs[i], errs[i])
		}
	}
	if v := mustView(t, l, scopeA, "op1"); v.Operation.EffectsUsed != 1 {
		t.Fatalf("effects used = %d, want 1", v.Operation.EffectsUsed)
	}
	Check(t, l, f)
}

func testRacingBudget(t *testing.T, l ledger.Ledger) {
	const n, budget = 40, 7
	f := newOp(t, l, "op1", budget)
	errs := make([]error, n)
	// Each racer begins its own effect twice (the second is a redelivery).
	parallel(n, func(i int) {
		id := fmt.Sprint("e", i)
		_, errs[i] = l.BeginEffect(bg, f, id, Digest(id))
		if errs[i] == nil {
			g, err := l.BeginEffect(bg, f, id, Digest(id))
			if err != nil || !g.Redelivery {
				errs[i] = fmt.Errorf("redelivery: %+v, %v", g, err)
			}
		}
	})
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ledger.ErrBudgetExhausted):
			t.Fatalf("racer %d: %v", i, err)
		}
	}
	v := mustView(t, l, scopeA, "op1")
	if ok != budget || v.Operation.EffectsUsed != budget || len(v.Effects) != budget {
		t.Fatalf("%d succeeded, %d used, %d recorded; budget %d", ok, v.Operation.EffectsUsed, len(v.Effects), budget)
	}
	Check(t, l, f)
}

func testResult(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	dd := Digest("data")
	art := []byte(`{"answer":42}`)
	r, err := l.AcceptResult(bg, f, dd, art)
	if err != nil {
		t.Fatal(err)
	}
	checkRefs(t, r.ArtifactRefs)
	if r.DataDigest != dd || r.AttemptID != "a1" || r.Generation != 1 {
		t.Fatalf("result = %+v", r)
	}
	art[0] = 'X' // the ledger keeps its own copy
	r2, err := l.AcceptResult(bg, f, dd, []byte(`{"answer":42}`))
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "repeated accept", r2, r)
	_, err = l.AcceptResult(bg, f, Digest("other"), []byte("x"))
	wantErr(t, "second result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.AcceptResult(bg, f, dd, []byte("other bytes"))
	wantErr(t, "same digest, other bytes", err, ledger.ErrChangedInput)
	a, err := l.Artifact(bg, scopeA, r.ArtifactRefs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes, []byte(`{"answer":42}`)) || a.Digest != canon.Sum(a.Bytes) || a.OperationID != "op1" || a.Scope != scopeA {
		t.Fatalf("artifact = %+v", a)
	}
	a.Bytes[0] = 'Y'
	a2, _ := l.Artifact(bg, scopeA, r.ArtifactRefs[0])
	if a2.Bytes[0] != '{' {
		t.Fatal("artifact bytes are shared with the caller")
	}
	v := mustView(t, l, scopeA, "op1")
	if v.Operation.State != ledger.OperationCompleted || v.Result == nil {
		t.Fatalf("view = %+v", v)
	}
	diff(t, "view result", *v.Result, r)
	_, err = l.StartAttempt(bg, scopeA, "op1", "a2")
	wantErr(t, "new attempt after result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.Cancel(bg, scopeA, "op1", "late")
	wantErr(t, "cancel after result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.BeginEffect(bg, f, "late", Digest("late"))
	wantErr(t, "effect after result", err, ledger.ErrResultAlreadyAccepted)
	// Empty artifacts are fine.
	f2 := newOp(t, l, "op2", 0)
	r3, err := l.AcceptResult(bg, f2, Digest("empty"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := l.Artifact(bg, scopeA, r3.ArtifactRefs[0]); err != nil || len(a.Bytes) != 0 {
		t.Fatalf("empty artifact = %+v, %v", a, err)
	}
	Check(t, l, f, f2)
}

func testArtifactScope(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 0)
	r, err := l.AcceptResult(bg, f, Digest("d"), []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	ref := r.ArtifactRefs[0]
	for _, s := range []ledger.Scope{scopeB, scopeC} {
		_, err := l.Artifact(bg, s, ref)
		wantErr(t, fmt.Sprintf("artifact from %v", s), err, ledger.ErrOutOfScope)
	}
	_, err = l.Artifact(bg, scopeA, ref+"x")
	wantErr(t, "unknown ref", err, ledger.ErrNotFound)
	if _, err := l.Artifact(bg, scopeA, ref); err != nil {
		t.Fatal(err)
	}
}

func testCancel(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 5)
	mustCreate(t, l, sp)
	f := mustStart(t, l, scopeA, "op1", "a1")
	if _, err := l.IssueBootstrap(bg, f, "boot", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	ready(t, l, f)
	d := Digest("e")
	auth := mustBegin(t, l, f, "e", d)
	o, err := l.Cancel(bg, scopeA, "op1", "user asked")
	if err != nil || o.State != ledger.OperationCancelled || o.CancelReason != "user asked" {
		t.Fatalf("Cancel = %+v, %v", o, err)
	}
	o, err = l.Cancel(bg, scopeA, "op1", "again")
	if err != nil || o.CancelReason != "user asked" {
		t.Fatalf("second Cancel = %+v, %v", o, err)
	}
	refusals := map[string]func() error{
		"StartAttempt":   func() error { _, err := l.StartAttempt(bg, scopeA, "op1", "a2"); return err },
		"IssueBootstrap": func() error { _, err := l.IssueBootstrap(bg, f, "boot2", Digest("launch")); return err },
		"RedeemBootstrap": func() error {
			_, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "boot", LaunchDigest: Digest("launch"), PID: 1, SessionID: "s"})
			return err
		},
		"Admit":        func() error { _, err := l.Admit(bg, f, sp.RequestDigest); return err },
		"BeginEffect":  func() error { _, err := l.BeginEffect(bg, f, "new", d); return err },
		"AcceptResult": func() error { _, err := l.AcceptResult(bg, f, Digest("data"), nil); return err },
	}
	for name, c := range refusals {
		wantErr(t, name+" after cancel", c(), ledger.ErrCancelled)
	}
	// The truth about an effect already authorized is still recorded.
	if g := mustBegin(t, l, f, "e", d); !g.Redelivery || g.Effect.AuthorizationID != auth.Effect.AuthorizationID {
		t.Fatalf("redelivery after cancel = %+v", g)
	}
	if _, err := l.ConfirmEffect(bg, f, "e", d, "rcpt"); err != nil {
		t.Fatalf("confirm after cancel: %v", err)
	}
	_, err = l.Cancel(bg, scopeA, "missing", "")
	wantErr(t, "cancel missing", err, ledger.ErrNotFound)
	Check(t, l, f)
}

func testScopes(t *testing.T, l ledger.Ledger) {
	fa := newOp(t, l, "op", 1)
	mustCreate(t, l, spec(scopeB, "op", 1))
	fb := mustStart(t, l, scopeB, "op", "a1")
	ready(t, l, fb)
	if fa.Generation != 1 || fb.Generation != 1 {
		t.Fatalf("generations %d %d", fa.Generation, fb.Generation)
	}
	ga := mustBegin(t, l, fa, "e", Digest("a"))
	gb := mustBegin(t, l, fb, "e", Digest("b")) // same ids, other scope: a new effect
	if gb.Redelivery || ga.Effect.AuthorizationID == gb.Effect.AuthorizationID {
		t.Fatalf("scopes share effects: %+v %+v", ga, gb)
	}
	// A fence is only valid in its own scope.
	cross := fa
	cross.Scope = scopeC
	_, err := l.BeginEffect(bg, cross, "e", Digest("a"))
	wantErr(t, "fence in a scope without the operation", err, ledger.ErrNotFound)
	Check(t, l, fa, fb)
}

func testContextDone(t *testing.T, l ledger.Ledger) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := l.CreateOperation(ctx, spec(scopeA, "op1", 1))
	wantErr(t, "CreateOperation with a cancelled context", err, context.Canceled)
	_, err = l.Operation(ctx, scopeA, "op1")
	wantErr(t, "Operation with a cancelled context", err, context.Canceled)
	// A call refused before it started writes nothing.
	_, err = l.Operation(bg, scopeA, "op1")
	wantErr(t, "Operation", err, ledger.ErrNotFound)
}

func testClosed(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	if err := l.Close(bg); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(bg); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"CreateOperation": func() error { _, err := l.CreateOperation(bg, spec(scopeA, "op2", 1)); return err },
		"StartAttempt":    func() error { _, err := l.StartAttempt(bg, scopeA, "op1", "a2"); return err },
		"BeginEffect":     func() error { _, err := l.BeginEffect(bg, f, "e", Digest("e")); return err },
		"Operation":       func() error { _, err := l.Operation(bg, scopeA, "op1"); return err },
		"ListUnknown":     func() error { _, err := l.ListUnknown(bg); return err },
		"Artifact":        func() error { _, err := l.Artifact(bg, scopeA, "x"); return err },
		"ListOperations":  func() error { _, err := l.ListOperations(bg, ledger.OperationQuery{}); return err },
		"RecordAttempt":   func() error { _, err := l.RecordAttempt(bg, f, sampleEvidence("failed")); return err },
		"Evidence":        func() error { _, err := l.Evidence(bg, scopeA, "op1"); return err },
	}
	for name, c := range calls {
		wantErr(t, name+" after Close", c(), ledger.ErrClosed)
	}
	// Concurrent Close calls are safe too.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Close(bg) }()
	}
	wg.Wait()
}

// manyEffectIDs are 40 logical effect ids in no particular order, some of
// 200 code points, so that a backend that stages or pages an operation's
// effects (ledger/bolt moves them to an index in bulk) crosses its bounds
// several times within one operation.
func manyEffectIDs() []string {
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%02d", (i*17)%len(ids))
		if i%7 == 3 {
			ids[i] += "-" + strings.Repeat("é", 200)
		}
	}
	return ids
}

// testManyEffects: one operation with many effects, interleaved with
// another operation's, keeps every effect findable (redelivery, outcome
// calls, changed input), ordered by id in its view, and listed by
// ListUnknown exactly while unsettled.
func testManyEffects(t *testing.T, l ledger.Ledger) {
	ids := manyEffectIDs()
	f := newOp(t, l, "op1", int64(len(ids)))
	g := newOp(t, l, "op2", int64(len(ids)))
	grants := map[string]ledger.EffectGrant{}
	for i, id := range ids {
		grants[id] = mustBegin(t, l, f, id, Digest(id))
		if gr := mustBegin(t, l, g, id, Digest("op2"+id)); gr.Effect.Ordinal != int64(i+1) {
			t.Fatalf("op2 effect %q ordinal = %d, want %d", id, gr.Effect.Ordinal, i+1)
		}
	}
	_, err := l.BeginEffect(bg, f, "one-too-many", Digest("x"))
	wantErr(t, "effect past the budget", err, ledger.ErrBudgetExhausted)
	want := map[string]ledger.Effect{}
	for i, id := range ids {
		e := grants[id].Effect
		if e.Ordinal != int64(i+1) {
			t.Fatalf("effect %q ordinal = %d, want %d", id, e.Ordinal, i+1)
		}
		var err error
		switch i % 4 {
		case 0:
			e, err = l.ConfirmEffect(bg, f, id, Digest(id), "rcpt-"+id)
		case 1:
			e, err = l.MarkNotConsumed(bg, f, id, Digest(id), ledger.ReasonRefused)
		case 2:
			e, err = l.MarkUnknown(bg, f, id, Digest(id))
		}
		if err != nil {
			t.Fatalf("outcome of %q: %v", id, err)
		}
		want[id] = e
		// Redelivery answers the recorded effect, whichever its state.
		diff(t, "redelivery of "+id, mustBegin(t, l, f, id, Digest(id)), ledger.EffectGrant{Effect: e, Redelivery: true})
		_, err = l.ConfirmEffect(bg, f, id, Digest("other"), "rcpt")
		wantErr(t, "confirm of "+id+" with another digest", err, ledger.ErrChangedInput)
	}
	v := mustView(t, l, scopeA, "op1")
	if len(v.Effects) != len(ids) || v.Operation.EffectsUsed != int64(len(ids)) {
		t.Fatalf("view has %d effects, %d used; want %d", len(v.Effects), v.Operation.EffectsUsed, len(ids))
	}
	for i, e := range v.Effects {
		if i > 0 && v.Effects[i-1].LogicalEffectID >= e.LogicalEffectID {
			t.Fatalf("view effects not ordered by id: %q before %q", v.Effects[i-1].LogicalEffectID, e.LogicalEffectID)
		}
		diff(t, "view of "+e.LogicalEffectID, e, want[e.LogicalEffectID])
	}
	unknown, err := l.ListUnknown(bg)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range unknown {
		if e.OperationID == "op1" {
			got = append(got, e.LogicalEffectID)
		}
	}
	var wantIDs []string
	for i, id := range ids {
		if i%4 >= 2 {
			wantIDs = append(wantIDs, id)
		}
	}
	slices.Sort(wantIDs)
	diff(t, "ListUnknown of op1", got, wantIDs)
	if len(unknown) != len(wantIDs)+len(ids) {
		t.Fatalf("ListUnknown has %d effects, want %d", len(unknown), len(wantIDs)+len(ids))
	}
	Check(t, l, f, g)
}
