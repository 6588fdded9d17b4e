// Package ledgertest is the conformance suite for [ledger.Ledger]
// implementations. Every backend — this module's and third parties' — runs
// [Run] from one test of its own:
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return memory.New() })
//	}
//
// Durable backends also run [RunDurable], which closes and reopens the
// ledger and checks that nothing committed was lost or changed.
//
// Run under -race: several subtests race goroutines on one ledger. The
// suite honours -short (fewer property-test checks).
package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Opener returns a fresh, empty ledger for one subtest. The suite closes it
// (and checks Close's error) in t.Cleanup; the opener need not.
type Opener func(t *testing.T) ledger.Ledger

// Run runs every conformance subtest against ledgers made by open. Each
// subtest is named after the guarantee it checks and ends with a
// consistency check of everything the ledger holds.
func Run(t *testing.T, open Opener) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, l ledger.Ledger)
	}{
		{"CreateOperationIdempotent", testCreateOperation},
		{"InvalidArgumentsRefused", testInvalid},
		{"AttemptsIssueIncreasingFences", testAttempts},
		{"StaleFenceRefusedEverywhere", testStaleEverywhere},
		{"RacingAttemptsStrictlyIncreasing", testRacingAttempts},
		{"LaunchAttemptRecordsOneAttempt", testLaunchAttempt},
		{"LaunchAttemptRefusalsWriteNothing", testLaunchAttemptRefusals},
		{"RacingLaunchesOneWins", testRacingLaunches},
		{"BootstrapRedeemedOnce", testBootstrap},
		{"BootstrapIDBoundToOneAttempt", testBootstrapReuse},
		{"ProtocolOrderEnforced", testOrder},
		{"RacingRedemptionsOneWins", testRacingRedeem},
		{"AdmissionBindsRequestDigest", testAdmit},
		{"DeadlineRefusesAdmissionAndNewEffects", testDeadline},
		{"EffectLifecycle", testEffectLifecycle},
		{"UnknownUntilResolve", testUnknown},
		{"FingerprintCheckedOnEveryPath", testFingerprint},
		{"BudgetExhausted", testBudget},
		{"ManyEffectsPerOperation", testManyEffects},
		{"RedeliveryAcrossAttempts", testRedeliveryAcrossAttempts},
		{"RacingSameEffectOneAuthorization", testRacingSameEffect},
		{"BudgetNeverExceededUnderConcurrency", testRacingBudget},
		{"ResultAcceptedOnce", testResult},
		{"ArtifactScope", testArtifactScope},
		{"Cancellation", testCancel},
		{"ScopesIsolated", testScopes},
		{"ListOperationsOrderedAndPaged", testListOperations},
		{"EvidenceRecordedOnce", testEvidence},
		{"ControllerLeases", testLeases},
		{"AttemptsAndEffectsCarryTheirController", testOwnership},
		{"ResolveRefusedInFlight", testResolveInFlight},
		{"ExpiredLeaseRefusesNewWork", testExpiredRefused},
		{"TakeOverOnlyOrphaned", testTakeOver},
		{"RacingTakeOversOneWins", testRacingTakeOvers},
		{"ContextDone", testContextDone},
		{"Closed", testClosed},
		{"StateMachine", func(t *testing.T, _ ledger.Ledger) { testModel(t, open) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := openChecked(t, open)
			tt.fn(t, l)
			Check(t, l)
		})
	}
}

