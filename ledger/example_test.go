package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// A newer attempt fences the older one off: every write the old attempt
// tries afterwards is refused with a *FenceError, which names both fences,
// while a redelivery through the new attempt gets the effect as recorded.
func ExampleFenceError() {
	ctx := context.Background()
	var l ledger.Ledger = memory.New()
	defer l.Close(ctx)

	scope := ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}
	request, _ := canon.DigestJSON([]byte(`{"capability_id":"example.two_effects@1.0.0","arguments":{"target":"doc-1"}}`))
	effect, _ := canon.DigestJSON([]byte(`{"logical_effect_id":"effect-1","operation":"prepare"}`))
	launchDigest, _ := canon.DigestJSON([]byte(`{"launch":"context"}`))
	spec := ledger.OperationSpec{
		Scope: scope, OperationID: "op-1", CapabilityID: "example.two_effects@1.0.0",
		RequestDigest: request, ManifestDigest: request, EffectBudget: 2,
		Deadline: time.Now().Add(time.Minute),
	}
	if _, err := l.CreateOperation(ctx, spec); err != nil {
		fmt.Println(err)
		return
	}
	// run takes an attempt as far as authorizing effect-1.
	run := func(attemptID, bootstrapID string, pid int) (ledger.Fence, ledger.EffectGrant, error) {
		// One write starts the attempt, fencing off the one before, and
		// issues its bootstrap id.
		v, err := l.Operation(ctx, scope, "op-1")
		if err != nil {
			return ledger.Fence{}, ledger.EffectGrant{}, err
		}
		f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: spec, AttemptID: attemptID,
			Generation: v.Operation.CurrentGeneration + 1, BootstrapID: bootstrapID, LaunchDigest: launchDigest})
		if err != nil {
			return f, ledger.EffectGrant{}, err
		}
		if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: bootstrapID,
			LaunchDigest: launchDigest, PID: pid, SessionID: "session-" + attemptID}); err != nil {
			return f, ledger.EffectGrant{}, err
		}
		if _, err := l.Admit(ctx, f, request); err != nil {
			return f, ledger.EffectGrant{}, err
		}
		g, err := l.BeginEffect(ctx, f, "effect-1", effect)
		return f, g, err
	}

	old, first, err := run("attempt-1", "bootstrap-1", 1001)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The first attempt's host is lost before it reports the dispatch.
	_, second, err := run("attempt-2", "bootstrap-2", 1002)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("redelivery:", second.Redelivery, "same authorization:", second.Effect.AuthorizationID == first.Effect.AuthorizationID)

	// The old attempt's host keeps talking.
	_, err = l.ConfirmEffect(ctx, old, "effect-1", effect, "receipt-from-old-host")
	var fe *ledger.FenceError
	if errors.As(err, &fe) {
		fmt.Println("stale:", errors.Is(err, ledger.ErrStaleFence), fe.Presented.Generation, "<", fe.CurrentGeneration)
	}
	// Output:
	// redelivery: true same authorization: true
	// stale: true 1 < 2
}
