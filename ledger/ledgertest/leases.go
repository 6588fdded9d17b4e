package ledgertest

// Cases for controller leases (ledger.Lease): acquisition, renewal and
// release; attempts and effects that carry their controller; in-flight
// effects that Resolve refuses while their controller is live; takeover of
// orphaned attempts only; and refusals once a lease has expired.
//
// Expiry is by the store's clock. The cases that need an expired lease
// renew it with shortTTL and then sleep 3×shortTTL: the only thing they
// assume about time is that the lease has expired by then, never how fast
// anything ran. Every other lease lives for longTTL, far beyond any test.

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

const (
	shortTTL = 150 * time.Millisecond
	longTTL  = 10 * time.Minute
)

func mustAcquire(t testing.TB, l ledger.Ledger, id string, ttl time.Duration) ledger.Lease {
	t.Helper()
	ls, err := l.AcquireLease(bg, id, ttl)
	if err != nil {
		t.Fatalf("AcquireLease(%q, %v): %v", id, ttl, err)
	}
	if ls.ControllerID != id || ls.TTL != ttl || !ls.Live || ls.Released || ls.Expires.Before(ls.Acquired) {
		t.Fatalf("AcquireLease(%q, %v) = %+v", id, ttl, ls)
	}
	return ls
}

func mustRelease(t testing.TB, l ledger.Ledger, id string) ledger.Lease {
	t.Helper()
	ls, err := l.ReleaseLease(bg, id)
	if err != nil {
		t.Fatalf("ReleaseLease(%q): %v", id, err)
	}
	if !ls.Released || ls.Live {
		t.Fatalf("ReleaseLease(%q) = %+v", id, ls)
	}
	return ls
}

// expire renews id's lease with shortTTL and sleeps until it has expired.
func expire(t testing.TB, l ledger.Ledger, id string) {
	t.Helper()
	if _, err := l.RenewLease(bg, id, shortTTL); err != nil {
		t.Fatalf("RenewLease(%q, %v): %v", id, shortTTL, err)
	}
	time.Sleep(3 * shortTTL)
}

// wantLease checks that err is a *ledger.LeaseError wrapping sentinel for
// controller id, from method op.
func wantLease(t testing.TB, what string, err, sentinel error, op, id string) *ledger.LeaseError {
	t.Helper()
	var le *ledger.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, sentinel) {
		t.Fatalf("%s: err = %v, want a *ledger.LeaseError wrapping %v", what, err, sentinel)
	}
	if le.Op != op || le.ControllerID != id {
		t.Fatalf("%s: %+v, want op %q and controller %q", what, le, op, id)
	}
	return le
}

func leaseOf(t testing.TB, l ledger.Ledger, id string) ledger.Lease {
	t.Helper()
	all, err := l.Leases(bg)
	if err != nil {
		t.Fatalf("Leases: %v", err)
	}
	for _, ls := range all {
		if ls.ControllerID == id {
			return ls
		}
	}
	t.Fatalf("Leases has no lease of %q: %+v", id, all)
	return ledger.Lease{}
}

// ownedLaunch is launchOf for an attempt owned by controller c, of an
// operation with a budget of 5.
func ownedLaunch(s ledger.Scope, op, attempt string, gen int64, c string) ledger.AttemptLaunch {
	a := launchOf(s, op, attempt, gen)
	a.Operation.EffectBudget = 5
	a.ControllerID = c
	return a
}

// launchAdmitted launches a (new operation or next attempt), redeems its
// bootstrap id and admits it.
func launchAdmitted(t testing.TB, l ledger.Ledger, a ledger.AttemptLaunch) ledger.Fence {
	t.Helper()
	f := mustLaunch(t, l, a)
	admitLaunched(t, l, a)
	return f
}

func effectIDs(es []ledger.Effect) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, fmt.Sprintf("%s/%s/%s", e.Scope.OrganizationID, e.OperationID, e.LogicalEffectID))
	}
	return out
}

func mustList(t testing.TB, what string, list func() ([]ledger.Effect, error)) []string {
	t.Helper()
	es, err := list()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return effectIDs(es)
}

