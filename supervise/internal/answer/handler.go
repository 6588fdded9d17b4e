package answer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// Config configures the Handler of one attempt. Ledger, Fence, Binding
// and BootstrapID are required; New copies the config. It is
// handler.Config (whose fields it documents), with what a Supervisor
// sets besides.
type Config struct {
	// Ledger is the durable truth every decision is checked against.
	Ledger ledger.Ledger
	// Fence is the attempt's fence, as StartAttempt returned it.
	Fence ledger.Fence
	// Binding is the AttemptBinding the child was launched with. Its
	// organization, project, operation, attempt and generation must be the
	// Fence's.
	Binding ipc.AttemptBinding
	// BootstrapID is the id issued for this attempt (ledger
	// LaunchAttempt) and sent in the LaunchContext.
	BootstrapID string
	// Manifest, when set, is the admitted manifest of the capability:
	// published data is validated against its response_schema before it is
	// accepted. Nil skips that check (the host has validated it already).
	Manifest *manifest.CapabilityManifest
	// Validator compiles and caches the response schema; nil means a
	// private one.
	Validator *manifest.Validator
	// Authority decides admission and new effects; nil means AllowAll.
	Authority port.Authority
	// Dispatcher consumes authorized effects; nil means NoEffects.
	Dispatcher port.Dispatcher
	// Reserver, when set, re-checks at invoke.admit, immediately before
	// invocation, that the attempt still holds its resource reservations
	// (Reserver.Recheck with Provider, Manifest and the host's arguments);
	// Provider and Manifest are then required.
	Reserver port.Reserver
	// Provider is the binding the attempt runs; required with Reserver.
	Provider *manifest.ProviderBinding
	// Cancelled, when non-nil, is closed by the embedder to cancel the
	// operation in this process: every later request is answered cancelled
	// without asking the ledger. Durable cancellation is ledger.Cancel,
	// which the Handler meets at its next ledger call.
	Cancelled <-chan struct{}
	// OutcomeTimeout bounds each ledger write that records an effect's
	// outcome (ConfirmEffect, MarkNotConsumed, MarkUnknown, Resolve). Such
	// writes run under context.WithoutCancel, so that an exchange that
	// times out never loses the truth about a consumed effect. Required
	// (positive): the callers fill in their default.
	OutcomeTimeout time.Duration
	// Observer, when set, receives one Answer per decision,
	// synchronously on the Session's goroutine; it must not block.
	Observer func(Answer)
	// Logger receives one debug record per decision. Nil means none.
	Logger *slog.Logger
	// Telemetry, when set, receives the spans of the IPC methods, ledger
	// writes and dispatches and the effect metrics. Nil means none.
	Telemetry *telemetry.T

	// Live, when set, says whether the attempt's controller still knows
	// its lease to be live; once it does not, nothing of the attempt is
	// answered allowed (fail-stop).
	Live func() error
	// Launch, when set, is the write that records the launch (the attempt
	// and its bootstrap id) running while the host starts; Bootstrap
	// waits for it.
	Launch *Pending
}

// Pending is a ledger write in flight: Err is set before Done is closed.
type Pending struct {
	Done chan struct{}
	Err  error
}

func (c *Config) validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Ledger == nil {
		add("Ledger is nil")
	}
	if err := c.Fence.Validate(); err != nil {
		add("Fence: %w", err)
	}
	if err := c.Binding.Validate(); err != nil {
		add("Binding: %w", err)
	}
	b, f := c.Binding, c.Fence
	if b.OrganizationID != f.Scope.OrganizationID || b.ProjectID != f.Scope.ProjectID ||
		b.OperationID != f.OperationID || b.AttemptID != f.AttemptID || b.FencingGeneration != f.Generation {
		add("Binding names organization %q project %q operation %q attempt %q generation %d, the Fence %q %q %q %q %d",
			b.OrganizationID, b.ProjectID, b.OperationID, b.AttemptID, b.FencingGeneration,
			f.Scope.OrganizationID, f.Scope.ProjectID, f.OperationID, f.AttemptID, f.Generation)
	}
	if !ipc.ValidIdentifier(c.BootstrapID) {
		add("BootstrapID must be 1..%d code points", ipc.MaxIdentifierRunes)
	}
	if c.OutcomeTimeout < 0 {
		add("OutcomeTimeout is negative")
	} else if c.OutcomeTimeout == 0 {
		add("OutcomeTimeout is zero")
	}
	if c.Reserver != nil && (c.Provider == nil || c.Manifest == nil) {
		add("a Reserver needs Provider and Manifest")
	}
	return errors.Join(errs...)
}

