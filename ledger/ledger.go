package ledger

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Ledger is the Runtime's durable truth about operations. Every method is
// atomic: it either applies completely or not at all, and a write that acts
// for an attempt checks the attempt's [Fence] in the same transaction as the
// write. Methods return the error sentinels of this package (wrapped; test
// with [errors.Is]); any other error is a storage failure.
//
// A Ledger is safe for concurrent use by multiple goroutines. Its methods
// return fresh values that the caller owns.
//
// Context: ctx bounds the wait for the call. If ctx ends before a durable
// backend knows the outcome of a write, the method returns an error that
// wraps ctx's error and either [ErrNotApplied] (the write certainly did
// not commit) or [ErrOutcomeUnknown] (it may have). A storage failure
// during a commit is reported the same way. Every write is idempotent (see
// each method), so the caller repeats the same call to learn the outcome.
//
// Protocol order: for one attempt, a bootstrap id must be redeemed before
// Admit, and Admit must succeed before BeginEffect and AcceptResult;
// otherwise the call is refused with ErrOutOfOrder. Recording the outcome
// of an effect (ConfirmEffect, MarkNotConsumed, MarkUnknown, Resolve) needs
// no admission: a new attempt may record what its predecessor's effect did.
//
// Error order: a call that is wrong in several ways gets the first of
// these that applies, so that every backend answers alike (ledgertest's
// model checks it):
//
//  1. ctx already done (ctx's error), then ErrClosed;
//  2. ErrInvalid for any malformed argument;
//  3. ErrNotFound for the operation in its scope;
//  4. *FenceError (ErrStaleFence) for a fenced call;
//  5. then per method, in the order its comment lists them.
//
// Per method, after step 4: StartAttempt: ErrOperationCancelled or
// ErrResultAlreadyAccepted, then a *FenceError for an older attempt id.
// LaunchAttempt (whose
// operation may be missing, so step 3 does not apply): ErrLeaseExpired when
// it names a controller whose lease is not live (or that never acquired
// one), ErrChangedInput for another operation spec, operation over, a
// *FenceError for an attempt that would not get the generation asked for,
// ErrChangedInput for an attempt already started for another controller
// (or none), then ErrChangedInput for a bootstrap id issued to another
// operation, attempt or launch digest. RedeemBootstrap:
// operation over, ErrNotFound (id not issued in this operation), a
// *FenceError (id issued to an older attempt), ErrBootstrapRedeemed,
// ErrChangedInput (launch digest). Admit: operation over, ErrOutOfOrder,
// ErrChangedInput, ErrDeadlineExceeded. BeginEffect: ErrOutOfOrder; for a
// recorded id ErrChangedInput (else the redelivery); for a new id
// ErrLeaseExpired (the attempt has a controller whose lease is not live),
// operation over, ErrDeadlineExceeded, ErrBudgetExhausted. ConfirmEffect,
// MarkNotConsumed, MarkUnknown and Resolve: ErrNotFound (effect),
// ErrChangedInput, for Resolve ErrInFlight (the effect is authorized and
// its controller live), then ErrInvalidTransition unless the recorded
// outcome is the one asked for. AcceptResult: ErrOutOfOrder; with a result
// accepted ErrResultAlreadyAccepted (other digest) or ErrChangedInput
// (other bytes), else ErrOperationCancelled. Cancel: ErrResultAlreadyAccepted.
// RecordAttempt, which is not fenced (step 4 does not apply): ErrNotFound
// (no attempt of that id and generation), then
// ErrChangedInput. TakeOver (step 3 for t.From's operation; t.From is
// checked after the operation's state, as step 5 says): operation over;
// then the repeat of a takeover that succeeded is answered (its taker's
// lease must still be live, else ErrLeaseExpired); else a *FenceError for
// a t.From that is not current or a t.AttemptID the operation already
// used, ErrOwnerLive, ErrLeaseExpired (the taker). AcquireLease:
// ErrLeaseExpired (the id's lease ended), then ErrLeaseHeld. RenewLease:
// ErrNotFound, then ErrLeaseExpired. ReleaseLease: ErrNotFound.
// ListOperations and Evidence refuse only malformed arguments (and
// Evidence a missing operation); Leases, ListUnknown and ListInFlight
// refuse nothing.
//
// Implementations must pass [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run].
type Ledger interface {
	// CreateOperation records an operation, or returns the recorded one if
	// an operation with the same scope and id exists with an identical spec.
	// A different spec under the same id is refused with ErrChangedInput.
	CreateOperation(ctx context.Context, spec OperationSpec) (Operation, error)

	// StartAttempt starts attempt attemptID of the operation and returns its
	// fence: the next fencing generation, strictly greater than every earlier
	// one of this operation. From then on every older attempt is fenced off.
	// Starting the current attempt again returns its fence unchanged
	// (a lost reply is safe to repeat); naming an older attempt returns a
	// *FenceError. Refused with ErrOperationCancelled or ErrResultAlreadyAccepted once
	// the operation is over.
	StartAttempt(ctx context.Context, scope Scope, operationID, attemptID string) (Fence, error)

	// LaunchAttempt records, in one atomic write, what an attempt needs
	// before its host may bootstrap, and returns the attempt's fence: it
	// creates the operation a.Operation describes unless it exists (as
	// CreateOperation: an existing operation with another spec is
	// ErrChangedInput), starts attempt a.AttemptID with fencing generation
	// a.Generation (as StartAttempt) and issues a.BootstrapID for it with
	// a.LaunchDigest, the digest of the launch context the child receives.
	// A bootstrap id is one-shot and unique in the whole ledger: it names
	// one attempt of one operation. Issuing the same id for the same
	// attempt and digest again changes nothing; issuing it for another
	// attempt (even of the same operation), for an operation in any other
	// scope, or with another launch digest is ErrChangedInput, redeemed or
	// not. An attempt already started (by StartAttempt, or by an earlier
	// LaunchAttempt) is named with its generation and controller, and the
	// call issues one more bootstrap id for it: a controller that starts
	// attempts itself records each launch that way, with
	// Operation.Spec() of the recorded operation. The launch digest covers the
	// generation, so the caller names the generation it expects:
	// StartAttempt's next one, the operation's current generation plus one
	// (1 for an operation the call creates). Any other generation is a
	// *FenceError, and nothing is written: a concurrent attempt made the
	// caller's view of the operation stale; read it again and prepare
	// another launch. Repeating the call returns the same fence while the
	// attempt is current and its controller's lease live (a lost reply is
	// safe to repeat); naming another controller for an attempt already
	// started is ErrChangedInput.
	LaunchAttempt(ctx context.Context, a AttemptLaunch) (Fence, error)

	// RedeemBootstrap redeems a bootstrap id exactly once, for the child
	// process and session in r. The launch digest must equal the issued one
	// (else ErrChangedInput) and the id must have been issued to the fenced
	// attempt (else *FenceError). Repeating the redemption with the same
	// pid, session and launch digest returns the recorded redemption (a
	// retry after an unknown outcome); any other claimant, once the id is
	// redeemed, is refused with ErrBootstrapRedeemed.
	RedeemBootstrap(ctx context.Context, f Fence, r Redemption) (Bootstrap, error)

	// Admit admits the fenced attempt's request. The attempt must have
	// redeemed one of its bootstrap ids (else ErrOutOfOrder), requestDigest
	// must equal the operation's request digest (else ErrChangedInput) and
	// the deadline must not have passed (else ErrDeadlineExceeded).
	// Admitting again is allowed and returns the same attempt.
	Admit(ctx context.Context, f Fence, requestDigest canon.Digest) (Attempt, error)

	// BeginEffect authorizes logical effect logicalEffectID of the fenced
	// attempt's operation, or returns the recorded one. The attempt must
	// have been admitted (else ErrOutOfOrder), for redeliveries too.
	//
	//   - New id: the operation's budget is debited by one (ErrBudgetExhausted
	//     if no budget is left) and the effect is recorded as EffectAuthorized
	//     with a fresh AuthorizationID.
	//   - Same id, same requestDigest: the recorded effect, unchanged, with
	//     Redelivery set; no budget, no new authorization. This holds across
	//     attempts and restarts. It is not permission to dispatch again.
	//   - Same id, other requestDigest: ErrChangedInput.
	BeginEffect(ctx context.Context, f Fence, logicalEffectID string, requestDigest canon.Digest) (EffectGrant, error)

	// ConfirmEffect records that an authorized effect was consumed, with the
	// dispatcher's receipt. Confirming again with the same receipt returns
	// the record; another receipt, or any state but authorized, is
	// ErrInvalidTransition. requestDigest is checked (ErrChangedInput).
	ConfirmEffect(ctx context.Context, f Fence, logicalEffectID string, requestDigest canon.Digest, receiptID string) (Effect, error)

	// MarkNotConsumed records that an authorized effect was not consumed
	// (refused, cancelled, waiting for approval). Repeating with the same
	// reason returns the record; otherwise only an authorized effect may move.
	MarkNotConsumed(ctx context.Context, f Fence, logicalEffectID string, requestDigest canon.Digest, reason NotConsumedReason) (Effect, error)

	// MarkUnknown records that dispatch of an authorized effect is uncertain.
	// An unknown effect stays unknown until Resolve. Repeating returns the
	// record.
	MarkUnknown(ctx context.Context, f Fence, logicalEffectID string, requestDigest canon.Digest) (Effect, error)

	// Resolve settles an unknown (or authorized but never finished) effect
	// after reconciliation, without a fence: it is the operator's or the
	// dispatcher's statement about the outside world. res.State must be
	// EffectConfirmed (with a receipt) or EffectNotConsumed (with a reason).
	// Resolving a settled effect to the same outcome returns the record;
	// to another outcome is ErrInvalidTransition. An authorized effect whose
	// controller holds a live lease is in flight: refused with a
	// *LeaseError wrapping ErrInFlight, naming the controller.
	Resolve(ctx context.Context, scope Scope, operationID, logicalEffectID string, requestDigest canon.Digest, res Resolution) (Effect, error)

	// AcceptResult durably accepts the operation's one result: its data
	// digest and the artifact bytes, stored immutably under the operation's
	// scope. The attempt must have been admitted (else ErrOutOfOrder). The same digest and bytes again return the same refs; anything
	// else after acceptance is ErrResultAlreadyAccepted (other digest) or
	// ErrChangedInput (same digest, other bytes). artifact may be empty but
	// at most [MaxArtifactBytes].
	AcceptResult(ctx context.Context, f Fence, dataDigest canon.Digest, artifact []byte) (Result, error)

	// Cancel cancels the operation; its current and future attempts can no
	// longer advance it. Cancelling again returns the operation; cancelling
	// an operation whose result was accepted is ErrResultAlreadyAccepted.
	Cancel(ctx context.Context, scope Scope, operationID, reason string) (Operation, error)

	// Operation returns the operation with its attempts, bootstrap ids,
	// effects and result.
	Operation(ctx context.Context, scope Scope, operationID string) (OperationView, error)

	// ListUnknown returns every effect that needs reconciliation: state
	// EffectUnknown, and EffectAuthorized whose controller holds no live
	// lease (authorized, outcome never recorded, e.g. because the Runtime
	// crashed); an authorized effect under a live controller is in flight
	// (ListInFlight), not unknown. Ordered by scope, operation id and
	// logical effect id.
	ListUnknown(ctx context.Context) ([]Effect, error)

	// ListOperations returns a page of operations selected by q, ordered
	// by organization, project and operation id (byte order of each).
	// A page shorter than the limit is the last one.
	ListOperations(ctx context.Context, q OperationQuery) ([]Operation, error)

	// RecordAttempt records the evidence of how the attempt f names ended
	// (see AttemptEvidence), filling its AttemptID and Generation from f.
	// f must name an attempt the operation started, with that attempt's
	// generation, else ErrNotFound; it need not be the current attempt, and
	// the operation may be cancelled or completed: the ledger never refuses
	// the truth about an attempt. Evidence is written once: recording equal
	// evidence again returns the record, other evidence for the same
	// attempt is ErrChangedInput.
	RecordAttempt(ctx context.Context, f Fence, ev AttemptEvidence) (AttemptEvidence, error)

	// Evidence returns the evidence recorded for the operation's attempts,
	// in generation order; an attempt that recorded none is absent.
	Evidence(ctx context.Context, scope Scope, operationID string) ([]AttemptEvidence, error)

	// Artifact returns an artifact by ref. A ref stored under another
	// organization or project is ErrOutOfScope.
	Artifact(ctx context.Context, scope Scope, ref string) (Artifact, error)

	// AcquireLease registers controller controllerID with a lease of ttl
	// (see Lease). Acquiring a live lease again with the same ttl returns
	// it unchanged (a lost reply is safe to repeat); with another ttl it is
	// ErrLeaseHeld; an id whose lease expired or was released is
	// ErrLeaseExpired: ids are never reused.
	AcquireLease(ctx context.Context, controllerID string, ttl time.Duration) (Lease, error)

	// RenewLease extends a live lease to ttl from now by the store's clock.
	// A lease that expired or was released is ErrLeaseExpired (a
	// *LeaseError), a controller never registered ErrNotFound.
	RenewLease(ctx context.Context, controllerID string, ttl time.Duration) (Lease, error)

	// ReleaseLease releases the lease now: from then on the controller's
	// attempts are orphaned and may be taken over at once. Releasing again
	// returns the record; ErrNotFound for an unknown controller.
	ReleaseLease(ctx context.Context, controllerID string) (Lease, error)

	// Leases returns every recorded lease ordered by controller id, each
	// with Live computed by the store's clock.
	Leases(ctx context.Context) ([]Lease, error)

	// TakeOver starts attempt t.AttemptID of the operation t.From names,
	// owned by t.ControllerID, fencing off t.From, in one write that checks:
	// the operation is open (ErrOperationCancelled, ErrResultAlreadyAccepted), t.From
	// is its current attempt (else *FenceError), t.From's controller holds
	// no live lease (else *LeaseError wrapping ErrOwnerLive), and
	// t.ControllerID's lease is live (else ErrLeaseExpired). The new
	// attempt gets t.From.Generation+1. Repeating the call after it
	// succeeded returns the same fence while that attempt is current.
	TakeOver(ctx context.Context, t Takeover) (Fence, error)

	// ListInFlight returns every authorized effect whose controller holds a
	// live lease: dispatches that may be under way, which only their
	// controller settles. Ordered as ListUnknown.
	ListInFlight(ctx context.Context) ([]Effect, error)

	// Close waits for writes in flight, bounded by ctx, then releases the
	// ledger. Later calls of every method return ErrClosed. A durable backend
	// whose writes do not finish before ctx ends returns ErrCloseTimeout and
	// keeps its ownership (fail-stop): the process must exit. Close may be
	// called more than once.
	Close(ctx context.Context) error
}

