package ledgertest

// Cases for LaunchAttempt: the operation, its attempt and the attempt's
// bootstrap id recorded in one atomic write, at the generation the caller
// expects.

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// launchOf is the launch of attempt of op in scope s at generation gen,
// with a bootstrap id named after the attempt.
func launchOf(s ledger.Scope, op, attempt string, gen int64) ledger.AttemptLaunch {
	return ledger.AttemptLaunch{Operation: spec(s, op, 2), AttemptID: attempt, Generation: gen,
		BootstrapID: fmt.Sprintf("launch/%s/%s/%s/%s", s.OrganizationID, s.ProjectID, op, attempt), LaunchDigest: Digest("launch:" + attempt)}
}

// mustLaunch is LaunchAttempt that fails the test on error and checks the
// fence it returns.
func mustLaunch(t testing.TB, l ledger.Ledger, a ledger.AttemptLaunch) ledger.Fence {
	t.Helper()
	f, err := l.LaunchAttempt(bg, a)
	if err != nil {
		t.Fatalf("LaunchAttempt(%q, %q, %d): %v", a.Operation.OperationID, a.AttemptID, a.Generation, err)
	}
	diff(t, "LaunchAttempt fence", f, a.Fence())
	return f
}

// admitLaunched redeems the bootstrap id a issued and admits a's attempt.
func admitLaunched(t testing.TB, l ledger.Ledger, a ledger.AttemptLaunch) {
	t.Helper()
	f := a.Fence()
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: a.BootstrapID, LaunchDigest: a.LaunchDigest, PID: 7, SessionID: "s1"}); err != nil {
		t.Fatalf("RedeemBootstrap of launched attempt %q: %v", a.AttemptID, err)
	}
	if _, err := l.Admit(bg, f, a.Operation.RequestDigest); err != nil {
		t.Fatalf("Admit of launched attempt %q: %v", a.AttemptID, err)
	}
}

// testLaunchAttempt checks that LaunchAttempt records what CreateOperation
// and StartAttempt record, and the bootstrap id, for a new operation and for one
// that exists; that the attempt can then bootstrap, be admitted and fence
// off its predecessor; and that repeating the call changes nothing.
func testLaunchAttempt(t *testing.T, l ledger.Ledger) {
	a1 := launchOf(scopeA, "op1", "a1", 1)
	f1 := mustLaunch(t, l, a1)
	boot1 := ledger.Bootstrap{BootstrapID: a1.BootstrapID, AttemptID: "a1", Generation: 1, LaunchDigest: a1.LaunchDigest}
	want := ledger.OperationView{
		Operation: ledger.Operation{Scope: scopeA, OperationID: "op1", CapabilityID: a1.Operation.CapabilityID,
			RequestDigest: a1.Operation.RequestDigest, ManifestDigest: a1.Operation.ManifestDigest, EffectBudget: 2,
			Deadline: a1.Operation.Deadline, State: ledger.OperationOpen, CurrentAttemptID: "a1", CurrentGeneration: 1},
		Attempts:   []ledger.Attempt{{AttemptID: "a1", Generation: 1}},
		Bootstraps: []ledger.Bootstrap{boot1},
	}
	diff(t, "view after launching a new operation", normView(mustView(t, l, scopeA, "op1")), normView(want))
	// A lost reply is repeated: the same fence, nothing new.
	mustLaunch(t, l, a1)
	diff(t, "view after repeating the launch", normView(mustView(t, l, scopeA, "op1")), normView(want))
	// The launched attempt goes on as a started one.
	admitLaunched(t, l, a1)
	mustBegin(t, l, f1, "e1", Digest("e1"))

	// The next attempt of an existing operation fences the first off.
	a2 := launchOf(scopeA, "op1", "a2", 2)
	f2 := mustLaunch(t, l, a2)
	_, err := l.BeginEffect(bg, f1, "e2", Digest("e2"))
	wantStale(t, "BeginEffect of the attempt the launch fenced off", err)
	admitLaunched(t, l, a2)
	if g := mustBegin(t, l, f2, "e1", Digest("e1")); !g.Redelivery {
		t.Fatalf("the launched attempt does not see its predecessor's effect: %+v", g)
	}

	// An operation created and started the usual way takes a launch too,
	// and LaunchAttempt issues the bootstrap id of a started attempt.
	mustCreate(t, l, spec(scopeB, "op2", 2))
	mustStart(t, l, scopeB, "op2", "a1")
	mustLaunch(t, l, launchOf(scopeB, "op2", "a1", 1))
	mustLaunch(t, l, launchOf(scopeB, "op2", "a2", 2))
	Check(t, l, f2)
}