func orphaned(t testing.TB, l ledger.Ledger) []string {
	t.Helper()
	ops, err := l.ListOperations(bg, ledger.OperationQuery{Orphaned: true})
	if err != nil {
		t.Fatalf("ListOperations(Orphaned): %v", err)
	}
	out := []string{}
	for _, o := range ops {
		out = append(out, fmt.Sprintf("%s/%s", o.Scope.OrganizationID, o.OperationID))
	}
	return out
}

// testLeases: acquire, repeat, renew, release, and every refusal of the
// lease methods, expiry included.
func testLeases(t *testing.T, l ledger.Ledger) {
	if all, err := l.Leases(bg); err != nil || len(all) != 0 {
		t.Fatalf("Leases of an empty ledger = %+v, %v", all, err)
	}
	c1 := mustAcquire(t, l, "c1", longTTL)
	if c1.Renewals != 0 {
		t.Fatalf("a new lease has %d renewals", c1.Renewals)
	}
	// A lost reply is repeated: the same lease, unchanged.
	diff(t, "repeated AcquireLease", mustAcquire(t, l, "c1", longTTL), c1)
	_, err := l.AcquireLease(bg, "c1", 2*longTTL)
	wantLease(t, "AcquireLease of a live id with another ttl", err, ledger.ErrLeaseHeld, "AcquireLease", "c1")
	diff(t, "Leases after the refusal", leaseOf(t, l, "c1"), c1)

	r1, err := l.RenewLease(bg, "c1", 2*longTTL)
	if err != nil {
		t.Fatalf("RenewLease: %v", err)
	}
	if r1.Renewals != 1 || r1.TTL != 2*longTTL || !r1.Live || !r1.Expires.After(c1.Expires) || !r1.Acquired.Equal(c1.Acquired) {
		t.Fatalf("RenewLease = %+v after %+v", r1, c1)
	}
	diff(t, "Leases after the renewal", leaseOf(t, l, "c1"), r1)
	_, err = l.RenewLease(bg, "nobody", longTTL)
	wantErr(t, "RenewLease of a controller never registered", err, ledger.ErrNotFound)
	_, err = l.ReleaseLease(bg, "nobody")
	wantErr(t, "ReleaseLease of a controller never registered", err, ledger.ErrNotFound)

	mustAcquire(t, l, "c0", longTTL)
	all, err := l.Leases(bg)
	if err != nil {
		t.Fatal(err)
	}
	if ids := []string{all[0].ControllerID, all[len(all)-1].ControllerID}; len(all) != 2 || ids[0] != "c0" || ids[1] != "c1" {
		t.Fatalf("Leases = %+v, want c0 then c1", all)
	}

	rel := mustRelease(t, l, "c1")
	if rel.Renewals != 1 || !rel.Acquired.Equal(c1.Acquired) {
		t.Fatalf("ReleaseLease = %+v", rel)
	}
	diff(t, "repeated ReleaseLease", mustRelease(t, l, "c1"), rel)
	diff(t, "Leases after the release", leaseOf(t, l, "c1"), rel)
	_, err = l.RenewLease(bg, "c1", longTTL)
	wantLease(t, "RenewLease of a released lease", err, ledger.ErrLeaseExpired, "RenewLease", "c1")
	_, err = l.AcquireLease(bg, "c1", 2*longTTL)
	wantLease(t, "AcquireLease of a released id", err, ledger.ErrLeaseExpired, "AcquireLease", "c1")

	// Expiry by time: never renewed again, the id never reused.
	mustAcquire(t, l, "c-short", shortTTL)
	time.Sleep(3 * shortTTL)
	if ls := leaseOf(t, l, "c-short"); ls.Live || ls.Released {
		t.Fatalf("lease of %v after 3×ttl: %+v, want expired, not released", shortTTL, ls)
	}
	_, err = l.RenewLease(bg, "c-short", shortTTL)
	wantLease(t, "RenewLease after expiry", err, ledger.ErrLeaseExpired, "RenewLease", "c-short")
	_, err = l.AcquireLease(bg, "c-short", shortTTL)
	wantLease(t, "AcquireLease after expiry, same ttl", err, ledger.ErrLeaseExpired, "AcquireLease", "c-short")
	if ls := mustRelease(t, l, "c-short"); ls.Renewals != 0 {
		t.Fatalf("release of an expired lease = %+v", ls)
	}

	// Malformed arguments.
	f := newOp(t, l, "op1", 1)
	bad := launchOf(scopeA, "op9", "a1", 1)
	bad.ControllerID = "\xff"
	for name, call := range map[string]func() error{
		"empty controller":    func() error { _, err := l.AcquireLease(bg, "", longTTL); return err },
		"zero ttl":            func() error { _, err := l.AcquireLease(bg, "c2", 0); return err },
		"negative ttl":        func() error { _, err := l.AcquireLease(bg, "c2", -time.Second); return err },
		"ttl past the max":    func() error { _, err := l.AcquireLease(bg, "c2", ledger.MaxLeaseTTL+1); return err },
		"renew with bad ttl":  func() error { _, err := l.RenewLease(bg, "c0", 0); return err },
		"renew empty id":      func() error { _, err := l.RenewLease(bg, "", longTTL); return err },
		"release empty id":    func() error { _, err := l.ReleaseLease(bg, ""); return err },
		"launch bad owner id": func() error { _, err := l.LaunchAttempt(bg, bad); return err },
		"takeover own attempt": func() error {
			_, err := l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: f.AttemptID, ControllerID: "c0"})
			return err
		},
		"takeover empty taker": func() error {
			_, err := l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: "a2"})
			return err
		},
		"takeover bad fence": func() error {
			g := f
			g.Generation = 0
			_, err := l.TakeOver(bg, ledger.Takeover{From: g, AttemptID: "a2", ControllerID: "c0"})
			return err
		},
	} {
		wantErr(t, name, call(), ledger.ErrInvalid)
	}
	if _, err := l.Operation(bg, scopeA, "op9"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a malformed launch wrote its operation: %v", err)
	}
	if ls := leaseOf(t, l, "c0"); ls.Renewals != 0 || !ls.Live {
		t.Fatalf("a refused renewal changed the lease: %+v", ls)
	}
	if v := mustView(t, l, scopeA, "op1"); len(v.Attempts) != 1 {
		t.Fatalf("refused takeovers wrote attempts: %+v", v.Attempts)
	}
	Check(t, l, f)
}

