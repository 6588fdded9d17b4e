package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// The lifecycle of one logical effect: the attempt is fenced, bootstrapped
// and admitted; the effect is authorized (debiting the budget) before
// dispatch and confirmed with the dispatcher's receipt after; a redelivery
// of the same effect gets the recorded authorization and costs nothing; a
// new effect past the budget is refused.
func Example_effectLifecycle() {
	ctx := context.Background()
	l := memory.New()
	defer l.Close(ctx)

	scope := ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}
	request, _ := canon.DigestJSON([]byte(`{"capability_id":"example.two_effects@1.0.0","arguments":{}}`))
	launch, _ := canon.DigestJSON([]byte(`{"launch":"context"}`))
	effect, _ := canon.DigestJSON([]byte(`{"logical_effect_id":"effect-1"}`))
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}

	// One write creates the operation, starts its first attempt and issues
	// the attempt's bootstrap id.
	f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{
		Operation: ledger.OperationSpec{Scope: scope, OperationID: "op-1", CapabilityID: "example.two_effects@1.0.0",
			RequestDigest: request, ManifestDigest: request, EffectBudget: 1},
		AttemptID: "attempt-1", Generation: 1, BootstrapID: "bootstrap-1", LaunchDigest: launch})
	must(err)
	_, err = l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "bootstrap-1", LaunchDigest: launch, PID: 4242, SessionID: "session-1"})
	must(err)
	_, err = l.Admit(ctx, f, request)
	must(err)

	g, err := l.BeginEffect(ctx, f, "effect-1", effect)
	must(err)
	fmt.Println("begin:", g.Effect.State, "redelivery:", g.Redelivery)
	// ... the dispatcher performs the effect, passing g.Effect.AuthorizationID ...
	e, err := l.ConfirmEffect(ctx, f, "effect-1", effect, "receipt-1")
	must(err)
	fmt.Println("confirm:", e.State, e.ReceiptID)

	again, err := l.BeginEffect(ctx, f, "effect-1", effect)
	must(err)
	fmt.Println("again:", again.Effect.State, "redelivery:", again.Redelivery,
		"same authorization:", again.Effect.AuthorizationID == g.Effect.AuthorizationID)

	other, _ := canon.DigestJSON([]byte(`{"logical_effect_id":"effect-2"}`))
	_, err = l.BeginEffect(ctx, f, "effect-2", other)
	fmt.Println("effect-2 refused:", errors.Is(err, ledger.ErrBudgetExhausted))

	v, err := l.Operation(ctx, scope, "op-1")
	must(err)
	fmt.Println("budget used:", v.Operation.EffectsUsed, "of", v.Operation.EffectBudget)
	// Output:
	// begin: authorized redelivery: false
	// confirm: confirmed receipt-1
	// again: confirmed redelivery: true same authorization: true
	// effect-2 refused: true
	// budget used: 1 of 1
}

// Two controllers share a ledger. c1 launches an attempt and authorizes an
// effect: while c1's lease is live the effect is in flight, Resolve
// refuses it and nobody may take the attempt over. Once c1's lease ends
// (released here; expired by time in a crash), its effect is unknown, its
// operation orphaned, and c2 takes it over with an attempt of its own.
func Example_controllerLeases() {
	ctx := context.Background()
	l := memory.New()
	defer l.Close(ctx)
	must := func(err error) {
		if err != nil {
			log.Fatal(err)
		}
	}
	scope := ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}
	request, _ := canon.DigestJSON([]byte(`{"capability_id":"example.one_effect@1.0.0","arguments":{}}`))
	launch, _ := canon.DigestJSON([]byte(`{"launch":"context"}`))
	effect, _ := canon.DigestJSON([]byte(`{"logical_effect_id":"effect-1"}`))

	for _, c := range []string{"c1", "c2"} {
		_, err := l.AcquireLease(ctx, c, 30*time.Second) // renewed every 10 s or so
		must(err)
	}
	f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{
		Operation: ledger.OperationSpec{Scope: scope, OperationID: "op-1", CapabilityID: "example.one_effect@1.0.0",
			RequestDigest: request, ManifestDigest: request, EffectBudget: 1},
		AttemptID: "attempt-1", Generation: 1, BootstrapID: "bootstrap-1", LaunchDigest: launch, ControllerID: "c1"})
	must(err)
	_, err = l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "bootstrap-1", LaunchDigest: launch, PID: 4242, SessionID: "session-1"})
	must(err)
	_, err = l.Admit(ctx, f, request)
	must(err)
	_, err = l.BeginEffect(ctx, f, "effect-1", effect)
	must(err)

	flying, err := l.ListInFlight(ctx)
	must(err)
	fmt.Println("in flight:", len(flying), "under", flying[0].ControllerID)
	_, err = l.Resolve(ctx, scope, "op-1", "effect-1", effect, ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
	fmt.Println("resolve refused in flight:", errors.Is(err, ledger.ErrInFlight))
	_, err = l.TakeOver(ctx, ledger.Takeover{From: f, AttemptID: "attempt-2", ControllerID: "c2"})
	fmt.Println("takeover refused, owner live:", errors.Is(err, ledger.ErrOwnerLive))

	_, err = l.ReleaseLease(ctx, "c1")
	must(err)
	unknown, err := l.ListUnknown(ctx)
	must(err)
	fmt.Println("unknown after c1 ended:", len(unknown))
	f2, err := l.TakeOver(ctx, ledger.Takeover{From: f, AttemptID: "attempt-2", ControllerID: "c2"})
	must(err)
	fmt.Println("taken over:", f2.AttemptID, "generation", f2.Generation)
	_, err = l.BeginEffect(ctx, f, "effect-2", effect)
	fmt.Println("c1's attempt fenced off:", errors.Is(err, ledger.ErrStaleFence))
	// Output:
	// in flight: 1 under c1
	// resolve refused in flight: true
	// takeover refused, owner live: true
	// unknown after c1 ended: 1
	// taken over: attempt-2 generation 2
	// c1's attempt fenced off: true
}
