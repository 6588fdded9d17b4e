package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// tracer writes a readable line for each supervise.Event, and lets a step
// of the demo act on one.
type tracer struct {
	mu   sync.Mutex // guards w's lines and hook
	w    io.Writer
	hook func(supervise.Event)
}

// setHook sets (or, with nil, clears) the function called after each event
// is written.
func (t *tracer) setHook(f func(supervise.Event)) {
	t.mu.Lock()
	t.hook = f
	t.mu.Unlock()
}

// observe is the Supervisor's Observer.
func (t *tracer) observe(ev supervise.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if line := eventLine(ev); line != "" {
		fmt.Fprintln(t.w, line)
	}
	if t.hook != nil {
		t.hook(ev)
	}
}

// eventLine renders one event.
func eventLine(ev supervise.Event) string {
	switch ev.Kind {
	case supervise.EventOperation:
		op := ev.Operation
		return fmt.Sprintf("  operation  %s: %s, %s, effect budget %d (%d used)",
			op.OperationID, op.State, op.CapabilityID, op.EffectBudget, op.EffectsUsed)
	case supervise.EventAttempt:
		return fmt.Sprintf("  attempt    %s: fencing generation %d (every older attempt is fenced off)", ev.AttemptID, ev.Generation)
	case supervise.EventLaunch:
		return fmt.Sprintf("  launch     bootstrap id %s issued; launch digest %s; the host may send %d distinct effects",
			ev.BootstrapID, ev.LaunchDigest, ev.Budget)
	case supervise.EventRequest:
		return "  ipc        " + requestLine(ev)
	case supervise.EventOutcome:
		return "  outcome    " + outcomeLine(ev.Outcome)
	}
	return ""
}

// requestLine renders one IPC request and the state it was answered.
func requestLine(ev supervise.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-15s", ev.Method)
	if ev.Method == ipc.MethodEffect && ev.Effect != nil {
		fmt.Fprintf(&b, " %s", ev.Effect.LogicalEffectID)
	}
	fmt.Fprintf(&b, " -> %s", ev.State)
	switch {
	case ev.Method == ipc.MethodBootstrap && ev.State == ipc.StateAllowed:
		fmt.Fprintf(&b, ": redeemed by pid %d, session %s", ev.PID, ev.SessionID)
	case ev.Method == ipc.MethodEffect && ev.Effect != nil:
		e := ev.Effect
		fmt.Fprintf(&b, ": authorization %s", e.AuthorizationID)
		if e.ReceiptID != "" {
			fmt.Fprintf(&b, ", receipt %s", e.ReceiptID)
		}
		switch {
		case ev.Redelivery:
			b.WriteString(" (redelivery: answered from the ledger, not dispatched)")
		case ev.Dispatched:
			b.WriteString(" (dispatched)")
		}
	case ev.Method == ipc.MethodPublish && ev.Result != nil:
		fmt.Fprintf(&b, ": artifact %s", strings.Join(ev.Result.ArtifactRefs, ", "))
	}
	if ev.Reason != "" && ev.State != ipc.StateAllowed {
		fmt.Fprintf(&b, " (%s)", ev.Reason)
	}
	return b.String()
}

// outcomeLine renders an outcome in one line.
func outcomeLine(o *supervise.Outcome) string {
	var b strings.Builder
	b.WriteString(string(o.State))
	if o.Reconnected {
		b.WriteString(" (reconnected: the accepted result, nothing launched)")
	}
	if o.ErrorCode != "" {
		fmt.Fprintf(&b, " %s", o.ErrorCode)
	}
	if o.Result != nil {
		fmt.Fprintf(&b, ": result %s, artifact %s", o.Result.DataDigest, strings.Join(o.Result.ArtifactRefs, ", "))
	}
	if o.Reason != "" {
		fmt.Fprintf(&b, " — %s", o.Reason)
	}
	return b.String()
}

// printEvidence writes what the ledger holds about an operation.
func printEvidence(ctx context.Context, w io.Writer, l ledger.Ledger, scope ledger.Scope, operationID string) error {
	v, err := l.Operation(ctx, scope, operationID)
	if err != nil {
		return fmt.Errorf("reading operation %s from the ledger: %w", operationID, err)
	}
	op := v.Operation
	fmt.Fprintf(w, "  ledger     operation %s: %s; fence: attempt %s, generation %d\n",
		op.OperationID, op.State, op.CurrentAttemptID, op.CurrentGeneration)
	// By generation, the order they were issued in (the view orders them
	// by id).
	slices.SortStableFunc(v.Bootstraps, func(a, b ledger.Bootstrap) int { return cmp.Compare(a.Generation, b.Generation) })
	for _, bs := range v.Bootstraps {
		if bs.Redeemed {
			fmt.Fprintf(w, "             bootstrap %s (generation %d): redeemed once, by pid %d, session %s\n",
				bs.BootstrapID, bs.Generation, bs.RedeemedPID, bs.RedeemedSessionID)
		} else {
			fmt.Fprintf(w, "             bootstrap %s (generation %d): never redeemed\n", bs.BootstrapID, bs.Generation)
		}
	}
	for _, e := range v.Effects {
		fmt.Fprintf(w, "             effect %s: %s, authorization %s", e.LogicalEffectID, e.State, e.AuthorizationID)
		if e.ReceiptID != "" {
			fmt.Fprintf(w, ", receipt %s", e.ReceiptID)
		}
		if e.Reason != "" {
			fmt.Fprintf(w, ", reason %s", e.Reason)
		}
		fmt.Fprintf(w, " (authorized by generation %d)\n", e.Generation)
	}
	fmt.Fprintf(w, "             budget: %d of %d effects used, %d left\n", op.EffectsUsed, op.EffectBudget, op.EffectBudget-op.EffectsUsed)
	if v.Result != nil {
		fmt.Fprintf(w, "             result: %s, artifact %s, accepted from generation %d\n",
			v.Result.DataDigest, strings.Join(v.Result.ArtifactRefs, ", "), v.Result.Generation)
	}
	return nil
}

// shortDigest shortens a "sha256:<64 hex>" digest to its algorithm and
// first 12 hex digits, enough to tell digests apart by eye; anything
// else is returned as it is.
func shortDigest(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return alg + ":" + hex[:12] + "…"
}