// Scope is the organization and project an operation belongs to. Both
// fields are required identifiers.
type Scope struct {
	OrganizationID string `json:"organization_id"`
	ProjectID      string `json:"project_id"`
}

// OperationSpec is what CreateOperation records. Every field, Deadline
// included, is part of the idempotency fingerprint; all are required except
// that EffectBudget may be zero (no effects allowed) and Deadline may be
// zero (no deadline).
type OperationSpec struct {
	Scope          Scope
	OperationID    string
	CapabilityID   string
	RequestDigest  canon.Digest
	ManifestDigest canon.Digest
	// EffectBudget is the total number of distinct logical effects the
	// operation may authorize, across all its attempts. Must be >= 0.
	EffectBudget int64
	// Deadline is when the operation expires; after it, Admit and new
	// effects are refused with ErrDeadlineExceeded. It is stored at
	// nanosecond precision in UTC and is part of the fingerprint. The zero
	// value means no deadline.
	Deadline time.Time
}

// AttemptLaunch is what LaunchAttempt records: an operation, one attempt
// of it and the attempt's bootstrap id. Every field is required.
type AttemptLaunch struct {
	// Operation is the operation's spec, as CreateOperation takes it.
	Operation OperationSpec
	// AttemptID is the attempt to start.
	AttemptID string
	// Generation is the fencing generation the attempt must get, >= 1.
	Generation int64
	// BootstrapID and LaunchDigest are issued for the attempt.
	BootstrapID  string
	LaunchDigest canon.Digest
	// ControllerID, when set, is the controller that owns the attempt; its
	// lease must be live when the launch is recorded (else a *LeaseError
	// wrapping ErrLeaseExpired; also for an id that never acquired a
	// lease, with a zero Expires). Empty means no owner: the attempt is
	// orphaned from the start (see Lease).
	ControllerID string
}