// Handler is the implementation of handler.Handler, whose documentation
// gives how each ledger answer maps to the reply state the host receives.
// Its ipc methods are called one at a time, as ipc.Session does; Decisions
// and Published may be called from any goroutine.
type Handler struct {
	cfg       Config
	auth      port.Authority
	disp      port.Dispatcher
	noEffects bool
	validator *manifest.Validator
	log       *slog.Logger
	tel       *telemetry.T // nil: none; a Supervisor's Handlers share its own

	mu        sync.Mutex // guards the fields below
	events    []Answer
	op        *ledger.Operation // as read at admission
	recorded  map[string]bool   // logical effect ids known to the ledger
	admitted  bool
	published *ledger.Result
	sessionID string // of the Session that asked
}

// New validates cfg and returns the Handler; the error lists every
// problem of cfg.
func New(cfg Config) (*Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, auth: cfg.Authority, disp: cfg.Dispatcher, validator: cfg.Validator, log: cfg.Logger}
	if h.auth == nil {
		h.auth = port.AllowAll{}
	}
	if h.disp == nil {
		h.disp = port.NoEffects{}
	}
	_, h.noEffects = h.disp.(port.NoEffects)
	if h.validator == nil {
		h.validator = &manifest.Validator{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.tel, h.cfg.Ledger = cfg.Telemetry, telemetry.Observe(h.cfg.Ledger, cfg.Telemetry)
	return h, nil
}

// Decisions returns a copy of the decisions made so far, in order.
func (h *Handler) Decisions() []Answer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Answer(nil), h.events...)
}

// SessionID returns the ID of the Session that asked for bootstrap, or "".
func (h *Handler) SessionID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessionID
}

// Published returns the result accepted through this Handler, or nil.
func (h *Handler) Published() *ledger.Result {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.published == nil {
		return nil
	}
	r := *h.published
	r.ArtifactRefs = append([]string(nil), r.ArtifactRefs...)
	return &r
}

// owned returns why the attempt's controller may no longer act for it, or
// nil: its lease is not known to be live.
func (h *Handler) owned() error {
	if h.cfg.Live == nil {
		return nil
	}
	return h.cfg.Live()
}

func (h *Handler) cancelled() bool {
	if h.cfg.Cancelled == nil {
		return false
	}
	select {
	case <-h.cfg.Cancelled:
		return true
	default:
		return false
	}
}

// record keeps ev, tells the Observer and logs it.
func (h *Handler) record(ev Answer) {
	f := h.cfg.Fence
	ev.Time = time.Now()
	ev.Scope, ev.OperationID, ev.AttemptID, ev.Generation = f.Scope, f.OperationID, f.AttemptID, f.Generation
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
	if h.cfg.Observer != nil {
		h.cfg.Observer(ev)
	}
	if ev.Method == ipc.MethodEffect {
		h.tel.EffectDecided(h.cfg.Binding.CapabilityID, effectOutcome(&ev))
	}
	h.log.Debug("supervise: decided", telemetry.KeyOperation, f.OperationID, telemetry.KeyAttempt, f.AttemptID,
		telemetry.KeyMethod, ev.Method, telemetry.KeySequence, ev.Sequence, telemetry.KeyState, ev.State, telemetry.KeyReason, ev.Reason)
}

// noted records ev as answered st for reason and returns the reply data.
func (h *Handler) noted(ev Answer, st ipc.ReplyState, reason string) map[string]any {
	ev.State, ev.Reason = st, reason
	h.record(ev)
	return reasonData(reason)
}

// reasonData is the reply data of a request that is not allowed.
func reasonData(reason string) map[string]any {
	if reason == "" {
		return nil
	}
	return map[string]any{"reason": reason}
}

