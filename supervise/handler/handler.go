package handler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/internal/answer"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// DefaultOutcomeTimeout bounds one ledger write that records an effect's
// outcome when Config.OutcomeTimeout is zero.
const DefaultOutcomeTimeout = 30 * time.Second

// ErrInvalidConfig is wrapped by the error of New for an unusable Config,
// and of BuildContext for an unusable ContextSpec; the message lists every
// problem. It is supervise.ErrInvalidConfig.
var ErrInvalidConfig = errors.New("supervise: invalid config")

// Config configures the Handler of one attempt. Ledger, Fence,
// Binding and BootstrapID are required; New copies the config.
// The zero value of every other field is a documented default.
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
	// times out never loses the truth about a consumed effect. Zero means
	// DefaultOutcomeTimeout.
	OutcomeTimeout time.Duration
	// Observer, when set, receives one Answer per decision,
	// synchronously on the Session's goroutine; it must not block.
	Observer func(Answer)
	// Logger receives one debug record per decision. Nil means none.
	Logger *slog.Logger
	// TracerProvider and MeterProvider, when set, receive the spans of
	// the IPC methods, ledger writes and dispatches and the effect
	// metrics, as supervise.Config's do for a Supervisor (doc/design.md,
	// “Telemetry”). Nil means none; the global providers are never read.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
}

// Handler is the ipc.Handler of one attempt, backed by a ledger.Ledger and
// the embedder's ports: the lower layer of a Supervisor, which a team with
// its own controller can take alone (see examples/ownloop). A Handler
// serves one Session: its ipc methods are called one at a time, as
// ipc.Session does; Decisions and Published may be called from any
// goroutine.
//
// Each method's decision, and how every ledger answer maps to the reply
// state the host receives. A ledger error that is not a decision (storage
// failure, ledger.ErrClosed, ledger.ErrCorrupt, an ended context) is
// returned as an error, and the ipc.Session answers needs_reconciliation:
// nothing is ever claimed not consumed without knowing it.
//
// bootstrap: the in-process cancel signal → cancelled; RedeemBootstrap with
// the child's pid (checked by the Session against the kernel's
// credentials) and the Session's ID → allowed. ledger.ErrOperationCancelled → cancelled;
// ledger.ErrStaleFence (a newer attempt, or an id issued to an older one),
// ErrBootstrapRedeemed (replay), ErrChangedInput (another launch digest),
// ErrNotFound, ErrResultAlreadyAccepted → refused.
//
// invoke.admit, immediately before invocation: the cancel signal →
// cancelled; the operation read from the ledger: cancelled → cancelled;
// the binding's capability, request digest or manifest digest not the
// operation's → refused; the Authority: port.Refuse → refused, port.Hold →
// waiting_approval; with a Reserver, its Recheck: the attempt no longer
// holds its reservations (cataloguestore.ErrReserved) → refused; then ledger Admit, which checks the fence, the
// deadline and the request digest and records the admission:
// ErrOperationCancelled → cancelled; ErrStaleFence, ErrDeadlineExceeded,
// ErrChangedInput, ErrOutOfOrder, ErrResultAlreadyAccepted → refused.
//
// effect.request: the cancel signal → cancelled. A logical effect id the
// ledger does not hold yet is new: with no Dispatcher → refused; the
// Authority: port.Refuse → refused, port.Hold → waiting_approval (nothing recorded,
// no budget spent, so a later attempt asks again). Then BeginEffect:
// ErrOperationCancelled → cancelled; ErrChangedInput (same id, other request),
// ErrBudgetExhausted, ErrDeadlineExceeded, ErrStaleFence, ErrOutOfOrder →
// refused. A new effect is dispatched and its outcome recorded under
// context.WithoutCancel (bounded by OutcomeTimeout): a port.Receipt →
// ConfirmEffect → allowed with the authorization and receipt ids (and the
// result object; one the host's strict parser would refuse, see
// port.CheckDocument, is never sent: the effect stays confirmed and the reply is
// needs_reconciliation, naming the value); port.ErrNotConsumed →
// MarkNotConsumed → refused; any other error → MarkUnknown →
// needs_reconciliation. If a newer attempt fenced this
// one off while it dispatched, the dispatcher's certain outcome is recorded
// with Resolve instead, so it is never lost. A redelivery (the ledger holds
// the id with the same digest) is answered cancelled once the operation is
// cancelled (by any controller), and otherwise by its recorded state,
// without dispatching: confirmed → allowed with the recorded ids (the result object
// only if the Dispatcher is a port.Replayer); not consumed → its reason's state;
// unknown → needs_reconciliation; authorized but never settled (a
// controller died mid-dispatch) → MarkUnknown → needs_reconciliation.
//
// result.publish: the cancel signal → cancelled; data not valid against the
// admitted response schema → refused; AcceptResult stores the data's
// canonical bytes as the artifact → allowed with its refs.
// ErrOperationCancelled → cancelled; ErrResultAlreadyAccepted (another result), ErrStaleFence,
// ErrOutOfOrder → refused.
type Handler struct {
	h *answer.Handler
}