// Fence returns the fence the launch's attempt gets when LaunchAttempt
// succeeds.
func (a AttemptLaunch) Fence() Fence {
	return Fence{Scope: a.Operation.Scope, OperationID: a.Operation.OperationID, AttemptID: a.AttemptID, Generation: a.Generation}
}

// OperationState is the lifecycle state of an operation.
type OperationState string

// Operation states.
const (
	// OperationOpen operations accept attempts and writes.
	OperationOpen OperationState = "open"
	// OperationCompleted operations have an accepted result.
	OperationCompleted OperationState = "completed"
	// OperationCancelled operations were cancelled before a result.
	OperationCancelled OperationState = "cancelled"
)

// Operation is the recorded state of an operation.
type Operation struct {
	Scope          Scope          `json:"scope"`
	OperationID    string         `json:"operation_id"`
	CapabilityID   string         `json:"capability_id"`
	RequestDigest  canon.Digest   `json:"request_digest"`
	ManifestDigest canon.Digest   `json:"manifest_digest"`
	EffectBudget   int64          `json:"effect_budget"`
	Deadline       time.Time      `json:"deadline"`
	State          OperationState `json:"state"`
	// CancelReason is the reason given to Cancel; empty unless cancelled.
	CancelReason string `json:"cancel_reason,omitempty"`
	// EffectsUsed is the number of distinct logical effects authorized so
	// far; never above EffectBudget.
	EffectsUsed int64 `json:"effects_used"`
	// CurrentAttemptID and CurrentGeneration name the current attempt; zero
	// values before the first StartAttempt.
	CurrentAttemptID  string `json:"current_attempt_id,omitempty"`
	CurrentGeneration int64  `json:"current_generation,omitempty"`
	// CurrentControllerID is the controller that owns the current attempt;
	// empty when it has none.
	CurrentControllerID string `json:"current_controller_id,omitempty"`
}