// refusal maps a definite ledger refusal to the reply state that says so;
// ok is false for everything that is not a decision (storage failures, a
// closed ledger, an ended context), which the Handler returns as an error
// so that the Session answers needs_reconciliation.
func refusal(err error) (state ipc.ReplyState, ok bool) {
	switch {
	case errors.Is(err, ledger.ErrOperationCancelled):
		return ipc.StateCancelled, true
	case errors.Is(err, ledger.ErrStaleFence), errors.Is(err, ledger.ErrBootstrapRedeemed),
		errors.Is(err, ledger.ErrChangedInput), errors.Is(err, ledger.ErrBudgetExhausted),
		errors.Is(err, ledger.ErrResultAlreadyAccepted), errors.Is(err, ledger.ErrDeadlineExceeded),
		errors.Is(err, ledger.ErrOutOfOrder), errors.Is(err, ledger.ErrNotFound),
		errors.Is(err, ledger.ErrInvalid), errors.Is(err, ledger.ErrOutOfScope),
		errors.Is(err, ledger.ErrLeaseExpired):
		return ipc.StateRefused, true
	}
	return "", false
}

// Bootstrap redeems the bootstrap id for the child's pid and the asking
// Session's ID (the Session has already checked the pid against the
// kernel's credentials, the id and the launch digest against the launch).
func (h *Handler) Bootstrap(ctx context.Context, req ipc.BootstrapRequest) (d ipc.Decision, err error) {
	ctx, sp := h.tel.Method(ctx, req.Call, nil)
	defer func() { sp.EndMethod(ctx, d.State, err) }()
	h.mu.Lock()
	h.sessionID = req.SessionID
	h.mu.Unlock()
	ev := Answer{Method: req.Method, Sequence: req.Sequence, PID: req.Payload.PID, SessionID: req.SessionID}
	answer := func(st ipc.ReplyState, reason string) (ipc.Decision, error) {
		return ipc.Decision{State: st, Data: h.noted(ev, st, reason)}, nil
	}
	if h.cancelled() {
		return answer(ipc.StateCancelled, "the operation was cancelled")
	}
	if err := h.owned(); err != nil {
		ev.Refusal = err
		return answer(ipc.StateRefused, err.Error())
	}
	if h.cfg.Launch != nil {
		select {
		case <-h.cfg.Launch.Done:
		case <-ctx.Done():
			return ipc.Decision{}, fmt.Errorf("supervise: waiting for the launch to be recorded: %w", context.Cause(ctx))
		}
		if err := h.cfg.Launch.Err; err != nil {
			if st, ok := refusal(err); ok {
				ev.Refusal = err
				return answer(st, "recording the launch was refused: "+err.Error())
			}
			return ipc.Decision{}, fmt.Errorf("supervise: recording the launch: %w", err)
		}
	}
	_, err = h.cfg.Ledger.RedeemBootstrap(ctx, h.cfg.Fence, ledger.Redemption{
		BootstrapID: req.Payload.BootstrapID, LaunchDigest: req.Payload.LaunchDigest,
		PID: req.Payload.PID, SessionID: req.SessionID,
	})
	if err != nil {
		if st, ok := refusal(err); ok {
			ev.Refusal = err
			return answer(st, err.Error())
		}
		return ipc.Decision{}, fmt.Errorf("supervise: redeeming bootstrap id: %w", err)
	}
	return answer(ipc.StateAllowed, "")
}