// testOwnership: attempts and the effects they authorize carry their
// controller; an authorized effect is in flight under a live controller,
// unknown otherwise; ListOperations(Orphaned) finds the operations whose
// current attempt has no live controller.
func testOwnership(t *testing.T, l ledger.Ledger) {
	mustAcquire(t, l, "c1", longTTL)
	mustAcquire(t, l, "c2", longTTL)
	a1 := ownedLaunch(scopeA, "op1", "a1", 1, "c1")
	f1 := launchAdmitted(t, l, a1)
	g := mustBegin(t, l, f1, "e1", Digest("e1"))
	if g.Effect.ControllerID != "c1" || g.Effect.State != ledger.EffectAuthorized {
		t.Fatalf("BeginEffect under c1 = %+v", g.Effect)
	}
	v := mustView(t, l, scopeA, "op1")
	if v.Operation.CurrentControllerID != "c1" || len(v.Attempts) != 1 || v.Attempts[0].ControllerID != "c1" || v.Effects[0].ControllerID != "c1" {
		t.Fatalf("view of an attempt launched by c1: %+v", v)
	}
	// A redelivery returns the record, controller included.
	diff(t, "redelivery", mustBegin(t, l, f1, "e1", Digest("e1")), ledger.EffectGrant{Effect: g.Effect, Redelivery: true})

	// An operation of the old kind: started without a controller, its
	// authorized effect is unknown at once.
	f2 := newOp(t, l, "op2", 1)
	if e := mustBegin(t, l, f2, "e1", Digest("e1")).Effect; e.ControllerID != "" {
		t.Fatalf("effect of an attempt without a controller names %q", e.ControllerID)
	}
	mustCreate(t, l, spec(scopeA, "op3", 1)) // never started: nothing to take over

	diff(t, "ListUnknown", mustList(t, "ListUnknown", func() ([]ledger.Effect, error) { return l.ListUnknown(bg) }), []string{"org-a/op2/e1"})
	diff(t, "ListInFlight", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{"org-a/op1/e1"})
	diff(t, "orphaned operations", orphaned(t, l), []string{"org-a/op2"})

	// Settled effects are neither.
	mustBegin(t, l, f1, "e2", Digest("e2"))
	if _, err := l.ConfirmEffect(bg, f1, "e2", Digest("e2"), "r2"); err != nil {
		t.Fatal(err)
	}
	diff(t, "ListInFlight after a confirmation", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{"org-a/op1/e1"})

	// The attempt's owner is part of its record: another controller's
	// launch of it is changed input, and writes nothing.
	_, err := l.LaunchAttempt(bg, ownedLaunch(scopeA, "op1", "a1", 1, "c2"))
	wantErr(t, "LaunchAttempt of c1's attempt for c2", err, ledger.ErrChangedInput)
	_, err = l.LaunchAttempt(bg, ownedLaunch(scopeA, "op1", "a1", 1, ""))
	wantErr(t, "LaunchAttempt of c1's attempt without a controller", err, ledger.ErrChangedInput)
	mustLaunch(t, l, a1) // the owner's repeat
	// A controller that never registered launches nothing.
	_, err = l.LaunchAttempt(bg, ownedLaunch(scopeB, "op1", "a1", 1, "c-none"))
	if le := wantLease(t, "LaunchAttempt for an unregistered controller", err, ledger.ErrLeaseExpired, "LaunchAttempt", "c-none"); !le.Expires.IsZero() {
		t.Fatalf("an unregistered controller's lease error names expiry %v", le.Expires)
	}
	_, err = l.Operation(bg, scopeB, "op1")
	wantErr(t, "the operation of a refused launch", err, ledger.ErrNotFound)

	// The current controller follows the current attempt.
	f1b := mustStart(t, l, scopeA, "op1", "a2")
	if v := mustView(t, l, scopeA, "op1"); v.Operation.CurrentControllerID != "" || v.Attempts[1].ControllerID != "" {
		t.Fatalf("after StartAttempt: %+v", v)
	}
	diff(t, "orphaned operations after StartAttempt", orphaned(t, l), []string{"org-a/op1", "org-a/op2"})
	ready(t, l, f1b)
	if e := mustBegin(t, l, f1b, "e3", Digest("e3")).Effect; e.ControllerID != "" {
		t.Fatalf("effect of the started attempt names %q", e.ControllerID)
	}
	mustLaunch(t, l, ownedLaunch(scopeA, "op1", "a3", 3, "c2"))
	if v := mustView(t, l, scopeA, "op1"); v.Operation.CurrentControllerID != "c2" {
		t.Fatalf("after c2's launch: %+v", v.Operation)
	}
	diff(t, "orphaned operations after c2's launch", orphaned(t, l), []string{"org-a/op2"})
	// e1 stays c1's: in flight while c1 lives, though its attempt is fenced.
	diff(t, "ListInFlight", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{"org-a/op1/e1"})

	// Release: c1's effect is unknown, c2's operation orphaned.
	mustRelease(t, l, "c1")
	mustRelease(t, l, "c2")
	diff(t, "ListUnknown after the releases", mustList(t, "ListUnknown", func() ([]ledger.Effect, error) { return l.ListUnknown(bg) }),
		[]string{"org-a/op1/e1", "org-a/op1/e3", "org-a/op2/e1"})
	diff(t, "ListInFlight after the releases", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{})
	diff(t, "orphaned operations after the releases", orphaned(t, l), []string{"org-a/op1", "org-a/op2"})
	// Orphaned keeps open operations only, and combines with the query.
	if _, err := l.Cancel(bg, scopeA, "op2", "stop"); err != nil {
		t.Fatal(err)
	}
	diff(t, "orphaned operations after a cancellation", orphaned(t, l), []string{"org-a/op1"})
	ops, err := l.ListOperations(bg, ledger.OperationQuery{Orphaned: true, Scope: scopeB})
	if err != nil || len(ops) != 0 {
		t.Fatalf("orphaned operations of another scope = %+v, %v", ops, err)
	}
	Check(t, l, f1, f2)
}

