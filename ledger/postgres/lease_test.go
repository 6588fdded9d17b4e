package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// launchOwned launches attempt attempt of operation op in testScope for
// controller ctrl (generation gen), redeems its bootstrap id and admits it.
func launchOwned(t testing.TB, l ledger.Ledger, op, attempt, ctrl string, gen int64) ledger.Fence {
	t.Helper()
	boot, launch := "boot-"+op+"-"+attempt, digest("launch-"+attempt)
	f, err := l.LaunchAttempt(bg, ledger.AttemptLaunch{Operation: opSpec(testScope, op, 100), AttemptID: attempt, Generation: gen,
		BootstrapID: boot, LaunchDigest: launch, ControllerID: ctrl})
	if err != nil {
		t.Fatalf("LaunchAttempt %s for %s: %v", attempt, ctrl, err)
	}
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: launch, PID: 7, SessionID: "s-" + attempt}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(bg, f, digest("request")); err != nil {
		t.Fatal(err)
	}
	return f
}

func acquire(t testing.TB, l ledger.Ledger, ctrl string, ttl time.Duration) ledger.Lease {
	t.Helper()
	ls, err := l.AcquireLease(bg, ctrl, ttl)
	if err != nil {
		t.Fatalf("AcquireLease %s: %v", ctrl, err)
	}
	return ls
}

// leaseErr fails t unless err is a *ledger.LeaseError wrapping sentinel
// and naming ctrl.
func leaseErr(t testing.TB, what string, err, sentinel error, ctrl string) *ledger.LeaseError {
	t.Helper()
	var le *ledger.LeaseError
	if !errors.As(err, &le) || !errors.Is(err, sentinel) || le.ControllerID != ctrl {
		t.Fatalf("%s: %v; want a *LeaseError wrapping %v naming %q", what, err, sentinel, ctrl)
	}
	return le
}