// Admit re-checks, immediately before invocation: the in-process cancel
// signal, that the attempt's binding names the operation's capability,
// request and manifest digests, the Authority, the reservations (Reserver),
// and then the ledger (fence, deadline, request digest, cancellation),
// which records the admission.
func (h *Handler) Admit(ctx context.Context, req ipc.AdmitRequest) (d ipc.Decision, err error) {
	ctx, sp := h.tel.Method(ctx, req.Call, nil)
	defer func() { sp.EndMethod(ctx, d.State, err) }()
	ev := Answer{Method: req.Method, Sequence: req.Sequence}
	answer := func(st ipc.ReplyState, reason string) (ipc.Decision, error) {
		return ipc.Decision{State: st, Data: h.noted(ev, st, reason)}, nil
	}
	if h.cancelled() {
		return answer(ipc.StateCancelled, "the operation was cancelled")
	}
	if err := h.owned(); err != nil {
		ev.Refusal = err
		return answer(ipc.StateRefused, err.Error())
	}
	f := h.cfg.Fence
	view, err := h.cfg.Ledger.Operation(ctx, f.Scope, f.OperationID)
	if err != nil {
		if st, ok := refusal(err); ok {
			ev.Refusal = err
			return answer(st, err.Error())
		}
		return ipc.Decision{}, fmt.Errorf("supervise: reading the operation: %w", err)
	}
	op := view.Operation
	b := h.cfg.Binding
	switch {
	case op.State == ledger.OperationCancelled:
		return answer(ipc.StateCancelled, "the operation was cancelled: "+op.CancelReason)
	case b.CapabilityID != op.CapabilityID:
		return answer(ipc.StateRefused, fmt.Sprintf("the attempt names capability %q, the operation %q", b.CapabilityID, op.CapabilityID))
	case b.RequestDigest != op.RequestDigest:
		return answer(ipc.StateRefused, fmt.Sprintf("the attempt's request digest %s is not the operation's %s", b.RequestDigest, op.RequestDigest))
	case b.ManifestDigest != op.ManifestDigest:
		return answer(ipc.StateRefused, fmt.Sprintf("the attempt's manifest digest %s is not the operation's %s", b.ManifestDigest, op.ManifestDigest))
	}
	h.mu.Lock()
	h.op = &op
	h.recorded = make(map[string]bool, len(view.Effects))
	for _, e := range view.Effects {
		h.recorded[e.LogicalEffectID] = true
	}
	h.mu.Unlock()
	v, err := h.auth.Admit(ctx, port.Admission{Operation: op, Binding: b, Arguments: req.Payload.Arguments})
	if err != nil {
		return ipc.Decision{}, fmt.Errorf("supervise: authority on admission: %w", err)
	}
	switch v.Decision {
	case port.Allow:
	case port.Refuse:
		return answer(ipc.StateRefused, orReason(v.Reason, "refused by the authority"))
	case port.Hold:
		return answer(ipc.StateWaitingApproval, orReason(v.Reason, "held for approval by the authority"))
	default:
		return ipc.Decision{}, fmt.Errorf("supervise: authority returned decision %q on admission, want allow, refuse or hold", v.Decision)
	}
	if h.cfg.Reserver != nil {
		err := h.cfg.Reserver.Recheck(ctx, f, *h.cfg.Provider, *h.cfg.Manifest, req.Payload.Arguments)
		if errors.Is(err, cataloguestore.ErrReserved) {
			ev.Refusal = err
			return answer(ipc.StateRefused, err.Error())
		}
		if err != nil {
			return ipc.Decision{}, fmt.Errorf("supervise: re-checking the reservations: %w", err)
		}
	}
	if _, err := h.cfg.Ledger.Admit(ctx, f, b.RequestDigest); err != nil {
		if st, ok := refusal(err); ok {
			ev.Refusal = err
			return answer(st, err.Error())
		}
		return ipc.Decision{}, fmt.Errorf("supervise: recording the admission: %w", err)
	}
	h.mu.Lock()
	h.admitted = true
	h.mu.Unlock()
	return answer(ipc.StateAllowed, "")
}

