package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// style is how a trace writes ids and digests: in full (invoke, demo -v),
// or shortened to their first hex digits (the demo), so that its lines
// stay within 100 columns.
type style struct{ short bool }

// id writes an id that ends in a long hex run ("attempt-9a10…", a
// session id) with the run cut to 8 digits, when the style is short.
func (s style) id(v string) string {
	if !s.short {
		return v
	}
	i := len(v)
	for i > 0 && isHex(v[i-1]) {
		i--
	}
	if len(v)-i < 16 {
		return v
	}
	return v[:i+8] + "…"
}

// digest writes a digest, shortened (shortDigest) when the style is
// short.
func (s style) digest(d canon.Digest) string {
	if !s.short {
		return string(d)
	}
	return shortDigest(string(d))
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

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

// tracer writes a readable line for each supervise.Event, and lets a step
// of the demo act on one.
type tracer struct {
	mu   sync.Mutex // guards w's lines and hook
	w    io.Writer
	st   style
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
	if line := t.st.eventLine(ev); line != "" {
		fmt.Fprintln(t.w, line)
	}
	if t.hook != nil {
		t.hook(ev)
	}
}

// eventLine renders one event.
func (s style) eventLine(ev supervise.Event) string {
	switch ev.Kind {
	case supervise.EventOperation:
		op := ev.Operation
		return fmt.Sprintf("  operation  %s: %s, %s, effect budget %d (%d used)",
			op.OperationID, op.State, op.CapabilityID, op.EffectBudget, op.EffectsUsed)
	case supervise.EventAttempt:
		return fmt.Sprintf("  attempt    %s: fencing generation %d (every older attempt is fenced off)", s.id(ev.AttemptID), ev.Generation)
	case supervise.EventLaunch:
		return fmt.Sprintf("  launch     %s issued; launch digest %s; effect budget %d",
			s.id(ev.BootstrapID), s.digest(ev.LaunchDigest), ev.Budget)
	case supervise.EventRequest:
		return "  ipc        " + s.requestLine(ev)
	case supervise.EventOutcome:
		return "  outcome    " + s.outcomeLine(ev.Outcome)
	}
	return ""
}

// requestLine renders one IPC request and the state it was answered. An
// effect's authorization is left to the ledger's lines (printEvidence),
// except in full.
func (s style) requestLine(ev supervise.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-15s", ev.Method)
	if ev.Method == ipc.MethodEffect && ev.Effect != nil {
		fmt.Fprintf(&b, " %s", ev.Effect.LogicalEffectID)
	}
	fmt.Fprintf(&b, " -> %s", ev.State)
	switch {
	case ev.Method == ipc.MethodBootstrap && ev.State == ipc.StateAllowed:
		fmt.Fprintf(&b, ": redeemed by pid %d, session %s", ev.PID, s.id(ev.SessionID))
	case ev.Method == ipc.MethodEffect && ev.Effect != nil:
		e := ev.Effect
		sep := ": "
		if !s.short {
			fmt.Fprintf(&b, ": authorization %s", e.AuthorizationID)
			sep = ", "
		}
		if e.ReceiptID != "" {
			fmt.Fprintf(&b, "%sreceipt %s", sep, e.ReceiptID)
		}
		switch {
		case ev.Redelivery:
			b.WriteString(" (redelivered, no dispatch)")
		case ev.Dispatched:
			b.WriteString(" (dispatched)")
		}
	case ev.Method == ipc.MethodPublish && ev.Result != nil:
		fmt.Fprintf(&b, ": artifact %s", s.ids(ev.Result.ArtifactRefs))
	}
	if ev.Reason != "" && ev.State != ipc.StateAllowed {
		fmt.Fprintf(&b, " (%s)", ev.Reason)
	}
	return b.String()
}

// ids writes a list of ids.
func (s style) ids(v []string) string {
	out := make([]string, len(v))
	for i, id := range v {
		out[i] = s.id(id)
	}
	return strings.Join(out, ", ")
}

// outcomeLine renders an outcome in one line.
func (s style) outcomeLine(o *supervise.Outcome) string {
	var b strings.Builder
	b.WriteString(string(o.State))
	if o.Reconnected {
		b.WriteString(" (reconnected: the accepted result, nothing launched)")
	}
	if o.ErrorCode != "" {
		fmt.Fprintf(&b, " %s", o.ErrorCode)
	}
	if o.Result != nil {
		fmt.Fprintf(&b, ": result %s, artifact %s", s.digest(o.Result.DataDigest), s.ids(o.Result.ArtifactRefs))
	}
	if o.Reason != "" {
		fmt.Fprintf(&b, " — %s", o.Reason)
	}
	return b.String()
}

// printEvidence writes what the ledger holds about an operation.
func (s style) printEvidence(ctx context.Context, w io.Writer, l ledger.Ledger, scope ledger.Scope, operationID string) error {
	v, err := l.Operation(ctx, scope, operationID)
	if err != nil {
		return fmt.Errorf("reading operation %s from the ledger: %w", operationID, err)
	}
	op := v.Operation
	fmt.Fprintf(w, "  ledger     %s: %s; fence: %s, generation %d\n",
		op.OperationID, op.State, s.id(op.CurrentAttemptID), op.CurrentGeneration)
	// By generation, the order they were issued in (the view orders them
	// by id).
	slices.SortStableFunc(v.Bootstraps, func(a, b ledger.Bootstrap) int { return cmp.Compare(a.Generation, b.Generation) })
	for _, bs := range v.Bootstraps {
		if bs.Redeemed {
			fmt.Fprintf(w, "             %s (generation %d): redeemed once, by pid %d, session %s\n",
				s.id(bs.BootstrapID), bs.Generation, bs.RedeemedPID, s.id(bs.RedeemedSessionID))
		} else {
			fmt.Fprintf(w, "             %s (generation %d): never redeemed\n", s.id(bs.BootstrapID), bs.Generation)
		}
	}
	for _, e := range v.Effects {
		fmt.Fprintf(w, "             %s: %s, %s", e.LogicalEffectID, e.State, s.id(e.AuthorizationID))
		if e.ReceiptID != "" {
			fmt.Fprintf(w, ", receipt %s", e.ReceiptID)
		}
		if e.Reason != "" {
			fmt.Fprintf(w, ", reason %s", e.Reason)
		}
		fmt.Fprintf(w, ", generation %d\n", e.Generation)
	}
	fmt.Fprintf(w, "             budget: %d of %d effects used, %d left\n", op.EffectsUsed, op.EffectBudget, op.EffectBudget-op.EffectsUsed)
	if v.Result != nil {
		fmt.Fprintf(w, "             result: %s, artifact %s, accepted from generation %d\n",
			s.digest(v.Result.DataDigest), s.ids(v.Result.ArtifactRefs), v.Result.Generation)
	}
	return nil
}

// printArtifact writes the accepted result's artifact bytes, with its
// digest unless the style is short (the result's line above has it).
func (s style) printArtifact(ctx context.Context, w io.Writer, l ledger.Ledger, o *supervise.Outcome) error {
	if o.Result == nil || len(o.Result.ArtifactRefs) == 0 {
		return nil
	}
	a, err := l.Artifact(ctx, o.Scope, o.Result.ArtifactRefs[0])
	if err != nil {
		return fmt.Errorf("reading the artifact: %w", err)
	}
	if s.short {
		fmt.Fprintf(w, "  artifact   %s: %s\n", s.id(a.Ref), a.Bytes)
		return nil
	}
	fmt.Fprintf(w, "  artifact   %s (%s): %s\n", a.Ref, a.Digest, a.Bytes)
	return nil
}