// waitExpired waits until ctrl's lease is no longer live by the server's
// clock (its ttl is short).
func waitExpired(t testing.TB, l ledger.Ledger, ctrl string) {
	t.Helper()
	for {
		all, err := l.Leases(bg)
		if err != nil {
			t.Fatal(err)
		}
		live := false
		for _, ls := range all {
			if ls.ControllerID == ctrl && ls.Live {
				live = true
			}
		}
		if !live {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func hasEffect(es []ledger.Effect, op, ctrl string) bool {
	for _, e := range es {
		if e.OperationID == op && e.ControllerID == ctrl {
			return true
		}
	}
	return false
}

// shortLived acquires a short lease for ctrl, launches operation op for
// it and authorizes effect e1 before the lease expires: the ttl grows
// until the machine is fast enough for it. The lease actually acquired is
// and the operation are named ctrl and op with a "+" per try appended.
func shortLived(t testing.TB, l ledger.Ledger, ctrl, op string) (ledger.Lease, ledger.Fence) {
	t.Helper()
	for ttl := 5 * time.Millisecond; ; ttl *= 2 {
		ls := acquire(t, l, ctrl, ttl)
		f, err := l.LaunchAttempt(bg, ledger.AttemptLaunch{Operation: opSpec(testScope, op, 100), AttemptID: "b1", Generation: 1,
			BootstrapID: "boot-" + op, LaunchDigest: digest("launch"), ControllerID: ctrl})
		if err == nil {
			_, err = l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: digest("launch"), PID: 7, SessionID: "s"})
		}
		if err == nil {
			_, err = l.Admit(bg, f, digest("request"))
		}
		var g ledger.EffectGrant
		if err == nil {
			g, err = l.BeginEffect(bg, f, "e1", digest("e1"))
		}
		if err == nil {
			if g.Effect.ControllerID != ctrl {
				t.Fatalf("effect %+v, want controller %s", g.Effect, ctrl)
			}
			return ls, f
		}
		if !errors.Is(err, ledger.ErrLeaseExpired) || ttl > time.Minute {
			t.Fatal(err)
		}
		// Start again with a new controller and a new operation.
		ctrl, op = ctrl+"+", op+"+"
	}
}

// The lease calls as ledger.Ledger documents them, with the server's
// clock: repeat, another ttl, renewal, release, and no renewal or
// acquisition of a lease that expired or was released.
func TestLeaseLifecycle(t *testing.T) {
	l := openTest(t)
	defer closeLedger(t, l)
	first := acquire(t, l, "c1", time.Minute)
	if !first.Live || first.Released || first.TTL != time.Minute || first.Renewals != 0 || !first.Expires.After(first.Acquired) {
		t.Fatalf("acquired %+v", first)
	}
	again := acquire(t, l, "c1", time.Minute)
	if again != first {
		t.Fatalf("acquired again %+v, want %+v unchanged", again, first)
	}
	_, err := l.AcquireLease(bg, "c1", time.Hour)
	leaseErr(t, "AcquireLease with another ttl", err, ledger.ErrLeaseHeld, "c1")
	renewed, err := l.RenewLease(bg, "c1", ledger.MaxLeaseTTL)
	if err != nil || renewed.Renewals != 1 || renewed.TTL != ledger.MaxLeaseTTL || !renewed.Expires.After(first.Expires) || renewed.Acquired != first.Acquired {
		t.Fatalf("RenewLease = %+v, %v", renewed, err)
	}
	if _, err := l.RenewLease(bg, "nobody", time.Hour); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("RenewLease of an unknown controller: %v", err)
	}
	if _, err := l.ReleaseLease(bg, "nobody"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("ReleaseLease of an unknown controller: %v", err)
	}
	rel, err := l.ReleaseLease(bg, "c1")
	if err != nil || !rel.Released || rel.Live {
		t.Fatalf("ReleaseLease = %+v, %v", rel, err)
	}
	if again, err := l.ReleaseLease(bg, "c1"); err != nil || again != rel {
		t.Fatalf("ReleaseLease again = %+v, %v; want %+v", again, err, rel)
	}
	_, err = l.RenewLease(bg, "c1", time.Hour)
	leaseErr(t, "RenewLease after release", err, ledger.ErrLeaseExpired, "c1")
	_, err = l.AcquireLease(bg, "c1", time.Minute)
	leaseErr(t, "AcquireLease after release", err, ledger.ErrLeaseExpired, "c1")

	for _, bad := range []time.Duration{0, -time.Second, time.Microsecond, ledger.MaxLeaseTTL + 1} {
		if _, err := l.AcquireLease(bg, "c2", bad); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("AcquireLease ttl %v: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := l.AcquireLease(bg, "", time.Hour); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("AcquireLease of an empty id: %v, want ErrInvalid", err)
	}
	acquire(t, l, "c0", time.Hour)
	all, err := l.Leases(bg)
	if err != nil || len(all) != 2 || all[0].ControllerID != "c0" || !all[0].Live || all[1].ControllerID != "c1" || all[1].Live || !all[1].Released {
		t.Fatalf("Leases = %+v, %v", all, err)
	}
}

// A lease that expired by the server's clock is never renewed, and its
// controller's attempts can neither launch nor authorize new effects;
// redeliveries and outcomes of effects already authorized still work.
func TestRenewalAfterExpiryRefused(t *testing.T) {
	l := openTest(t)
	defer closeLedger(t, l)
	acquire(t, l, "c1", time.Hour)
	f := launchOwned(t, l, "op", "a1", "c1", 1)
	if _, err := l.BeginEffect(bg, f, "e1", digest("e1")); err != nil {
		t.Fatal(err)
	}
	// A second controller with a short lease, which expires.
	short, f2 := shortLived(t, l, "c2", "op2")
	c2, op2 := short.ControllerID, f2.OperationID
	waitExpired(t, l, c2)
	_, err := l.RenewLease(bg, c2, time.Hour)
	le := leaseErr(t, "RenewLease after expiry", err, ledger.ErrLeaseExpired, c2)
	if !le.Expires.Equal(short.Expires) {
		t.Errorf("refusal names expiry %v, want %v", le.Expires, short.Expires)
	}
	_, err = l.BeginEffect(bg, f2, "e2", digest("e2"))
	leaseErr(t, "BeginEffect of a new effect after expiry", err, ledger.ErrLeaseExpired, c2)
	if g, err := l.BeginEffect(bg, f2, "e1", digest("e1")); err != nil || !g.Redelivery {
		t.Fatalf("redelivery after expiry: %+v, %v", g, err)
	}
	_, err = l.LaunchAttempt(bg, ledger.AttemptLaunch{Operation: opSpec(testScope, "op3", 1), AttemptID: "x", Generation: 1,
		BootstrapID: "boot-op3", LaunchDigest: digest("l"), ControllerID: c2})
	leaseErr(t, "LaunchAttempt for an expired controller", err, ledger.ErrLeaseExpired, c2)
	_, err = l.LaunchAttempt(bg, ledger.AttemptLaunch{Operation: opSpec(testScope, "op3", 1), AttemptID: "x", Generation: 1,
		BootstrapID: "boot-op3", LaunchDigest: digest("l"), ControllerID: "never"})
	leaseErr(t, "LaunchAttempt for an unknown controller", err, ledger.ErrLeaseExpired, "never")
	if _, err := l.Operation(bg, testScope, "op3"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a refused launch wrote its operation: %v", err)
	}

	// c1 is live: its effect is in flight, c2's is unknown.
	inflight, err := l.ListInFlight(bg)
	if err != nil || len(inflight) != 1 || inflight[0].OperationID != "op" || inflight[0].ControllerID != "c1" {
		t.Fatalf("ListInFlight = %+v, %v", inflight, err)
	}
	unknown, err := l.ListUnknown(bg)
	if err != nil || !hasEffect(unknown, op2, c2) || hasEffect(unknown, "op", "c1") {
		t.Fatalf("ListUnknown = %+v, %v; want %s's effect and not c1's", unknown, err, c2)
	}
	orphans, err := l.ListOperations(bg, ledger.OperationQuery{Orphaned: true})
	var orphaned []string
	for _, o := range orphans {
		orphaned = append(orphaned, o.OperationID+"/"+o.CurrentControllerID)
	}
	if err != nil || !slices.Contains(orphaned, op2+"/"+c2) || slices.Contains(orphaned, "op/c1") {
		t.Fatalf("orphaned = %v, %v; want %s/%s and not op/c1", orphaned, err, op2, c2)
	}
	_, err = l.Resolve(bg, testScope, "op", "e1", digest("e1"), ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
	leaseErr(t, "Resolve of c1's effect", err, ledger.ErrInFlight, "c1")
	if e, err := l.Resolve(bg, testScope, op2, "e1", digest("e1"), ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "r"}); err != nil || e.State != ledger.EffectConfirmed {
		t.Fatalf("Resolve of c2's effect: %+v, %v", e, err)
	}
	v, err := l.Operation(bg, testScope, "op")
	if err != nil || v.Operation.CurrentControllerID != "c1" || v.Attempts[0].ControllerID != "c1" || v.Effects[0].ControllerID != "c1" {
		t.Fatalf("Operation = %+v, %v", v, err)
	}
}

// TakeOver refuses a live owner's attempt and fences off an orphaned one;
// the taker's lease must be live; a repeat returns the same fence.
func TestTakeOver(t *testing.T) {
	l := openTest(t)
	defer closeLedger(t, l)
	acquire(t, l, "old", time.Hour)
	acquire(t, l, "new", time.Hour)
	f := launchOwned(t, l, "op", "a1", "old", 1)
	tk := ledger.Takeover{From: f, AttemptID: "a2", ControllerID: "new"}
	_, err := l.TakeOver(bg, tk)
	leaseErr(t, "TakeOver from a live owner", err, ledger.ErrOwnerLive, "old")
	if _, err := l.ReleaseLease(bg, "old"); err != nil {
		t.Fatal(err)
	}
	_, err = l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: "a2", ControllerID: "stranger"})
	leaseErr(t, "TakeOver by a controller without a lease", err, ledger.ErrLeaseExpired, "stranger")
	nf, err := l.TakeOver(bg, tk)
	want := ledger.Fence{Scope: testScope, OperationID: "op", AttemptID: "a2", Generation: 2}
	if err != nil || nf != want {
		t.Fatalf("TakeOver = %+v, %v; want %+v", nf, err, want)
	}
	if again, err := l.TakeOver(bg, tk); err != nil || again != want {
		t.Fatalf("TakeOver repeated = %+v, %v", again, err)
	}
	var fe *ledger.FenceError
	if _, err := l.BeginEffect(bg, f, "e", digest("e")); !errors.As(err, &fe) {
		t.Fatalf("the old attempt's BeginEffect: %v, want a *FenceError", err)
	}
	v, err := l.Operation(bg, testScope, "op")
	if err != nil || v.Operation.CurrentControllerID != "new" || len(v.Attempts) != 2 || v.Attempts[1].ControllerID != "new" || v.Attempts[1].Admitted {
		t.Fatalf("Operation after takeover = %+v, %v", v, err)
	}
	if _, err := l.Cancel(bg, testScope, "op", "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.TakeOver(bg, ledger.Takeover{From: nf, AttemptID: "a3", ControllerID: "new"}); !errors.Is(err, ledger.ErrOperationCancelled) {
		t.Fatalf("TakeOver of a cancelled operation: %v", err)
	}
}