func orReason(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

// Effect answers one effect.request. A logical effect the ledger has not
// recorded is put to the Authority, authorized in the ledger (budget
// debited), dispatched, and its outcome recorded; a recorded one is a
// redelivery, answered from the ledger without dispatching.
func (h *Handler) Effect(ctx context.Context, req ipc.EffectCall) (d ipc.EffectDecision, err error) {
	ctx, sp := h.tel.Method(ctx, req.Call, &req.Effect)
	defer func() {
		if err != nil {
			h.tel.EffectFailed(h.cfg.Binding.CapabilityID)
		}
		sp.EndMethod(ctx, d.State, err)
	}()
	id := req.Effect.LogicalEffectID
	ev := Answer{Method: req.Method, Sequence: req.Sequence}
	answer := func(st ipc.ReplyState, reason string, e *ledger.Effect) (ipc.EffectDecision, error) {
		ev.Effect = e
		return ipc.EffectDecision{State: st, Data: h.noted(ev, st, reason)}, nil
	}
	if h.cancelled() {
		return answer(ipc.StateCancelled, "the operation was cancelled", nil)
	}
	if err := h.owned(); err != nil {
		ev.Refusal = err
		return answer(ipc.StateNeedsReconciliation, err.Error(), nil)
	}
	h.mu.Lock()
	known, op := h.recorded[id], h.op
	h.mu.Unlock()
	if op == nil {
		// The Session allows effects only after an allowed invoke.admit,
		// which set op; a Handler used outside a Session may not.
		return answer(ipc.StateRefused, "effect.request before invoke.admit was allowed", nil)
	}
	if !known {
		if h.noEffects {
			return answer(ipc.StateRefused, "no dispatcher is configured: effects cannot be dispatched", nil)
		}
		v, err := h.auth.Effect(ctx, port.EffectQuestion{Operation: *op, Binding: h.cfg.Binding, Request: req.Effect, RequestDigest: req.EffectDigest})
		if err != nil {
			return ipc.EffectDecision{}, fmt.Errorf("supervise: authority on effect %q: %w", id, err)
		}
		switch v.Decision {
		case port.Allow:
		case port.Refuse:
			return answer(ipc.StateRefused, orReason(v.Reason, "refused by the authority"), nil)
		case port.Hold:
			return answer(ipc.StateWaitingApproval, orReason(v.Reason, "held for approval by the authority"), nil)
		default:
			return ipc.EffectDecision{}, fmt.Errorf("supervise: authority returned decision %q on effect %q, want allow, refuse or hold", v.Decision, id)
		}
	}
	g, err := h.cfg.Ledger.BeginEffect(ctx, h.cfg.Fence, id, req.EffectDigest)
	if err != nil {
		if st, ok := refusal(err); ok {
			ev.Refusal = err
			return answer(st, err.Error(), nil)
		}
		return ipc.EffectDecision{}, fmt.Errorf("supervise: authorizing effect %q: %w", id, err)
	}
	h.mu.Lock()
	h.recorded[id] = true
	h.mu.Unlock()
	if g.Redelivery {
		ev.Redelivery = true
		return h.redeliver(ctx, req, g.Effect, &ev)
	}
	h.tel.Debited(h.cfg.Binding.CapabilityID)
	if err := h.owned(); err != nil {
		// Authorized but not dispatched: the effect stays authorized, and
		// unknown once this controller's lease has expired.
		ev.Refusal = err
		return answer(ipc.StateNeedsReconciliation, err.Error(), &g.Effect)
	}
	ev.Dispatched = true
	x := port.Dispatch{Scope: h.cfg.Fence.Scope, OperationID: h.cfg.Fence.OperationID, AttemptID: h.cfg.Fence.AttemptID,
		LogicalEffectID: id, AuthorizationID: g.Effect.AuthorizationID, Request: req.Effect, RequestDigest: req.EffectDigest}
	dctx, dsp := h.tel.Dispatch(ctx, &x)
	rcpt, derr := h.disp.Dispatch(dctx, x)
	dsp.EndAfterReply(dctx, derr)
	if derr == nil && !ipc.ValidIdentifier(rcpt.ReceiptID) {
		derr = fmt.Errorf("the dispatcher returned no error and an invalid receipt id %q (want 1..%d code points); whether the effect was consumed is unknown",
			Truncate(rcpt.ReceiptID), ipc.MaxIdentifierRunes)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.OutcomeTimeout)
	defer cancel()
	switch {
	case derr == nil:
		e, err := h.settle(wctx, id, req.EffectDigest, ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: rcpt.ReceiptID})
		if err != nil {
			return ipc.EffectDecision{}, fmt.Errorf("supervise: effect %q was consumed (receipt %q) but recording it failed; it stays authorized and is listed for reconciliation: %w", id, rcpt.ReceiptID, err)
		}
		if rcpt.Result != nil {
			if err := port.CheckDocument("effect result", rcpt.Result); err != nil {
				return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("effect %q was consumed (receipt %q) but its result cannot be sent: %v", id, rcpt.ReceiptID, err), &e)
			}
		}
		ev.State, ev.Effect = ipc.StateAllowed, &e
		h.record(ev)
		return ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: e.ReceiptID, AuthorizationID: e.AuthorizationID, Result: rcpt.Result}, nil
	case errors.Is(derr, port.ErrNotConsumed):
		e, err := h.settle(wctx, id, req.EffectDigest, ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
		if err != nil {
			return ipc.EffectDecision{}, fmt.Errorf("supervise: effect %q was not consumed but recording it failed: %w", id, err)
		}
		return answer(ipc.StateRefused, derr.Error(), &e)
	default:
		e, err := h.cfg.Ledger.MarkUnknown(wctx, h.cfg.Fence, id, req.EffectDigest)
		if err != nil {
			// Still authorized in the ledger, which lists it as needing
			// reconciliation all the same.
			return ipc.EffectDecision{}, fmt.Errorf("supervise: dispatch of effect %q is uncertain (%v) and recording that failed: %w", id, derr, err)
		}
		return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("dispatch of effect %q is uncertain: %v", id, derr), &e)
	}
}