// testResolveInFlight is the race of issue 22: while a live controller
// dispatches an authorized effect, Resolve(NotConsumed) is refused, naming
// the controller; the owner's confirmation lands; the effect ends
// confirmed. Once the controller is gone (released, or expired), Resolve
// settles its effects.
func testResolveInFlight(t *testing.T, l ledger.Ledger) {
	c1 := mustAcquire(t, l, "c1", longTTL)
	f := launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "a1", 1, "c1"))
	mustBegin(t, l, f, "e1", Digest("e1"))
	notConsumed := ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}
	_, err := l.Resolve(bg, scopeA, "op1", "e1", Digest("e1"), notConsumed)
	if le := wantLease(t, "Resolve of an effect in flight", err, ledger.ErrInFlight, "Resolve", "c1"); le.Expires.Before(c1.Expires) {
		t.Fatalf("the in-flight error names expiry %v, the lease %v", le.Expires, c1.Expires)
	}
	_, err = l.Resolve(bg, scopeA, "op1", "e1", Digest("e1"), ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "r"})
	wantErr(t, "Resolve(Confirmed) of an effect in flight", err, ledger.ErrInFlight)
	// The fingerprint is checked first.
	_, err = l.Resolve(bg, scopeA, "op1", "e1", Digest("other"), notConsumed)
	wantErr(t, "Resolve with another digest", err, ledger.ErrChangedInput)
	e, err := l.ConfirmEffect(bg, f, "e1", Digest("e1"), "receipt-1")
	if err != nil {
		t.Fatalf("the owner's ConfirmEffect after the refused Resolve: %v", err)
	}
	if e.State != ledger.EffectConfirmed || e.ReceiptID != "receipt-1" || e.ControllerID != "c1" {
		t.Fatalf("ConfirmEffect = %+v", e)
	}
	_, err = l.Resolve(bg, scopeA, "op1", "e1", Digest("e1"), notConsumed)
	wantErr(t, "Resolve(NotConsumed) of the confirmed effect", err, ledger.ErrInvalidTransition)
	if got, err := l.Resolve(bg, scopeA, "op1", "e1", Digest("e1"), ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "receipt-1"}); err != nil || got != e {
		t.Fatalf("Resolve to the recorded outcome = %+v, %v; want %+v", got, err, e)
	}
	// An unknown effect is no longer in flight: it resolves as before.
	mustBegin(t, l, f, "e2", Digest("e2"))
	if _, err := l.MarkUnknown(bg, f, "e2", Digest("e2")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resolve(bg, scopeA, "op1", "e2", Digest("e2"), notConsumed); err != nil {
		t.Fatalf("Resolve of an unknown effect under a live controller: %v", err)
	}
	// Released: the authorized effect is unknown and Resolve settles it.
	mustBegin(t, l, f, "e3", Digest("e3"))
	mustRelease(t, l, "c1")
	diff(t, "ListUnknown after the release", mustList(t, "ListUnknown", func() ([]ledger.Effect, error) { return l.ListUnknown(bg) }), []string{"org-a/op1/e3"})
	if e, err := l.Resolve(bg, scopeA, "op1", "e3", Digest("e3"), notConsumed); err != nil || e.State != ledger.EffectNotConsumed {
		t.Fatalf("Resolve after the release = %+v, %v", e, err)
	}

	// Expired mid-dispatch: the same, by time.
	mustAcquire(t, l, "c2", longTTL)
	f2 := launchAdmitted(t, l, ownedLaunch(scopeA, "op2", "a1", 1, "c2"))
	mustBegin(t, l, f2, "e1", Digest("e1"))
	_, err = l.Resolve(bg, scopeA, "op2", "e1", Digest("e1"), notConsumed)
	wantErr(t, "Resolve under c2", err, ledger.ErrInFlight)
	expire(t, l, "c2")
	diff(t, "ListInFlight after expiry", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{})
	diff(t, "ListUnknown after expiry", mustList(t, "ListUnknown", func() ([]ledger.Effect, error) { return l.ListUnknown(bg) }), []string{"org-a/op2/e1"})
	if e, err := l.Resolve(bg, scopeA, "op2", "e1", Digest("e1"), ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "r"}); err != nil || e.State != ledger.EffectConfirmed {
		t.Fatalf("Resolve after expiry = %+v, %v", e, err)
	}
	Check(t, l, f, f2)
}