// Controllers on connections of their own race to take over one orphaned
// attempt: exactly one wins, every other gets a *FenceError naming the
// winner's attempt.
func TestTakeOverRace(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	const racers = 6
	ls := make([]*postgres.Ledger, racers)
	for i := range ls {
		l, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer closeLedger(t, l)
		ls[i] = l
		acquire(t, l, fmt.Sprintf("taker%d", i), time.Hour)
	}
	for round := range 20 {
		op := fmt.Sprintf("op%d", round)
		dead := "dead" + op
		acquire(t, ls[0], dead, time.Hour)
		f := launchOwned(t, ls[0], op, "a1", dead, 1)
		if _, err := ls[0].ReleaseLease(bg, dead); err != nil {
			t.Fatal(err)
		}
		var (
			wg    sync.WaitGroup
			fence [racers]ledger.Fence
			errs  [racers]error
			start = make(chan struct{})
		)
		for i := range racers {
			wg.Go(func() {
				<-start
				fence[i], errs[i] = ls[i].TakeOver(bg, ledger.Takeover{From: f, AttemptID: fmt.Sprintf("by%d", i), ControllerID: fmt.Sprintf("taker%d", i)})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			var fe *ledger.FenceError
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both took over", round, winner, i)
				}
				winner = i
			case errors.As(err, &fe):
			default:
				t.Fatalf("round %d: racer %d: %v, want a *FenceError", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody took over: %v", round, errs)
		}
		for i, err := range errs {
			var fe *ledger.FenceError
			if i != winner && (!errors.As(err, &fe) || fe.CurrentAttemptID != fence[winner].AttemptID || fe.CurrentGeneration != 2) {
				t.Fatalf("round %d: loser %d: %v; want a fence error naming %+v", round, i, err, fence[winner])
			}
		}
		v, err := ls[1].Operation(bg, testScope, op)
		if err != nil || v.Operation.CurrentControllerID != fmt.Sprintf("taker%d", winner) || len(v.Attempts) != 2 {
			t.Fatalf("round %d: %+v, %v", round, v, err)
		}
	}
	checkTables(t, dsn, schema)
}

// The Resolve race of issue 22: while a live controller dispatches an
// effect, a reconciler on another connection resolves it not consumed and
// the controller confirms it, concurrently. Resolve is refused (in
// flight) and the effect ends confirmed, every time.
func TestResolveRacesConfirm(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	owner, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, owner)
	reconciler, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, reconciler)
	acquire(t, owner, "c1", time.Hour)
	f := launchOwned(t, owner, "op", "a1", "c1", 1)
	notConsumed := ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}
	for i := range 50 {
		id := fmt.Sprintf("e%d", i)
		if _, err := owner.BeginEffect(bg, f, id, digest(id)); err != nil {
			t.Fatal(err)
		}
		var (
			wg                 sync.WaitGroup
			resolveErr, conErr error
			start              = make(chan struct{})
		)
		wg.Go(func() {
			<-start
			_, resolveErr = reconciler.Resolve(bg, testScope, "op", id, digest(id), notConsumed)
		})
		wg.Go(func() {
			<-start
			_, conErr = owner.ConfirmEffect(bg, f, id, digest(id), "receipt-"+id)
		})
		close(start)
		wg.Wait()
		if conErr != nil {
			t.Fatalf("%s: ConfirmEffect: %v", id, conErr)
		}
		// Resolve ran before the confirmation (in flight) or after it
		// (the effect is confirmed: another outcome is a transition).
		var le *ledger.LeaseError
		if !(errors.As(resolveErr, &le) && errors.Is(resolveErr, ledger.ErrInFlight)) && !errors.Is(resolveErr, ledger.ErrInvalidTransition) {
			t.Fatalf("%s: Resolve: %v; want in flight or an invalid transition", id, resolveErr)
		}
	}
	v, err := reconciler.Operation(bg, testScope, "op")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Effects {
		if e.State != ledger.EffectConfirmed {
			t.Fatalf("effect %s ended %s, want confirmed", e.LogicalEffectID, e.State)
		}
	}
}