// settle records a dispatcher's certain outcome for this attempt's effect.
// When a newer attempt has fenced this one off meanwhile, the outcome is
// still the truth about the outside world: it is recorded with Resolve,
// which needs no fence, instead of being lost.
func (h *Handler) settle(ctx context.Context, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	var e ledger.Effect
	var err error
	// Every outcome write is idempotent: after an ambiguous storage error
	// (ErrOutcomeUnknown, ErrNotApplied) the same call is made again, a
	// bounded number of times within ctx, before the effect is left
	// authorized for reconciliation. Giving up at once would turn a
	// consumed effect into an unknown one over a transient failure.
	for try := 0; ; try++ {
		if res.State == ledger.EffectConfirmed {
			e, err = h.cfg.Ledger.ConfirmEffect(ctx, h.cfg.Fence, id, d, res.ReceiptID)
		} else {
			e, err = h.cfg.Ledger.MarkNotConsumed(ctx, h.cfg.Fence, id, d, res.Reason)
		}
		if errors.Is(err, ledger.ErrStaleFence) {
			f := h.cfg.Fence
			e, err = h.cfg.Ledger.Resolve(ctx, f.Scope, f.OperationID, id, d, res)
		}
		ambiguous := errors.Is(err, ledger.ErrOutcomeUnknown) || errors.Is(err, ledger.ErrNotApplied)
		if !ambiguous || try == settleTries-1 || ctx.Err() != nil {
			return e, err
		}
		h.log.Warn("supervise: recording an effect's outcome failed ambiguously; repeating it", telemetry.KeyOperation, h.cfg.Fence.OperationID, telemetry.KeyEffect, id, telemetry.KeyErr, err)
		select {
		case <-ctx.Done():
			return e, err
		case <-time.After(time.Duration(try+1) * 20 * time.Millisecond):
		}
	}
}

// settleTries bounds how often settle makes one outcome write.
const settleTries = 5

// redeliver answers an effect the ledger already holds, by its state,
// without dispatching.
func (h *Handler) redeliver(ctx context.Context, req ipc.EffectCall, e ledger.Effect, ev *Answer) (ipc.EffectDecision, error) {
	answer := func(st ipc.ReplyState, reason string, e ledger.Effect) (ipc.EffectDecision, error) {
		ev.Effect = &e
		return ipc.EffectDecision{State: st, Data: h.noted(*ev, st, reason)}, nil
	}
	// BeginEffect answers a redelivery even once the operation is over;
	// a cancellation made by another controller must still be heard.
	f := h.cfg.Fence
	if v, err := h.cfg.Ledger.Operation(ctx, f.Scope, f.OperationID); err != nil {
		return ipc.EffectDecision{}, fmt.Errorf("supervise: reading the operation for a redelivery of effect %q: %w", e.LogicalEffectID, err)
	} else if v.Operation.State == ledger.OperationCancelled {
		return answer(ipc.StateCancelled, "the operation was cancelled: "+v.Operation.CancelReason, e)
	}
	switch e.State {
	case ledger.EffectConfirmed:
		var result map[string]any
		if r, ok := h.disp.(port.Replayer); ok {
			d := port.Dispatch{Scope: e.Scope, OperationID: e.OperationID, AttemptID: h.cfg.Fence.AttemptID,
				LogicalEffectID: e.LogicalEffectID, AuthorizationID: e.AuthorizationID, Request: req.Effect, RequestDigest: e.RequestDigest}
			res, err := r.Replay(ctx, d, e.ReceiptID)
			if err != nil {
				return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("effect %q was consumed (receipt %q) but its result cannot be replayed: %v", e.LogicalEffectID, e.ReceiptID, err), e)
			}
			if res != nil {
				if err := port.CheckDocument("effect result", res); err != nil {
					return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("effect %q was consumed (receipt %q) but its replayed result cannot be sent: %v", e.LogicalEffectID, e.ReceiptID, err), e)
				}
			}
			result = res
		}
		ev.State, ev.Effect = ipc.StateAllowed, &e
		h.record(*ev)
		return ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: e.ReceiptID, AuthorizationID: e.AuthorizationID, Result: result}, nil
	case ledger.EffectNotConsumed:
		// The recorded reason is a not-consumed reply state.
		return answer(ipc.ReplyState(e.Reason), fmt.Sprintf("effect %q was recorded not consumed (%s)", e.LogicalEffectID, e.Reason), e)
	case ledger.EffectUnknown:
		return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("effect %q is unknown: resolve it first", e.LogicalEffectID), e)
	case ledger.EffectAuthorized:
		// Authorized and never settled: an earlier attempt's controller
		// stopped between authorization and outcome. Whether it was
		// consumed is unknown, and a redelivery is no permission to
		// dispatch again.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.OutcomeTimeout)
		defer cancel()
		u, err := h.cfg.Ledger.MarkUnknown(wctx, h.cfg.Fence, e.LogicalEffectID, e.RequestDigest)
		if err != nil {
			// Never refused: that would claim the effect was not consumed.
			return ipc.EffectDecision{}, fmt.Errorf("supervise: effect %q was authorized and never settled; marking it unknown failed: %w", e.LogicalEffectID, err)
		}
		return answer(ipc.StateNeedsReconciliation, fmt.Sprintf("effect %q was authorized by attempt %q and never settled: resolve it first", e.LogicalEffectID, e.AttemptID), u)
	}
	return ipc.EffectDecision{}, fmt.Errorf("supervise: effect %q has state %q", e.LogicalEffectID, e.State)
}