// Spec returns the spec o was created with, as CreateOperation and
// LaunchAttempt take it.
func (o Operation) Spec() OperationSpec {
	return OperationSpec{Scope: o.Scope, OperationID: o.OperationID, CapabilityID: o.CapabilityID,
		RequestDigest: o.RequestDigest, ManifestDigest: o.ManifestDigest, EffectBudget: o.EffectBudget, Deadline: o.Deadline}
}

// Fence names the attempt a write acts for: the operation, the attempt and
// the fencing generation StartAttempt issued. A fence is valid while it is
// the operation's current one.
type Fence struct {
	Scope       Scope  `json:"scope"`
	OperationID string `json:"operation_id"`
	AttemptID   string `json:"attempt_id"`
	// Generation is the fencing generation, >= 1.
	Generation int64 `json:"fencing_generation"`
}

// Attempt is one recorded attempt of an operation.
type Attempt struct {
	AttemptID  string `json:"attempt_id"`
	Generation int64  `json:"fencing_generation"`
	// Admitted reports whether Admit succeeded for this attempt.
	Admitted bool `json:"admitted"`
	// ControllerID is the controller that owns the attempt; empty when it
	// has none.
	ControllerID string `json:"controller_id,omitempty"`
}

// Bootstrap is a recorded bootstrap id.
type Bootstrap struct {
	BootstrapID  string       `json:"bootstrap_id"`
	AttemptID    string       `json:"attempt_id"`
	Generation   int64        `json:"fencing_generation"`
	LaunchDigest canon.Digest `json:"launch_digest"`
	// Redeemed reports whether the id was redeemed; the Redeemed* fields
	// are zero until then.
	Redeemed          bool   `json:"redeemed"`
	RedeemedPID       int    `json:"redeemed_pid,omitempty"`
	RedeemedSessionID string `json:"redeemed_session_id,omitempty"`
}