// testExpiredRefused: once an attempt's controller's lease has expired,
// the attempt gets no new effect (redeliveries still answer), and the
// controller launches nothing and takes nothing over.
func testExpiredRefused(t *testing.T, l ledger.Ledger) {
	mustAcquire(t, l, "c1", longTTL)
	mustAcquire(t, l, "c2", longTTL)
	f := launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "a1", 1, "c1"))
	g := mustBegin(t, l, f, "e1", Digest("e1"))
	orphan := newOp(t, l, "op2", 1)
	expire(t, l, "c1")
	before := mustView(t, l, scopeA, "op1")

	_, err := l.BeginEffect(bg, f, "e2", Digest("e2"))
	wantLease(t, "BeginEffect of a new effect after the lease expired", err, ledger.ErrLeaseExpired, "BeginEffect", "c1")
	diff(t, "redelivery after the lease expired", mustBegin(t, l, f, "e1", Digest("e1")), ledger.EffectGrant{Effect: g.Effect, Redelivery: true})
	// The fence is checked before the lease, and the order before it too.
	_, err = l.BeginEffect(bg, ledger.Fence{Scope: scopeA, OperationID: "op1", AttemptID: "a1", Generation: 7}, "e2", Digest("e2"))
	wantStale(t, "BeginEffect with a stale fence", err)
	diff(t, "view after refused effects", mustView(t, l, scopeA, "op1"), before)

	_, err = l.LaunchAttempt(bg, ownedLaunch(scopeA, "op1", "a2", 2, "c1"))
	wantLease(t, "LaunchAttempt for an expired controller", err, ledger.ErrLeaseExpired, "LaunchAttempt", "c1")
	_, err = l.LaunchAttempt(bg, ownedLaunch(scopeA, "op3", "a1", 1, "c1"))
	wantLease(t, "LaunchAttempt of a new operation for an expired controller", err, ledger.ErrLeaseExpired, "LaunchAttempt", "c1")
	_, err = l.Operation(bg, scopeA, "op3")
	wantErr(t, "the operation of the refused launch", err, ledger.ErrNotFound)
	_, err = l.TakeOver(bg, ledger.Takeover{From: orphan, AttemptID: "t2", ControllerID: "c1"})
	wantLease(t, "TakeOver by an expired controller", err, ledger.ErrLeaseExpired, "TakeOver", "c1")
	diff(t, "view after refused launches", mustView(t, l, scopeA, "op1"), before)

	diff(t, "orphaned operations", orphaned(t, l), []string{"org-a/op1", "org-a/op2"})
	// A live controller takes the expired one's operation over.
	f2, err := l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: "t2", ControllerID: "c2"})
	if err != nil {
		t.Fatalf("TakeOver of an expired controller's attempt: %v", err)
	}
	diff(t, "takeover fence", f2, ledger.Fence{Scope: scopeA, OperationID: "op1", AttemptID: "t2", Generation: 2})
	diff(t, "orphaned operations after the takeover", orphaned(t, l), []string{"org-a/op2"})
	Check(t, l, f, orphan)
}