// Publish validates the data against the admitted response schema (when
// HandlerConfig.Manifest is set) and accepts it in the ledger as the
// operation's immutable artifact: the data's canonical bytes.
func (h *Handler) Publish(ctx context.Context, req ipc.PublishRequest) (d ipc.PublishDecision, err error) {
	ctx, sp := h.tel.Method(ctx, req.Call, nil)
	defer func() { sp.EndMethod(ctx, d.State, err) }()
	ev := Answer{Method: req.Method, Sequence: req.Sequence}
	answer := func(st ipc.ReplyState, reason string) (ipc.PublishDecision, error) {
		return ipc.PublishDecision{State: st, Data: h.noted(ev, st, reason)}, nil
	}
	if h.cancelled() {
		return answer(ipc.StateCancelled, "the operation was cancelled")
	}
	if err := h.owned(); err != nil {
		ev.Refusal = err
		return answer(ipc.StateNeedsReconciliation, err.Error())
	}
	if h.cfg.Manifest != nil {
		if err := h.validator.ValidateResponse(*h.cfg.Manifest, req.Payload.Data); err != nil {
			return answer(ipc.StateRefused, fmt.Sprintf("the published data does not satisfy the capability's response schema: %v", err))
		}
	}
	artifact, err := canon.Marshal(req.Payload.Data)
	if err != nil {
		return answer(ipc.StateRefused, fmt.Sprintf("the published data cannot be stored: %v", err))
	}
	r, err := h.cfg.Ledger.AcceptResult(ctx, h.cfg.Fence, req.Payload.DataDigest, artifact)
	if err != nil {
		if st, ok := refusal(err); ok {
			ev.Refusal = err
			return answer(st, err.Error())
		}
		return ipc.PublishDecision{}, fmt.Errorf("supervise: accepting the result: %w", err)
	}
	h.mu.Lock()
	h.published = &r
	h.mu.Unlock()
	ev.State, ev.Result = ipc.StateAllowed, &r
	h.record(ev)
	return ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: r.ArtifactRefs}, nil
}

// Truncate keeps hostile text from making messages arbitrarily large.
func Truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// Answer is one IPC request the Handler decided: handler.Answer, whose
// fields it documents.
type Answer struct {
	Time        time.Time
	Scope       ledger.Scope
	OperationID string
	AttemptID   string
	Generation  int64
	Method      ipc.Method
	Sequence    int64
	State       ipc.ReplyState
	Reason      string
	Refusal     error
	PID         int
	SessionID   string
	Effect      *ledger.Effect
	Redelivery  bool
	Dispatched  bool
	Result      *ledger.Result
}

// effectOutcome is the zeo.effect.outcome of an effect.request decision:
// the recorded outcome of a dispatched effect (confirmed, not_consumed,
// unknown), redelivered for one answered from the ledger, and otherwise
// the reply state (refused, waiting_approval, cancelled,
// needs_reconciliation).
func effectOutcome(a *Answer) string {
	switch {
	case a.Redelivery:
		return "redelivered"
	case a.Dispatched && a.Effect != nil:
		return string(a.Effect.State)
	}
	return string(a.State)
}