// New validates cfg and returns the Handler. Errors wrap
// ErrInvalidConfig.
func New(cfg Config) (*Handler, error) {
	t, err := telemetry.New(cfg.TracerProvider, cfg.MeterProvider, []telemetry.Class{{Err: ErrInvalidConfig, Name: "invalid_config"}})
	if err != nil {
		return nil, fmt.Errorf("%w: MeterProvider: %w", ErrInvalidConfig, err)
	}
	var observer func(answer.Answer)
	if obs := cfg.Observer; obs != nil {
		observer = func(a answer.Answer) { obs(Answer(a)) }
	}
	if cfg.OutcomeTimeout == 0 {
		cfg.OutcomeTimeout = DefaultOutcomeTimeout
	}
	h, err := answer.New(answer.Config{
		Ledger: cfg.Ledger, Fence: cfg.Fence, Binding: cfg.Binding, BootstrapID: cfg.BootstrapID,
		Manifest: cfg.Manifest, Validator: cfg.Validator, Authority: cfg.Authority, Dispatcher: cfg.Dispatcher,
		Reserver: cfg.Reserver, Provider: cfg.Provider, Cancelled: cfg.Cancelled, OutcomeTimeout: cfg.OutcomeTimeout,
		Observer: observer, Logger: cfg.Logger, Telemetry: t,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Handler{h: h}, nil
}

// Bootstrap redeems the bootstrap id for the child's pid and the asking
// Session's ID (the Session has already checked the pid against the
// kernel's credentials, the id and the launch digest against the launch).
func (h *Handler) Bootstrap(ctx context.Context, req ipc.BootstrapRequest) (ipc.Decision, error) {
	return h.h.Bootstrap(ctx, req)
}

// Admit re-checks, immediately before invocation, the in-process cancel
// signal, the binding against the operation, the Authority and the
// reservations, then records the admission in the ledger.
func (h *Handler) Admit(ctx context.Context, req ipc.AdmitRequest) (ipc.Decision, error) {
	return h.h.Admit(ctx, req)
}

// Effect decides one effect.request: a redelivery from the ledger, a new
// effect through the Authority, the ledger and the Dispatcher.
func (h *Handler) Effect(ctx context.Context, req ipc.EffectCall) (ipc.EffectDecision, error) {
	return h.h.Effect(ctx, req)
}

// Publish validates the data against the admitted response schema (when
// Config.Manifest is set) and accepts it in the ledger as the
// operation's immutable artifact: the data's canonical bytes.
func (h *Handler) Publish(ctx context.Context, req ipc.PublishRequest) (ipc.PublishDecision, error) {
	return h.h.Publish(ctx, req)
}

// Decisions returns a copy of the decisions made so far, in order.
func (h *Handler) Decisions() []Answer {
	d := h.h.Decisions()
	out := make([]Answer, len(d))
	for i, a := range d {
		out[i] = Answer(a)
	}
	return out
}

// Published returns the result accepted through this Handler, or nil.
func (h *Handler) Published() *ledger.Result { return h.h.Published() }

// Answer is one IPC request a Handler decided and the reply state it was
// answered with, for traces and audit logs (a Supervisor reports it as an
// EventRequest).
type Answer struct {
	// Time is when the request was decided, with the monotonic reading.
	Time time.Time
	// Scope, OperationID, AttemptID and Generation name the attempt.
	Scope       ledger.Scope
	OperationID string
	AttemptID   string
	Generation  int64
	// Method, Sequence, State and Reason describe the request and the
	// reply state it was answered; Reason says why for a state other than
	// allowed.
	Method   ipc.Method
	Sequence int64
	State    ipc.ReplyState
	Reason   string
	// Refusal is the ledger's error behind a state other than allowed,
	// when the ledger refused (test it with errors.Is against the ledger's
	// sentinels); nil otherwise.
	Refusal error
	// PID and SessionID are the redeemer of the bootstrap id (bootstrap).
	PID       int
	SessionID string
	// Effect is the effect as recorded after the decision; Redelivery says
	// it was already recorded, Dispatched that the Dispatcher was called
	// (effect.request).
	Effect     *ledger.Effect
	Redelivery bool
	Dispatched bool
	// Result is the accepted result of a publish.
	Result *ledger.Result
}

var _ ipc.Handler = (*Handler)(nil)