// testTakeOver: TakeOver fences off an orphaned attempt with a new one
// owned by the taker, and refuses a live owner's attempt, a stale From, a
// taker without a live lease and an operation that is over.
func testTakeOver(t *testing.T, l ledger.Ledger) {
	mustAcquire(t, l, "c1", longTTL)
	mustAcquire(t, l, "c2", longTTL)
	f1 := launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "a1", 1, "c1"))
	mustBegin(t, l, f1, "e1", Digest("e1"))
	before := mustView(t, l, scopeA, "op1")
	take := ledger.Takeover{From: f1, AttemptID: "t2", ControllerID: "c2"}

	_, err := l.TakeOver(bg, take)
	wantLease(t, "TakeOver of a live controller's attempt", err, ledger.ErrOwnerLive, "TakeOver", "c1")
	_, err = l.TakeOver(bg, ledger.Takeover{From: f1, AttemptID: "t2", ControllerID: "c1"})
	wantLease(t, "TakeOver of its own attempt by a live controller", err, ledger.ErrOwnerLive, "TakeOver", "c1")
	diff(t, "view after refused takeovers", mustView(t, l, scopeA, "op1"), before)

	mustRelease(t, l, "c1")
	stale := f1
	stale.Generation = 5
	_, err = l.TakeOver(bg, ledger.Takeover{From: stale, AttemptID: "t2", ControllerID: "c2"})
	if fe := wantStale(t, "TakeOver from a stale fence", err); fe.CurrentAttemptID != "a1" || fe.CurrentGeneration != 1 {
		t.Fatalf("TakeOver from a stale fence: %+v", fe)
	}
	_, err = l.TakeOver(bg, ledger.Takeover{From: f1, AttemptID: "t2", ControllerID: "c-none"})
	wantLease(t, "TakeOver by an unregistered controller", err, ledger.ErrLeaseExpired, "TakeOver", "c-none")
	_, err = l.TakeOver(bg, ledger.Takeover{From: f1, AttemptID: "t2", ControllerID: "c1"})
	wantLease(t, "TakeOver by a released controller", err, ledger.ErrLeaseExpired, "TakeOver", "c1")
	_, err = l.TakeOver(bg, ledger.Takeover{From: ledger.Fence{Scope: scopeB, OperationID: "op1", AttemptID: "a1", Generation: 1}, AttemptID: "t2", ControllerID: "c2"})
	wantErr(t, "TakeOver of a missing operation", err, ledger.ErrNotFound)
	diff(t, "view after refused takeovers", mustView(t, l, scopeA, "op1"), before)

	f2, err := l.TakeOver(bg, take)
	if err != nil {
		t.Fatalf("TakeOver after the owner released its lease: %v", err)
	}
	want := ledger.Fence{Scope: scopeA, OperationID: "op1", AttemptID: "t2", Generation: 2}
	diff(t, "takeover fence", f2, want)
	v := mustView(t, l, scopeA, "op1")
	diff(t, "attempts after the takeover", v.Attempts, []ledger.Attempt{
		{AttemptID: "a1", Generation: 1, Admitted: true, ControllerID: "c1"},
		{AttemptID: "t2", Generation: 2, ControllerID: "c2"},
	})
	if v.Operation.CurrentAttemptID != "t2" || v.Operation.CurrentGeneration != 2 || v.Operation.CurrentControllerID != "c2" {
		t.Fatalf("operation after the takeover: %+v", v.Operation)
	}
	// A lost reply is repeated: the same fence, nothing new.
	if got, err := l.TakeOver(bg, take); err != nil || got != want {
		t.Fatalf("repeated TakeOver = %+v, %v", got, err)
	}
	if n := len(mustView(t, l, scopeA, "op1").Attempts); n != 2 {
		t.Fatalf("the repeated takeover recorded %d attempts", n)
	}
	// The old attempt is fenced off; the taker goes on through a launch
	// of its attempt, and sees the predecessor's effect, now unknown.
	_, err = l.BeginEffect(bg, f1, "e2", Digest("e2"))
	wantStale(t, "BeginEffect of the attempt taken over", err)
	_, err = l.TakeOver(bg, ledger.Takeover{From: f1, AttemptID: "t3", ControllerID: "c2"})
	wantStale(t, "TakeOver from the attempt already taken over", err)
	_, err = l.TakeOver(bg, ledger.Takeover{From: f2, AttemptID: "t3", ControllerID: "c2"})
	wantLease(t, "TakeOver of the taker's live attempt", err, ledger.ErrOwnerLive, "TakeOver", "c2")
	launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "t2", 2, "c2"))
	if g := mustBegin(t, l, f2, "e1", Digest("e1")); !g.Redelivery || g.Effect.ControllerID != "c1" {
		t.Fatalf("the taker's redelivery of e1 = %+v", g)
	}
	if g := mustBegin(t, l, f2, "e2", Digest("e2")); g.Effect.ControllerID != "c2" || g.Effect.AttemptID != "t2" {
		t.Fatalf("the taker's new effect = %+v", g.Effect)
	}
	diff(t, "ListUnknown after the takeover", mustList(t, "ListUnknown", func() ([]ledger.Effect, error) { return l.ListUnknown(bg) }), []string{"org-a/op1/e1"})
	diff(t, "ListInFlight after the takeover", mustList(t, "ListInFlight", func() ([]ledger.Effect, error) { return l.ListInFlight(bg) }), []string{"org-a/op1/e2"})

	// An attempt id the operation already used is a stale fence, as for
	// StartAttempt; an attempt without a controller is taken over at once.
	fo := newOp(t, l, "op2", 1)
	_, err = l.TakeOver(bg, ledger.Takeover{From: mustStart(t, l, scopeA, "op2", "a2"), AttemptID: "a1", ControllerID: "c2"})
	wantStale(t, "TakeOver naming an earlier attempt", err)
	fo2, err := l.TakeOver(bg, ledger.Takeover{From: ledger.Fence{Scope: scopeA, OperationID: "op2", AttemptID: "a2", Generation: 2}, AttemptID: "t3", ControllerID: "c2"})
	if err != nil || fo2.Generation != 3 {
		t.Fatalf("TakeOver of an attempt without a controller = %+v, %v", fo2, err)
	}
	// An operation that is over is not taken over.
	if _, err := l.Cancel(bg, scopeA, "op2", "stop"); err != nil {
		t.Fatal(err)
	}
	mustRelease(t, l, "c2")
	mustAcquire(t, l, "c3", longTTL)
	_, err = l.TakeOver(bg, ledger.Takeover{From: fo2, AttemptID: "t4", ControllerID: "c3"})
	wantErr(t, "TakeOver of a cancelled operation", err, ledger.ErrOperationCancelled)
	if slices.Contains(orphaned(t, l), "org-a/op2") {
		t.Fatal("a cancelled operation is listed orphaned")
	}
	Check(t, l, f2, fo)
}