// A Resolve or a TakeOver that finds a lease expired in its committed
// row, while a renewal that began before the expiry has not committed
// yet, waits for the renewal and sees the lease live: the renewal cannot
// slip between the check and the write it allows.
func TestDecisionsWaitForRenewal(t *testing.T) {
	for _, c := range []struct {
		name     string
		sentinel error
		call     func(l ledger.Ledger, f ledger.Fence) error
	}{
		{"Resolve", ledger.ErrInFlight, func(l ledger.Ledger, f ledger.Fence) error {
			_, err := l.Resolve(bg, testScope, f.OperationID, "e", digest("e"), ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
			return err
		}},
		{"TakeOver", ledger.ErrOwnerLive, func(l ledger.Ledger, f ledger.Fence) error {
			_, err := l.TakeOver(bg, ledger.Takeover{From: f, AttemptID: "a2", ControllerID: "taker"})
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) { testWaitsForRenewal(t, c.name, c.sentinel, c.call) })
	}
}

func testWaitsForRenewal(t *testing.T, name string, sentinel error, call func(ledger.Ledger, ledger.Fence) error) {
	dsn := testDSN(t)
	l, app := openTagged(t)
	defer closeLedger(t, l)
	acquire(t, l, "taker", time.Hour)
	admin, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)
	monitor, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close(bg)
	// The renewal must begin while the lease is live; on a slow machine a
	// short ttl may pass before it does, so try longer ones.
	for try, ttl := 0, 20*time.Millisecond; ; try, ttl = try+1, ttl*2 {
		ctrl := fmt.Sprintf("c%d", try)
		op := fmt.Sprintf("op%d", try)
		// The attempt and its effect are written under a long lease, which
		// is then cut to ttl: written under ttl itself, a loaded machine
		// could let it pass before the attempt is launched.
		acquire(t, l, ctrl, time.Hour)
		f := launchOwned(t, l, op, "a1", ctrl, 1)
		if _, err := l.BeginEffect(bg, f, "e", digest("e")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.RenewLease(bg, ctrl, ttl); err != nil {
			t.Fatal(err)
		}
		tx, err := admin.Begin(bg)
		if err != nil {
			t.Fatal(err)
		}
		var code string
		if err := tx.QueryRow(bg, "SELECT r_code FROM "+quoted(l)+".renew_lease($1, $2)", []byte(ctrl), int64(time.Hour)).Scan(&code); err != nil {
			t.Fatal(err)
		}
		if code != "ok" {
			_ = tx.Rollback(bg)
			if ttl < time.Minute {
				continue
			}
			t.Fatalf("renewal: %s", code)
		}
		waitExpired(t, l, ctrl) // by the committed row
		done := make(chan error, 1)
		go func() { done <- call(l, f) }()
		// The call must wait for the renewal's lock; if it answers first,
		// it decided on the expired row.
		for waiting := false; !waiting; {
			select {
			case err := <-done:
				t.Fatalf("%s answered during the renewal without waiting for it: %v", name, err)
			default:
			}
			var n int
			if err := monitor.QueryRow(bg, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", app).Scan(&n); err != nil {
				t.Fatal(err)
			}
			waiting = n > 0
		}
		if err := tx.Commit(bg); err != nil {
			t.Fatal(err)
		}
		leaseErr(t, name+" during a renewal", <-done, sentinel, ctrl)
		return
	}
}