// testLaunchAttemptRefusals checks every refusal of LaunchAttempt, and that
// a refused launch writes nothing: no operation, attempt or bootstrap id.
func testLaunchAttemptRefusals(t *testing.T, l ledger.Ledger) {
	mustLaunch(t, l, launchOf(scopeA, "op1", "a1", 1))
	mustLaunch(t, l, launchOf(scopeA, "op1", "a2", 2))
	before := mustView(t, l, scopeA, "op1")
	unchanged := func(what string) {
		t.Helper()
		diff(t, what+": view", mustView(t, l, scopeA, "op1"), before)
	}
	stale := func(what string, a ledger.AttemptLaunch, curAttempt string, curGen int64) {
		t.Helper()
		_, err := l.LaunchAttempt(bg, a)
		fe := wantStale(t, what, err)
		if fe.Presented != a.Fence() || fe.CurrentAttemptID != curAttempt || fe.CurrentGeneration != curGen {
			t.Fatalf("%s: %+v, want presented %+v, current (%q, %d)", what, fe, a.Fence(), curAttempt, curGen)
		}
	}
	stale("a new attempt at the current generation", launchOf(scopeA, "op1", "a3", 2), "a2", 2)
	unchanged("a new attempt at the current generation")
	stale("a new attempt past the next generation", launchOf(scopeA, "op1", "a3", 4), "a2", 2)
	stale("the older attempt again", launchOf(scopeA, "op1", "a1", 1), "a2", 2)
	stale("the current attempt at another generation", launchOf(scopeA, "op1", "a2", 3), "a2", 2)
	unchanged("stale launches")
	stale("a new operation past generation 1", launchOf(scopeA, "op9", "a1", 2), "", 0)
	_, err := l.Operation(bg, scopeA, "op9")
	wantErr(t, "the operation a stale launch named", err, ledger.ErrNotFound)

	changed := launchOf(scopeA, "op1", "a3", 3)
	changed.Operation.EffectBudget = 5
	_, err = l.LaunchAttempt(bg, changed)
	wantErr(t, "another operation spec", err, ledger.ErrChangedInput)
	unchanged("another operation spec")

	// Bootstrap ids: issued to an older attempt, to another operation, or
	// with another launch digest.
	reuse := launchOf(scopeA, "op1", "a3", 3)
	reuse.BootstrapID = launchOf(scopeA, "op1", "a1", 1).BootstrapID
	_, err = l.LaunchAttempt(bg, reuse)
	wantErr(t, "a bootstrap id of an older attempt", err, ledger.ErrChangedInput)
	unchanged("a bootstrap id of an older attempt")
	other := launchOf(scopeB, "op1", "a1", 1)
	other.BootstrapID = reuse.BootstrapID
	_, err = l.LaunchAttempt(bg, other)
	wantErr(t, "a bootstrap id of another operation", err, ledger.ErrChangedInput)
	_, err = l.Operation(bg, scopeB, "op1")
	wantErr(t, "the operation a launch with a taken bootstrap id named", err, ledger.ErrNotFound)
	again := launchOf(scopeA, "op1", "a2", 2)
	again.LaunchDigest = Digest("another launch")
	_, err = l.LaunchAttempt(bg, again)
	wantErr(t, "the current launch with another launch digest", err, ledger.ErrChangedInput)
	unchanged("bootstrap id refusals")

	// An operation that is over takes no launch, not even a repeat.
	if _, err := l.Cancel(bg, scopeA, "op1", "stop"); err != nil {
		t.Fatal(err)
	}
	_, err = l.LaunchAttempt(bg, launchOf(scopeA, "op1", "a2", 2))
	wantErr(t, "a launch of a cancelled operation", err, ledger.ErrOperationCancelled)
	_, err = l.LaunchAttempt(bg, launchOf(scopeA, "op1", "a3", 3))
	wantErr(t, "a new launch of a cancelled operation", err, ledger.ErrOperationCancelled)
	ac := launchOf(scopeC, "op1", "a1", 1)
	fc := mustLaunch(t, l, ac)
	admitLaunched(t, l, ac)
	if _, err := l.AcceptResult(bg, fc, Digest("data"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	_, err = l.LaunchAttempt(bg, launchOf(scopeC, "op1", "a2", 2))
	wantErr(t, "a launch of a completed operation", err, ledger.ErrResultAlreadyAccepted)

	// Malformed arguments.
	for name, mut := range map[string]func(*ledger.AttemptLaunch){
		"generation 0":      func(a *ledger.AttemptLaunch) { a.Generation = 0 },
		"empty attempt":     func(a *ledger.AttemptLaunch) { a.AttemptID = "" },
		"empty bootstrap":   func(a *ledger.AttemptLaunch) { a.BootstrapID = "" },
		"bad launch digest": func(a *ledger.AttemptLaunch) { a.LaunchDigest = "sha256:00" },
		"negative budget":   func(a *ledger.AttemptLaunch) { a.Operation.EffectBudget = -1 },
		"empty project":     func(a *ledger.AttemptLaunch) { a.Operation.Scope.ProjectID = "" },
	} {
		a := launchOf(scopeB, "op5", "a1", 1)
		mut(&a)
		_, err := l.LaunchAttempt(bg, a)
		wantErr(t, name, err, ledger.ErrInvalid)
	}
	_, err = l.Operation(bg, scopeB, "op5")
	wantErr(t, "the operation of malformed launches", err, ledger.ErrNotFound)
}

// testRacingLaunches races launches of one new operation, each for its own
// attempt at generation 1, and launches of new operations sharing one
// bootstrap id: exactly one of each wins, the others are refused
// (*FenceError, ErrChangedInput) and leave nothing behind.
func testRacingLaunches(t *testing.T, l ledger.Ledger) {
	const n = 8
	errs := make([]error, n)
	parallel(n, func(i int) {
		_, errs[i] = l.LaunchAttempt(bg, launchOf(scopeA, "op1", fmt.Sprint("a", i), 1))
	})
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("launches %d and %d both won generation 1", won, i)
		default:
			wantStale(t, fmt.Sprintf("launch %d", i), err)
		}
	}
	if won < 0 {
		t.Fatalf("no launch won: %v", errs)
	}
	v := mustView(t, l, scopeA, "op1")
	if len(v.Attempts) != 1 || len(v.Bootstraps) != 1 || v.Operation.CurrentAttemptID != fmt.Sprint("a", won) {
		t.Fatalf("after the race: %+v", v)
	}

	parallel(n, func(i int) {
		a := launchOf(scopeB, fmt.Sprint("op", i), "a1", 1)
		a.BootstrapID = "shared"
		_, errs[i] = l.LaunchAttempt(bg, a)
	})
	won = -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("operations %d and %d were both issued bootstrap id %q", won, i, "shared")
		case !errors.Is(err, ledger.ErrChangedInput):
			t.Fatalf("launch %d: err = %v, want ErrChangedInput", i, err)
		}
	}
	for i := range n {
		_, err := l.Operation(bg, scopeB, fmt.Sprint("op", i))
		if (i == won) != (err == nil) {
			t.Fatalf("operation %d (winner %d): %v", i, won, err)
		}
	}
	Check(t, l)
}
