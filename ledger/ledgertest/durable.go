package ledgertest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// RunDurable checks that a durable ledger keeps everything it acknowledged
// across Close and reopen: open(t, dir) must open the ledger stored in dir
// (creating it when empty). The suite closes every ledger it opens.
func RunDurable(t *testing.T, open func(t *testing.T, dir string) ledger.Ledger) {
	t.Helper()
	t.Run("ReopenKeepsEverything", func(t *testing.T) { testReopen(t, open) })
	t.Run("ReopenKeepsManyEffects", func(t *testing.T) { testReopenMany(t, open) })
	t.Run("ReopenKeepsLeasesAndOwners", func(t *testing.T) { testReopenLeases(t, open) })
}

// testReopenLeases: lease records and the controllers of attempts and
// effects survive reopen. Whether a lease is still live after reopen is
// the backend's to say (ledger/bolt: never, its file lock proves the
// holder gone), so Live is not compared.
func testReopenLeases(t *testing.T, open func(t *testing.T, dir string) ledger.Ledger) {
	dir := t.TempDir()
	l := open(t, dir)
	mustAcquire(t, l, "c1", longTTL)
	if _, err := l.RenewLease(bg, "c1", 2*longTTL); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, l, "c2", longTTL)
	mustRelease(t, l, "c2")
	f := launchAdmitted(t, l, ownedLaunch(scopeA, "op1", "a1", 1, "c1"))
	mustBegin(t, l, f, "e1", Digest("e1"))
	mustBegin(t, l, f, "e2", Digest("e2"))
	if _, err := l.ConfirmEffect(bg, f, "e2", Digest("e2"), "r2"); err != nil {
		t.Fatal(err)
	}
	before := normView(mustView(t, l, scopeA, "op1"))
	leases, err := l.Leases(bg)
	if err != nil {
		t.Fatal(err)
	}
	closeLedger(t, l)

	l = open(t, dir)
	defer closeLedger(t, l)
	diff(t, "view after reopen", normView(mustView(t, l, scopeA, "op1")), before)
	after, err := l.Leases(bg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range leases {
		leases[i].Live = false
	}
	for i := range after {
		after[i].Live = false
	}
	diff(t, "leases after reopen", after, leases)
	if before.Operation.CurrentControllerID != "c1" || before.Effects[0].ControllerID != "c1" {
		t.Fatalf("owned operation before reopen: %+v", before)
	}
	_, err = l.AcquireLease(bg, "c2", longTTL)
	wantErr(t, "AcquireLease of an id released before reopen", err, ledger.ErrLeaseExpired)
	Check(t, l, f)
}

