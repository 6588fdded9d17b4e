package port

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Decision is an Authority's answer.
type Decision string

// The three decisions. The zero value is not a decision: a Verdict without
// one is treated as the Authority failing to decide.
const (
	// Allow lets the attempt go on.
	Allow Decision = "allow"
	// Refuse ends the request with the reply state refused. Nothing is
	// recorded for a refused effect, so no budget is spent.
	Refuse Decision = "refuse"
	// Hold ends the request with waiting_approval: a person or a policy
	// must approve first. Nothing is recorded for a held effect, so a later
	// attempt that sends the same logical effect asks again and, once
	// approved, dispatches it.
	Hold Decision = "hold"
)

// Verdict is an Authority's decision and the reason given to the host and
// the caller for anything but Allow.
type Verdict struct {
	Decision Decision
	// Reason says why, in words an operator can act on. It is sent to the
	// host in the reply's data and lands in the Outcome; never put secrets
	// in it.
	Reason string
}

// Admission is what an Authority decides on invoke.admit: the operation
// as the ledger holds it, the attempt, and the host's normalized arguments
// (already checked against the request digest).
type Admission struct {
	Operation ledger.Operation
	Binding   ipc.AttemptBinding
	Arguments map[string]any
	// BeforeLaunch is true when a Supervisor asks before it launches
	// anything (the operation may not be recorded yet, Binding is the
	// attempt about to start and Arguments are the prepared ones); false
	// at invoke.admit, immediately before invocation, with the host's
	// normalized arguments.
	BeforeLaunch bool
}

// EffectQuestion is what an Authority decides for a new logical effect,
// before the ledger records it and debits the budget. Redeliveries of a
// recorded effect are never asked about: they dispatch nothing.
type EffectQuestion struct {
	Operation ledger.Operation
	Binding   ipc.AttemptBinding
	Request   ipc.EffectRequest
	// RequestDigest is the EffectRequest's digest, its idempotency
	// fingerprint.
	RequestDigest canon.Digest
}

// Authority is the embedder's current policy: whether an attempt may run
// (consent, revocation, reservations) and whether each new effect may be
// dispatched. It is asked immediately before invocation and before each new
// effect, so a revocation between two calls takes effect at the next one.
//
// An error means the Authority could not decide; the host is then answered
// needs_reconciliation, never refused, because nothing may claim a request
// was not consumed without knowing it.
//
// A nil Authority in supervise.Config or handler.Config means AllowAll: the ledger
// still enforces fence, deadline, cancellation, idempotency and the total
// budget.
type Authority interface {
	Admit(ctx context.Context, a Admission) (Verdict, error)
	Effect(ctx context.Context, q EffectQuestion) (Verdict, error)
}

// AllowAll is the default Authority: it allows every admission and effect.
type AllowAll struct{}

// Admit allows.
func (AllowAll) Admit(context.Context, Admission) (Verdict, error) {
	return Verdict{Decision: Allow}, nil
}

// Effect allows.
func (AllowAll) Effect(context.Context, EffectQuestion) (Verdict, error) {
	return Verdict{Decision: Allow}, nil
}

// Dispatch is one authorized effect handed to a Dispatcher: the ledger has
// recorded it as authorized and debited the budget. AuthorizationID is
// unique per logical effect and stable across attempts; pass it downstream
// as the idempotency key so that the service can deduplicate.
type Dispatch struct {
	Scope           ledger.Scope
	OperationID     string
	AttemptID       string
	LogicalEffectID string
	AuthorizationID string
	Request         ipc.EffectRequest
	RequestDigest   canon.Digest
}

// Receipt is what a Dispatcher returns for an effect it consumed.
type Receipt struct {
	// ReceiptID names the consumption; required, 1..256 code points.
	ReceiptID string
	// Result is the effect's result object (data that was read, ids that
	// were created), sent to the host under "result" in the allowed reply.
	// Nil means none. It must pass the host's strict parser (see
	// CheckDocument).
	Result map[string]any
}

// ErrNotConsumed is returned (wrapped) by a Dispatcher that is certain the
// effect was not consumed: the service refused it before acting. The ledger
// records the effect as not consumed and the host is answered refused. Use
// NotConsumed to build one with a reason.
var ErrNotConsumed = errors.New("supervise: effect not consumed")

