package ledgertest

// Cases for logical effects: the lifecycle, reconciliation, the
// fingerprint on every path, the budget and redelivery, also under
// concurrency.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
)

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