func openChecked[L ledger.Ledger](t *testing.T, open func(t *testing.T) L) L {
	t.Helper()
	l := open(t)
	if any(l) == nil {
		t.Fatal("open returned a nil ledger")
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return l
}

// Check verifies the invariants of everything l holds that the suite can
// find: for every operation returned by ListUnknown and every operation
// named in ops, effects used equal the effects recorded and stay within the
// budget, ordinals are 1..n, attempts carry generations 1..n with the last
// one current, an accepted result exists exactly when the operation is
// completed, every admitted attempt redeemed a bootstrap id of its own and
// only admitted attempts authorized effects or results, and ListUnknown
// and ListInFlight together list exactly the authorized and unknown
// effects of those operations, ListInFlight only authorized ones.
//
// A backend that has its own whole-store check (a Check(ctx) error method,
// as ledger/bolt and ledger/memory have) must pass it too.
func Check(t testing.TB, l ledger.Ledger, ops ...ledger.Fence) {
	t.Helper()
	ctx := context.Background()
	unknown, err := l.ListUnknown(ctx)
	if errors.Is(err, ledger.ErrClosed) {
		return
	}
	if err != nil {
		t.Fatalf("ListUnknown: %v", err)
	}
	if c, ok := l.(interface{ Check(context.Context) error }); ok {
		if err := c.Check(ctx); err != nil {
			t.Errorf("the backend's own Check: %v", err)
		}
	}
	type key struct {
		s  ledger.Scope
		op string
	}
	seen := map[key]bool{}
	var keys []key
	add := func(s ledger.Scope, op string) {
		if k := (key{s, op}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, e := range unknown {
		add(e.Scope, e.OperationID)
	}
	for _, f := range ops {
		add(f.Scope, f.OperationID)
	}
	pending := map[string]bool{}
	for _, e := range unknown {
		if e.State != ledger.EffectAuthorized && e.State != ledger.EffectUnknown {
			t.Errorf("ListUnknown returned effect %q in state %s", e.LogicalEffectID, e.State)
		}
		pending[fmt.Sprint(e.Scope, e.OperationID, e.LogicalEffectID)] = true
	}
	var flying map[string]bool
	inFlight := func() map[string]bool {
		if flying != nil {
			return flying
		}
		es, err := l.ListInFlight(ctx)
		if err != nil {
			t.Fatalf("ListInFlight: %v", err)
		}
		flying = map[string]bool{}
		for _, e := range es {
			k := fmt.Sprint(e.Scope, e.OperationID, e.LogicalEffectID)
			if e.State != ledger.EffectAuthorized || pending[k] {
				t.Errorf("ListInFlight returned effect %q in state %s (listed by ListUnknown: %v)", e.LogicalEffectID, e.State, pending[k])
			}
			flying[k] = true
		}
		return flying
	}
	for _, k := range keys {
		v, err := l.Operation(ctx, k.s, k.op)
		if errors.Is(err, ledger.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("Operation(%v, %q): %v", k.s, k.op, err)
		}
		checkView(t, v, pending, inFlight)
	}
}

// checkView checks one operation's view. pending holds the effects
// ListUnknown listed; inFlight returns those ListInFlight lists, called
// only when an authorized effect is not in pending (so that a backend
// without leases is not asked).
func checkView(t testing.TB, v ledger.OperationView, pending map[string]bool, inFlight func() map[string]bool) {
	t.Helper()
	o := v.Operation
	if o.EffectsUsed != int64(len(v.Effects)) || o.EffectsUsed > o.EffectBudget {
		t.Errorf("operation %q: effects used %d, recorded %d, budget %d", o.OperationID, o.EffectsUsed, len(v.Effects), o.EffectBudget)
	}
	var ords []int64
	for _, e := range v.Effects {
		ords = append(ords, e.Ordinal)
		if e.AuthorizationID == "" {
			t.Errorf("effect %q has no authorization id", e.LogicalEffectID)
		}
		if (e.State == ledger.EffectConfirmed) != (e.ReceiptID != "") {
			t.Errorf("effect %q: state %s with receipt %q", e.LogicalEffectID, e.State, e.ReceiptID)
		}
		if (e.State == ledger.EffectNotConsumed) != (e.Reason != "") {
			t.Errorf("effect %q: state %s with reason %q", e.LogicalEffectID, e.State, e.Reason)
		}
		want := e.State == ledger.EffectAuthorized || e.State == ledger.EffectUnknown
		k := fmt.Sprint(e.Scope, e.OperationID, e.LogicalEffectID)
		got := pending[k]
		if want && !got && e.State == ledger.EffectAuthorized && inFlight()[k] {
			got = true // in flight under a live controller, not unknown
		}
		if got != want {
			t.Errorf("effect %q in state %s: listed by ListUnknown or ListInFlight = %v", e.LogicalEffectID, e.State, got)
		}
	}
	slices.Sort(ords)
	for i, n := range ords {
		if n != int64(i+1) {
			t.Errorf("operation %q: effect ordinals %v, want 1..%d", o.OperationID, ords, len(ords))
			break
		}
	}
	for i, a := range v.Attempts {
		if a.Generation != int64(i+1) {
			t.Errorf("operation %q: attempt %d has generation %d", o.OperationID, i, a.Generation)
		}
	}
	if n := len(v.Attempts); n > 0 && (o.CurrentGeneration != int64(n) || o.CurrentAttemptID != v.Attempts[n-1].AttemptID) {
		t.Errorf("operation %q: current (%q, %d) is not the last attempt", o.OperationID, o.CurrentAttemptID, o.CurrentGeneration)
	}
	// Protocol order: every admitted attempt redeemed one of its own
	// bootstrap ids, and only admitted attempts authorized effects or had
	// their result accepted.
	admitted := map[string]bool{}
	for _, a := range v.Attempts {
		admitted[a.AttemptID] = a.Admitted
		if a.Admitted && !slices.ContainsFunc(v.Bootstraps, func(b ledger.Bootstrap) bool {
			return b.AttemptID == a.AttemptID && b.Generation == a.Generation && b.Redeemed
		}) {
			t.Errorf("operation %q: attempt %q admitted without a redeemed bootstrap id", o.OperationID, a.AttemptID)
		}
	}
	for _, e := range v.Effects {
		if !admitted[e.AttemptID] {
			t.Errorf("operation %q: effect %q authorized by attempt %q, which was not admitted", o.OperationID, e.LogicalEffectID, e.AttemptID)
		}
	}
	if v.Result != nil && !admitted[v.Result.AttemptID] {
		t.Errorf("operation %q: result of attempt %q, which was not admitted", o.OperationID, v.Result.AttemptID)
	}
	if (v.Result != nil) != (o.State == ledger.OperationCompleted) {
		t.Errorf("operation %q: state %s, result %v", o.OperationID, o.State, v.Result)
	}
	if v.Result != nil {
		checkRefs(t, v.Result.ArtifactRefs)
	}
}

func checkRefs(t testing.TB, refs []string) {
	t.Helper()
	if len(refs) == 0 {
		t.Errorf("result has no artifact refs")
	}
	for _, r := range refs {
		if n := utf8.RuneCountInString(r); r == "" || n > 256 || !utf8.ValidString(r) {
			t.Errorf("artifact ref %q is not 1..256 code points", r)
		}
	}
}

// Fixture values.

// Digest returns a distinct valid digest for name.
func Digest(name string) canon.Digest { return canon.Sum([]byte(name)) }

var (
	scopeA = ledger.Scope{OrganizationID: "org-a", ProjectID: "proj-1"}
	scopeB = ledger.Scope{OrganizationID: "org-b", ProjectID: "proj-1"}
	scopeC = ledger.Scope{OrganizationID: "org-a", ProjectID: "proj-2"}
)

func spec(s ledger.Scope, op string, budget int64) ledger.OperationSpec {
	return ledger.OperationSpec{
		Scope: s, OperationID: op, CapabilityID: "cap.echo",
		RequestDigest: Digest("request:" + op), ManifestDigest: Digest("manifest"),
		EffectBudget: budget, Deadline: time.Date(2999, 1, 2, 3, 4, 5, 6, time.UTC),
	}
}

func mustCreate(t testing.TB, l ledger.Ledger, sp ledger.OperationSpec) ledger.Operation {
	t.Helper()
	o, err := l.CreateOperation(context.Background(), sp)
	if err != nil {
		t.Fatalf("CreateOperation(%q): %v", sp.OperationID, err)
	}
	return o
}

func mustStart(t testing.TB, l ledger.Ledger, s ledger.Scope, op, attempt string) ledger.Fence {
	t.Helper()
	f, err := l.StartAttempt(context.Background(), s, op, attempt)
	if err != nil {
		t.Fatalf("StartAttempt(%q, %q): %v", op, attempt, err)
	}
	return f
}

// newOp creates an operation with the given budget, starts attempt "a1"
// on it and admits it (see ready).
func newOp(t testing.TB, l ledger.Ledger, op string, budget int64) ledger.Fence {
	t.Helper()
	mustCreate(t, l, spec(scopeA, op, budget))
	f := mustStart(t, l, scopeA, op, "a1")
	ready(t, l, f)
	return f
}

// bootID is the bootstrap id ready issues for f; unique per attempt.
func bootID(f ledger.Fence) string {
	return fmt.Sprintf("boot/%s/%s/%s/%s", f.Scope.OrganizationID, f.Scope.ProjectID, f.OperationID, f.AttemptID)
}

// prepare runs the protocol's opening for the attempt f names: issue a
// bootstrap id, redeem it, admit the request (the operation's request
// digest must be spec's). It returns the first error.
func prepare(l ledger.Ledger, f ledger.Fence) error {
	launch := Digest("launch")
	if _, err := issue(l, f, bootID(f), launch); err != nil {
		return err
	}
	if _, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: bootID(f), LaunchDigest: launch, PID: 1, SessionID: "sess"}); err != nil {
		return err
	}
	_, err := l.Admit(bg, f, Digest("request:"+f.OperationID))
	return err
}

// ready is prepare that fails the test on error.
func ready(t testing.TB, l ledger.Ledger, f ledger.Fence) {
	t.Helper()
	if err := prepare(l, f); err != nil {
		t.Fatalf("bootstrap and admit %s of %s: %v", f.AttemptID, f.OperationID, err)
	}
}

func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func wantStale(t testing.TB, what string, err error) *ledger.FenceError {
	t.Helper()
	var fe *ledger.FenceError
	if !errors.As(err, &fe) || !errors.Is(err, ledger.ErrStaleFence) {
		t.Fatalf("%s: err = %v, want a *ledger.FenceError wrapping ErrStaleFence", what, err)
	}
	return fe
}

func mustBegin(t testing.TB, l ledger.Ledger, f ledger.Fence, id string, d canon.Digest) ledger.EffectGrant {
	t.Helper()
	g, err := l.BeginEffect(context.Background(), f, id, d)
	if err != nil {
		t.Fatalf("BeginEffect(%q): %v", id, err)
	}
	return g
}

func mustView(t testing.TB, l ledger.Ledger, s ledger.Scope, op string) ledger.OperationView {
	t.Helper()
	v, err := l.Operation(context.Background(), s, op)
	if err != nil {
		t.Fatalf("Operation(%q): %v", op, err)
	}
	return v
}

func diff(t testing.TB, what string, got, want any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// parallel runs fn(i) for i in [0,n) on n goroutines started together.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

func cmpDiff(want, got any) string { return cmp.Diff(want, got) }

// issue is Issue in the background context.
func issue(l ledger.Ledger, f ledger.Fence, id string, launch canon.Digest) (ledger.Bootstrap, error) {
	return Issue(bg, l, f, id, launch)
}

// Issue issues bootstrap id to the attempt f names, with launch, as a
// controller that started the attempt itself (StartAttempt) does: one
// LaunchAttempt with the recorded operation's spec and the attempt's
// controller. It returns the bootstrap record the ledger then holds, or
// LaunchAttempt's refusal.
func Issue(ctx context.Context, l ledger.Ledger, f ledger.Fence, id string, launch canon.Digest) (ledger.Bootstrap, error) {
	v, err := l.Operation(ctx, f.Scope, f.OperationID)
	if err != nil {
		return ledger.Bootstrap{}, err
	}
	a := ledger.AttemptLaunch{Operation: v.Operation.Spec(), AttemptID: f.AttemptID, Generation: f.Generation,
		BootstrapID: id, LaunchDigest: launch}
	for _, at := range v.Attempts {
		if at.AttemptID == f.AttemptID {
			a.ControllerID = at.ControllerID
		}
	}
	if _, err := l.LaunchAttempt(ctx, a); err != nil {
		return ledger.Bootstrap{}, err
	}
	if v, err = l.Operation(ctx, f.Scope, f.OperationID); err != nil {
		return ledger.Bootstrap{}, err
	}
	for _, b := range v.Bootstraps {
		if b.BootstrapID == id {
			return b, nil
		}
	}
	return ledger.Bootstrap{}, fmt.Errorf("ledgertest: bootstrap id %q issued but not in the operation's view", id)
}
