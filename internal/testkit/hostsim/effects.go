package hostsim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// NewNonce returns a fresh host nonce: 32 random bytes as 64 lowercase hex
// digits.
func NewNonce() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("hostsim: nonce: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// NotAllowedError is returned by EffectPort.Request when the Runtime
// answered with a state other than allowed. The reply is kept as the port's
// pending reply.
type NotAllowedError struct {
	State ipc.ReplyState
	Reply *ipc.Reply
}

// Error names the state.
func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("hostsim: the Runtime answered the effect %s", e.State)
}

// Unwrap returns ErrNotAllowed.
func (e *NotAllowedError) Unwrap() error { return ErrNotAllowed }

// EffectPort is the "runtime.effects" service the host injects into a
// provider (doc/protocol.md, “Effect port”): it fingerprints each
// EffectRequest, refuses changed input and budget overruns locally, re-sends
// a repeated request as a new frame, and latches shut once an effect is
// pending or unknown. It is safe for concurrent use; requests are serialized.
type EffectPort struct {
	ch     *Channel
	budget int64

	mu        sync.Mutex
	seen      map[string]canon.Digest // fingerprint by logical effect id, failed ids included
	unknown   map[string]bool
	confirmed map[string]bool
	pending   *ipc.Reply
}

// NewEffectPort returns a port sending over ch that forwards at most budget
// distinct logical effects (total_dispatch_budget; 0 forwards none).
func NewEffectPort(ch *Channel, budget int64) *EffectPort {
	return &EffectPort{ch: ch, budget: budget, seen: map[string]canon.Digest{},
		unknown: map[string]bool{}, confirmed: map[string]bool{}}
}

// Request asks the Runtime for one effect and returns the allowed reply's
// whole data object. Errors: ErrEffectsBlocked, ErrInvalidEffect,
// ErrChangedInput and ErrBudget are local (nothing sent); ErrExchange (the
// channel failed; the effect stays unknown), ErrReceipt (the allowed reply
// does not bind the request; it stays unknown) and *NotAllowedError come
// after a frame was sent.
func (p *EffectPort) Request(ctx context.Context, req ipc.EffectRequest) (map[string]any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != nil || len(p.unknown) > 0 {
		return nil, ErrEffectsBlocked
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEffect, err)
	}
	fp, err := req.Digest()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidEffect, err)
	}
	id := req.LogicalEffectID
	if prev, ok := p.seen[id]; ok {
		if prev != fp {
			return nil, fmt.Errorf("%w: %q", ErrChangedInput, id)
		}
	} else {
		if int64(len(p.seen)) >= p.budget {
			return nil, fmt.Errorf("%w: %d distinct effects allowed", ErrBudget, p.budget)
		}
		p.seen[id] = fp
	}
	p.unknown[id] = true
	rep, err := p.ch.Call(ctx, ipc.MethodEffect, req)
	if err != nil {
		return nil, err
	}
	if rep.State != ipc.StateAllowed {
		p.pending = rep
		if rep.State.NotConsumed() {
			delete(p.unknown, id)
		}
		return nil, &NotAllowedError{State: rep.State, Reply: rep}
	}
	data := rep.Data.(map[string]any)
	if err := checkReceipt(data, id, fp); err != nil {
		return nil, err
	}
	delete(p.unknown, id)
	p.confirmed[id] = true
	return data, nil
}

func checkReceipt(data map[string]any, id string, fp canon.Digest) error {
	nonEmpty := func(k string) bool { s, ok := data[k].(string); return ok && s != "" }
	switch {
	case data["logical_effect_id"] != id:
		return fmt.Errorf("%w: logical_effect_id", ErrReceipt)
	case data["effect_request_digest"] != string(fp):
		return fmt.Errorf("%w: effect_request_digest", ErrReceipt)
	case !nonEmpty("receipt_id"):
		return fmt.Errorf("%w: receipt_id", ErrReceipt)
	case !nonEmpty("authorization_id"):
		return fmt.Errorf("%w: authorization_id", ErrReceipt)
	case data["effect_disposition"] != protocol.EffectDispositionConfirmed:
		return fmt.Errorf("%w: effect_disposition", ErrReceipt)
	}
	return nil
}

// Pending returns the first non-allowed effect reply, or nil.
func (p *EffectPort) Pending() *ipc.Reply {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pending
}

// Unknown reports whether some effect's outcome is unknown.
func (p *EffectPort) Unknown() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.unknown) > 0
}

// Distinct returns how many distinct logical effect ids consumed budget.
func (p *EffectPort) Distinct() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

// Disposition is the HostResult effect_disposition the port implies:
// "unknown" if any effect is unknown, else "confirmed" if any was
// confirmed, else "none".
func (p *EffectPort) Disposition() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(p.unknown) > 0:
		return DispositionUnknown
	case len(p.confirmed) > 0:
		return DispositionConfirmed
	}
	return DispositionNone
}
