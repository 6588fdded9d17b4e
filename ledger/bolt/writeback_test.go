package bolt_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

var wbScope = ledger.Scope{OrganizationID: "o", ProjectID: "p"}

// admittedOp creates operation op with an admitted attempt and returns its
// fence.
func admittedOp(t *testing.T, l ledger.Ledger, op string) ledger.Fence {
	t.Helper()
	ctx := context.Background()
	if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: wbScope, OperationID: op, CapabilityID: "c",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m"), EffectBudget: 10}); err != nil {
		t.Fatal(err)
	}
	f, err := l.StartAttempt(ctx, wbScope, op, "a")
	if err != nil {
		t.Fatal(err)
	}
	launch := ledgertest.Digest("launch")
	if _, err := ledgertest.Issue(ctx, l, f, "boot-"+op, launch); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: launch, PID: 1, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, f, ledgertest.Digest("r")); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestWriteBackFailureFailsBatch fails the once-per-batch write-back of the
// operation records: every write of that batch must fail as not applied,
// nothing of it may be visible, in the open ledger (whose committer caches
// committed operation records) or after reopening, and the ledger must go
// on working.
func TestWriteBackFailureFailsBatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	d := ledgertest.Digest("effect")
	fences := make([]ledger.Fence, n)
	for i := range fences {
		fences[i] = admittedOp(t, l, "p"+string(rune('0'+i)))
		if _, err := l.BeginEffect(ctx, fences[i], "e0", d); err != nil {
			t.Fatal(err)
		}
	}

	// Hold one commit in flight so that the writes below queue up behind
	// it and form one batch; fail every write-back from then on.
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	bolt.SetBeforeCommit(l, func() { once.Do(func() { close(entered); <-release }) })
	injected := errors.New("injected write-back failure")
	var mu sync.Mutex
	flushes := 0
	bolt.SetFailFlush(l, func() error {
		mu.Lock()
		defer mu.Unlock()
		flushes++
		return injected
	})
	errs := make(chan error, 1+3*n)
	go func() { _, err := l.CreateOperation(ctx, spec("held")); errs <- err }()
	<-entered
	for i, f := range fences {
		go func() { _, err := l.BeginEffect(ctx, f, "e1", d); errs <- err }()
		go func() { _, err := l.ConfirmEffect(ctx, f, "e0", d, "rcpt"); errs <- err }()
		go func() { _, err := l.CreateOperation(ctx, spec("n"+string(rune('0'+i)))); errs <- err }()
	}
	waitQueued(t, l, 3*n)
	close(release)
	for range 1 + 3*n {
		if err := <-errs; !errors.Is(err, injected) || !errors.Is(err, ledger.ErrNotApplied) {
			t.Errorf("write of a batch whose write-back failed: err = %v, want the injected failure and ErrNotApplied", err)
		}
	}
	mu.Lock()
	if flushes != 2 { // the held write's batch, then one batch of all the others
		t.Errorf("%d write-backs, want 2 (the queued writes should form one batch)", flushes)
	}
	mu.Unlock()
	bolt.SetFailFlush(l, func() error { return nil })

	check := func(l ledger.Ledger, when string, fences []ledger.Fence) {
		t.Helper()
		for _, op := range []string{"held", "n0", "n1", "n2", "n3"} {
			if _, err := l.Operation(ctx, wbScope, op); !errors.Is(err, ledger.ErrNotFound) {
				t.Errorf("%s: operation %q of the failed batch: err = %v, want ErrNotFound", when, op, err)
			}
		}
		for _, f := range fences {
			v, err := l.Operation(ctx, wbScope, f.OperationID)
			if err != nil {
				t.Fatal(err)
			}
			if v.Operation.EffectsUsed != 1 || len(v.Effects) != 1 || v.Effects[0].State != ledger.EffectAuthorized {
				t.Errorf("%s: operation %q after the failed batch: %d effects used, effects %+v; want only e0, authorized",
					when, f.OperationID, v.Operation.EffectsUsed, v.Effects)
			}
		}
	}
	check(l, "open", fences)
	// The committer must not have kept the failed batch's records: the
	// next effect is the second one, not the third.
	g, err := l.BeginEffect(ctx, fences[0], "e2", d)
	if err != nil {
		t.Fatal(err)
	}
	if g.Effect.Ordinal != 2 {
		t.Errorf("effect after the failed batch has ordinal %d, want 2", g.Effect.Ordinal)
	}
	// Nor its effect records: e0 is still authorized, so another receipt
	// confirms it.
	if _, err := l.ConfirmEffect(ctx, fences[0], "e0", d, "other"); err != nil {
		t.Errorf("confirming e0 after the failed batch confirmed it: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(ctx)
	check(l2, "reopened", fences[1:]) // p0 has e2 now
	v, err := l2.Operation(ctx, wbScope, "p0")
	if err != nil {
		t.Fatal(err)
	}
	if v.Operation.EffectsUsed != 2 || len(v.Effects) != 2 || v.Effects[0].ReceiptID != "other" {
		t.Errorf("reopened: p0 has %d effects used, effects %+v; want e0 (receipt %q) and e2", v.Operation.EffectsUsed, v.Effects, "other")
	}
}

func spec(op string) ledger.OperationSpec {
	return ledger.OperationSpec{Scope: wbScope, OperationID: op, CapabilityID: "c",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m"), EffectBudget: 10}
}