// Redemption is a child's claim of a bootstrap id: the id and launch digest
// it presented, its process id (checked by the caller against the kernel's
// credentials) and the identity of the IPC session it arrived on.
type Redemption struct {
	BootstrapID  string
	LaunchDigest canon.Digest
	// PID must be > 0.
	PID int
	// SessionID is a required identifier for the IPC session.
	SessionID string
}

// EffectState is the state of a logical effect.
type EffectState string

// Effect states. Allowed moves: authorized → confirmed | not_consumed |
// unknown; unknown → confirmed | not_consumed only through Resolve.
const (
	EffectAuthorized  EffectState = "authorized"
	EffectConfirmed   EffectState = "confirmed"
	EffectNotConsumed EffectState = "not_consumed"
	EffectUnknown     EffectState = "unknown"
)

// NotConsumedReason says why an effect was not consumed; the values are the
// wire's non-consuming reply states.
type NotConsumedReason string

// Reasons for EffectNotConsumed.
const (
	ReasonRefused         NotConsumedReason = "refused"
	ReasonCancelled       NotConsumedReason = "cancelled"
	ReasonWaitingApproval NotConsumedReason = "waiting_approval"
)

// Effect is a recorded logical effect.
type Effect struct {
	Scope           Scope        `json:"scope"`
	OperationID     string       `json:"operation_id"`
	LogicalEffectID string       `json:"logical_effect_id"`
	RequestDigest   canon.Digest `json:"effect_request_digest"`
	// AuthorizationID is issued by the ledger when the effect is first
	// authorized and never changes.
	AuthorizationID string      `json:"authorization_id"`
	State           EffectState `json:"state"`
	// ReceiptID is the dispatcher's receipt; set when State is confirmed.
	ReceiptID string `json:"receipt_id,omitempty"`
	// Reason is set when State is not_consumed.
	Reason NotConsumedReason `json:"reason,omitempty"`
	// AttemptID and Generation name the attempt that authorized the effect.
	AttemptID  string `json:"attempt_id"`
	Generation int64  `json:"fencing_generation"`
	// Ordinal is the effect's 1-based position in the operation's budget.
	Ordinal int64 `json:"ordinal"`
	// ControllerID is the controller of the attempt that authorized the
	// effect; empty when it had none.
	ControllerID string `json:"controller_id,omitempty"`
}