// NotConsumed returns an error wrapping ErrNotConsumed with a reason.
func NotConsumed(reason string) error { return fmt.Errorf("%w: %s", ErrNotConsumed, reason) }

// Dispatcher is the credential holder: it consumes one authorized effect,
// atomically against its own revocation and fencing, and says what
// happened.
//
//   - (Receipt, nil): consumed; the ledger records the receipt as
//     confirmed and the host gets an allowed reply with it.
//   - an error wrapping ErrNotConsumed: certainly not consumed; recorded as
//     not consumed, answered refused.
//   - any other error, or a ctx that ended: uncertain; the effect is
//     recorded unknown and answered needs_reconciliation until supervise.Supervisor.Resolve.
//
// Dispatch is called at most once per logical effect of an operation,
// across attempts and controller restarts, as long as the ledger is
// durable: a redelivery returns the recorded receipt without calling it.
// A Dispatcher must be safe for concurrent use.
//
// A nil Dispatcher means NoEffects.
type Dispatcher interface {
	Dispatch(ctx context.Context, d Dispatch) (Receipt, error)
}

// Replayer is an optional interface of a Dispatcher: the result object of
// an effect it already consumed, for a redelivery. Without it a redelivery
// carries the recorded authorization and receipt ids and no result object.
type Replayer interface {
	Replay(ctx context.Context, d Dispatch, receiptID string) (map[string]any, error)
}

// NoEffects is the default Dispatcher: every effect is not consumed.
// Because it is asked before the ledger is, a Supervisor without a real
// Dispatcher refuses every new effect without spending budget.
type NoEffects struct{}

// Dispatch refuses.
func (NoEffects) Dispatch(context.Context, Dispatch) (Receipt, error) {
	return Receipt{}, NotConsumed("no dispatcher is configured")
}

// Reserver is the resource-reservation port: it enforces a capability's
// effects.concurrency across invocations and controllers. A Supervisor
// with a Reserver calls Reserve after it has started an attempt (so the
// reservation is fenced with it) and before it launches the host, Recheck
// at invoke.admit immediately before invocation (through the Handler), and
// Release once the attempt has ended, whatever its outcome.
//
// Reserve takes what the invocation of m (of provider b, with the
// arguments with defaults) needs, waiting up to wait for a holder to end;
// an error means the host is not launched: an error wrapping
// cataloguestore.ErrReserved (a *cataloguestore.ReservationError naming the holder) is
// answered refused, any other error is returned as the cause of the
// failure to start. Recheck returns nil when the attempt still holds what
// it needs, an error wrapping cataloguestore.ErrReserved when it does not (the
// host is refused), and any other error when it cannot tell (the host is
// answered needs_reconciliation). Release must free what the
// attempt holds even when it was fenced off; reservations of an attempt
// whose Release never ran (a crash) must be freed by the operation's next
// attempt, its end or its deadline.
//
// catalogue.Catalogue implements it. A nil Reserver takes no reservations.
type Reserver interface {
	Reserve(ctx context.Context, f ledger.Fence, b manifest.ProviderBinding, m manifest.CapabilityManifest, arguments map[string]any, wait time.Duration) error
	Recheck(ctx context.Context, f ledger.Fence, b manifest.ProviderBinding, m manifest.CapabilityManifest, arguments map[string]any) error
	Release(ctx context.Context, f ledger.Fence) error
}

// EffectsService is the one service the host can inject into a provider:
// the effect port, served by the Handler of package supervise/handler (see doc/protocol.md,
// “Requirements check”).
const EffectsService = "runtime.effects"

// Grants are what the Runtime lets a capability use besides the effect
// port: credential and binary names, network hosts, and whether the network
// is allowed at all. A capability's LaunchContext lists exactly what its
// manifest requires, and a Supervisor refuses before launch a requirement
// that is not granted (handler.CheckRequirements). The host only checks names: granting a credential here gives
// the host no secret.
type Grants struct {
	Credentials    []string
	Binaries       []string
	NetworkHosts   []string
	NetworkAllowed bool
}