// closeLedger closes l within a minute, as a restart would.
func closeLedger(t *testing.T, l ledger.Ledger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := l.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// testReopenMany: an operation with many effects, some settled, survives
// reopen whole, and its effects are found (redelivery, outcomes) and new
// ones added after it.
func testReopenMany(t *testing.T, open func(t *testing.T, dir string) ledger.Ledger) {
	dir := t.TempDir()
	ids := manyEffectIDs()
	half := len(ids) / 2
	l := open(t, dir)
	f := newOp(t, l, "op1", int64(len(ids)))
	for i, id := range ids[:half] {
		mustBegin(t, l, f, id, Digest(id))
		if i%2 == 0 {
			if _, err := l.ConfirmEffect(bg, f, id, Digest(id), "rcpt-"+id); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := normView(mustView(t, l, scopeA, "op1"))
	closeLedger(t, l)

	l = open(t, dir)
	defer closeLedger(t, l)
	diff(t, "view after reopen", normView(mustView(t, l, scopeA, "op1")), before)
	for i, e := range before.Effects {
		diff(t, "redelivery after reopen", mustBegin(t, l, f, e.LogicalEffectID, e.RequestDigest), ledger.EffectGrant{Effect: e, Redelivery: true})
		if e.State == ledger.EffectAuthorized && i%3 == 0 {
			if _, err := l.MarkUnknown(bg, f, e.LogicalEffectID, e.RequestDigest); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, id := range ids[half:] {
		if g := mustBegin(t, l, f, id, Digest(id)); g.Redelivery || g.Effect.Ordinal != int64(half+i+1) {
			t.Fatalf("new effect %q after reopen = %+v", id, g)
		}
	}
	if v := mustView(t, l, scopeA, "op1"); len(v.Effects) != len(ids) || v.Operation.EffectsUsed != int64(len(ids)) {
		t.Fatalf("after reopen: %d effects, %d used; want %d", len(v.Effects), v.Operation.EffectsUsed, len(ids))
	}
	Check(t, l, f)
}

func testReopen(t *testing.T, open func(t *testing.T, dir string) ledger.Ledger) {
	dir := t.TempDir()
	l := open(t, dir)
	sp := spec(scopeA, "op1", 5)
	mustCreate(t, l, sp)
	mustStart(t, l, scopeA, "op1", "a1")
	f := mustStart(t, l, scopeA, "op1", "a2")
	if _, err := issue(l, f, "boot", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	red := ledger.Redemption{BootstrapID: "boot", LaunchDigest: Digest("launch"), PID: 7, SessionID: "s"}
	if _, err := l.RedeemBootstrap(bg, f, red); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(bg, f, sp.RequestDigest); err != nil {
		t.Fatal(err)
	}
	d := Digest("e")
	for _, id := range []string{"auth", "conf", "nc", "unk"} {
		mustBegin(t, l, f, id, d)
	}
	if _, err := l.ConfirmEffect(bg, f, "conf", d, "rcpt"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.MarkNotConsumed(bg, f, "nc", d, ledger.ReasonRefused); err != nil {
		t.Fatal(err)
	}
	if _, err := l.MarkUnknown(bg, f, "unk", d); err != nil {
		t.Fatal(err)
	}
	fr := newOp(t, l, "op-result", 0)
	res, err := l.AcceptResult(bg, fr, Digest("data"), []byte("artifact bytes"))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, l, spec(scopeB, "op-cancel", 1))
	if _, err := l.Cancel(bg, scopeB, "op-cancel", "stop"); err != nil {
		t.Fatal(err)
	}
	launched := launchOf(scopeC, "op-launch", "a1", 1)
	mustLaunch(t, l, launched)
	keys := []struct {
		s  ledger.Scope
		op string
	}{{scopeA, "op1"}, {scopeA, "op-result"}, {scopeB, "op-cancel"}, {scopeC, "op-launch"}}
	var views []ledger.OperationView
	for _, k := range keys {
		views = append(views, normView(mustView(t, l, k.s, k.op)))
	}
	unknown, err := l.ListUnknown(bg)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := l.RecordAttempt(bg, f, sampleEvidence("needs_reconciliation"))
	if err != nil {
		t.Fatal(err)
	}
	listed, err := l.ListOperations(bg, ledger.OperationQuery{})
	if err != nil {
		t.Fatal(err)
	}
	closeLedger(t, l)

	l = open(t, dir)
	defer closeLedger(t, l)
	for i, k := range keys {
		diff(t, "view of "+k.op+" after reopen", normView(mustView(t, l, k.s, k.op)), views[i])
	}
	u2, err := l.ListUnknown(bg)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ListUnknown after reopen", u2, unknown)
	evs, err := l.Evidence(bg, scopeA, "op1")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "evidence after reopen", evs, []ledger.AttemptEvidence{ev})
	l2, err := l.ListOperations(bg, ledger.OperationQuery{})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "ListOperations after reopen", l2, listed)
	// Redelivery after restart: same authorization and receipt, no debit.
	for _, e := range views[0].Effects {
		g := mustBegin(t, l, f, e.LogicalEffectID, d)
		diff(t, "redelivery after reopen", g, ledger.EffectGrant{Effect: e, Redelivery: true})
	}
	// The redemption survived: the same claimant's retry is answered with
	// it, and another child is refused.
	if again, err := l.RedeemBootstrap(bg, f, red); err != nil || again.RedeemedPID != red.PID || again.RedeemedSessionID != red.SessionID {
		t.Fatalf("redemption retried after reopen: %+v, %v", again, err)
	}
	other := red
	other.PID++
	_, err = l.RedeemBootstrap(bg, f, other)
	wantErr(t, "redemption by another child after reopen", err, ledger.ErrBootstrapRedeemed)
	r2, err := l.AcceptResult(bg, fr, Digest("data"), []byte("artifact bytes"))
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "result after reopen", r2, res)
	a, err := l.Artifact(bg, scopeA, res.ArtifactRefs[0])
	if err != nil || !bytes.Equal(a.Bytes, []byte("artifact bytes")) {
		t.Fatalf("artifact after reopen = %+v, %v", a, err)
	}
	f3 := mustStart(t, l, scopeA, "op1", "a3")
	if f3.Generation != 3 {
		t.Fatalf("generation after reopen = %d, want 3", f3.Generation)
	}
	_, err = l.BeginEffect(bg, f, "late", d)
	wantStale(t, "old fence after reopen", err)
	// Bootstrap ids stay bound to their attempt across reopen.
	_, err = issue(l, f3, "boot", Digest("launch"))
	wantErr(t, "reissue of a2's bootstrap id to a3 after reopen", err, ledger.ErrChangedInput)
	// A launch is whole after reopen: repeated, it changes nothing; its
	// attempt redeems and is admitted; the next launch fences it off.
	mustLaunch(t, l, launched)
	admitLaunched(t, l, launched)
	next := mustLaunch(t, l, launchOf(scopeC, "op-launch", "a2", 2))
	_, err = l.Admit(bg, launched.Fence(), launched.Operation.RequestDigest)
	wantStale(t, "the launched attempt after the next launch", err)
	if v := mustView(t, l, scopeA, "op1"); v.Operation.EffectsUsed != 4 {
		t.Fatalf("effects used after reopen = %d, want 4", v.Operation.EffectsUsed)
	}
	Check(t, l, f3, fr, next)
}
