package ledgertest

// Cases for fencing: every attempt gets a strictly greater generation,
// and a stale fence is refused by every fenced write.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

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
		"LaunchAttempt": func(f ledger.Fence) error {
			_, err := issue(l, f, "boot-new", Digest("launch"))
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
	if _, err := issue(l, cur, "boot", Digest("launch")); err != nil {
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
	for _, name := range []string{"LaunchAttempt", "RedeemBootstrap", "Admit", "BeginEffect", "ConfirmEffect", "MarkNotConsumed", "MarkUnknown", "AcceptResult"} {
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