// EffectGrant is BeginEffect's answer.
type EffectGrant struct {
	Effect Effect
	// Redelivery is true when the effect was already recorded: nothing was
	// authorized or debited by this call.
	Redelivery bool
}

// Resolution is the outcome Resolve records.
type Resolution struct {
	// State is EffectConfirmed or EffectNotConsumed.
	State EffectState
	// ReceiptID is required for EffectConfirmed, empty otherwise.
	ReceiptID string
	// Reason is required for EffectNotConsumed, empty otherwise.
	Reason NotConsumedReason
}

// Result is an operation's accepted result.
type Result struct {
	DataDigest canon.Digest `json:"data_digest"`
	// ArtifactRefs are opaque, non-empty refs of at most 256 code points,
	// suitable for the wire's artifact_refs; never empty.
	ArtifactRefs []string `json:"artifact_refs"`
	// AttemptID and Generation name the attempt whose result was accepted.
	AttemptID  string `json:"attempt_id"`
	Generation int64  `json:"fencing_generation"`
}

// Artifact is an immutable stored artifact.
type Artifact struct {
	Ref         string `json:"ref"`
	Scope       Scope  `json:"scope"`
	OperationID string `json:"operation_id"`
	// Digest is canon.Sum of Bytes (sha256 of the bytes as stored).
	Digest canon.Digest `json:"digest"`
	// Bytes are the artifact's content, never nil for a stored artifact.
	// They are not part of the JSON form (encoding/json would write
	// base64, canon.Marshal an array of numbers): backends store them raw
	// beside the record, and the wire carries refs, not bytes.
	Bytes []byte `json:"-"`
}

// OperationView is an operation with everything recorded about it.
type OperationView struct {
	Operation Operation
	// Attempts in generation order.
	Attempts []Attempt
	// Bootstraps ordered by bootstrap id.
	Bootstraps []Bootstrap
	// Effects ordered by logical effect id.
	Effects []Effect
	// Result is nil until a result is accepted.
	Result *Result
}