// testRacingTakeOvers: live controllers race to take over one orphaned
// attempt, each with an attempt id of its own: exactly one wins, the
// others get a *FenceError (the attempt they name is no longer current),
// and the operation has one new attempt, the winner's.
func testRacingTakeOvers(t *testing.T, l ledger.Ledger) {
	const n = 6
	mustAcquire(t, l, "owner", longTTL)
	for i := range n {
		mustAcquire(t, l, fmt.Sprint("taker-", i), longTTL)
	}
	f := launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "a1", 1, "owner"))
	mustBegin(t, l, f, "e1", Digest("e1"))
	mustRelease(t, l, "owner")
	errs := make([]error, n)
	fences := make([]ledger.Fence, n)
	parallel(n, func(i int) {
		fences[i], errs[i] = l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: fmt.Sprint("t", i), ControllerID: fmt.Sprint("taker-", i)})
	})
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("takeovers %d and %d both won", won, i)
		default:
			wantStale(t, fmt.Sprintf("takeover %d", i), err)
		}
	}
	if won < 0 {
		t.Fatalf("no takeover won: %v", errs)
	}
	v := mustView(t, l, scopeA, "op1")
	if len(v.Attempts) != 2 || v.Operation.CurrentAttemptID != fmt.Sprint("t", won) || v.Operation.CurrentControllerID != fmt.Sprint("taker-", won) {
		t.Fatalf("after the race (winner %d): %+v", won, v)
	}
	// The winner is live: nobody takes it over in turn.
	for i := range n {
		if i == won {
			continue
		}
		_, err := l.TakeOver(bg, ledger.Takeover{From: fences[won], AttemptID: fmt.Sprint("u", i), ControllerID: fmt.Sprint("taker-", i)})
		wantLease(t, "TakeOver of the winner's attempt", err, ledger.ErrOwnerLive, "TakeOver", fmt.Sprint("taker-", won))
	}
	Check(t, l, f)
}
