package ledger

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// Errors about the call and the store rather than the operation: every
// [Ledger] method may return the first four, and a durable backend the
// rest. Backends wrap them with context (what was refused and where), so
// test for them with [errors.Is]; the text after the "ledger: " prefix may
// change and is not part of the contract.
var (
	// ErrClosed is returned by every method called after Close has begun.
	ErrClosed = errors.New("ledger: closed")

	// ErrInvalid is returned for a malformed argument (an empty or too long
	// identifier, a malformed digest, a negative budget). Nothing is written;
	// fix the caller.
	ErrInvalid = check.ErrInvalid

	// ErrNotFound is returned when the operation, bootstrap id, effect or
	// artifact named by the call does not exist in the caller's scope.
	ErrNotFound = errors.New("ledger: not found")

	// ErrCorrupt is returned when a stored record cannot be decoded. The
	// ledger refuses to guess; restore the store from a backup.
	ErrCorrupt = errors.New("ledger: stored record is corrupt")

	// A durable backend returns ErrNotApplied or ErrOutcomeUnknown when a
	// write's outcome is not the answer to the call: the call's context
	// ended, or the store failed, before the write was known to be
	// durable. Both wrap the cause (ctx's error, the storage error) as
	// well. Every write is idempotent, so after either one the caller may
	// repeat the identical call: it then gets the recorded outcome, or
	// applies the write now.

	// ErrNotApplied: the write certainly did not commit (it was never run,
	// or its transaction was rolled back). Nothing changed.
	ErrNotApplied = errors.New("ledger: write not applied")

	// ErrOutcomeUnknown: the write may or may not have committed (the
	// context ended while it was being made durable, or the commit itself
	// failed). Repeat the call, or read the operation, to learn which.
	ErrOutcomeUnknown = errors.New("ledger: write outcome unknown")

	// Ownership of a durable store: opening it, and closing it.

	// ErrLocked is returned when a durable ledger cannot be opened because
	// another owner (process) holds it. The wrapping error names the path.
	// Stop the other owner, or point this one at another file.
	ErrLocked = errors.New("ledger: held by another owner")

	// ErrCloseTimeout is returned by Close when writes were still in flight
	// when its context ended. The ledger has entered fail-stop: ownership is
	// NOT released, because a write could still land, and the process must
	// exit so that the operating system releases it.
	ErrCloseTimeout = errors.New("ledger: close timed out with writes in flight; ownership kept, exit the process")
)

// Errors that refuse a call because of the state the ledger already
// holds: the operation's, its attempts' and effects', or a controller's
// lease. Retrying the same call gets the same answer until that state
// changes, and most never change (a stale fence, an accepted result, a
// lease that ended).
var (
	// ErrStaleFence is returned when a write presents a fence that is not the
	// operation's current one: a newer attempt has started (the presenter is
	// fenced off), or the fence was never issued. It is always wrapped in a
	// [*FenceError]. Never retry: the presenting attempt is over.
	ErrStaleFence = errors.New("ledger: stale fence")

	// ErrBootstrapRedeemed is returned by RedeemBootstrap when the bootstrap id
	// was already redeemed, by any process, including the same one.
	ErrBootstrapRedeemed = errors.New("ledger: bootstrap id already redeemed")

	// ErrChangedInput is returned when an idempotency key (operation id,
	// attempt id, bootstrap id, logical effect id, accepted result) is reused
	// with a different fingerprint: another request digest, launch digest,
	// data digest or artifact. It is the IETF Idempotency-Key 422.
	ErrChangedInput = errors.New("ledger: key reused with changed input")

	// ErrBudgetExhausted is returned by BeginEffect when a new logical effect
	// would exceed the operation's total effect budget. Redeliveries of
	// recorded effects never consume budget and never get this error.
	ErrBudgetExhausted = errors.New("ledger: effect budget exhausted")

	// ErrResultAlreadyAccepted is returned when an operation already has an
	// accepted result and the call would accept a different one, start a new
	// attempt or cancel it.
	ErrResultAlreadyAccepted = errors.New("ledger: result already accepted")

	// ErrOutOfScope is returned when an artifact is asked for under an
	// organization or project other than the one it was stored under.
	ErrOutOfScope = errors.New("ledger: out of scope")

	// ErrOperationCancelled is returned when an operation is cancelled and
	// the call would advance it (new attempt, bootstrap, admission, new
	// effect, result). Recording the outcome of an effect that was already
	// authorized stays allowed, so that the truth about the outside world
	// is not lost. (A Supervisor reports such an operation with the
	// outcome cancelled, supervise.ErrCancelled.)
	ErrOperationCancelled = errors.New("ledger: operation cancelled")

	// ErrDeadlineExceeded is returned by Admit and by BeginEffect for a new
	// effect once the operation's deadline has passed.
	ErrDeadlineExceeded = errors.New("ledger: operation deadline exceeded")

	// ErrOutOfOrder is returned when a call comes before the step the
	// protocol puts first for the attempt: Admit before the attempt
	// redeemed a bootstrap id, BeginEffect or AcceptResult before the
	// attempt was admitted. The order is bootstrap, invoke.admit, effects,
	// result.publish; the ledger enforces it because it is the durable
	// truth the Runtime consults, not the host. Recording the outcome of
	// an effect already authorized is never out of order.
	ErrOutOfOrder = errors.New("ledger: call out of protocol order")

	// ErrInvalidTransition is returned when an effect is asked to move to a
	// state its current state does not allow: confirming an effect that was
	// marked not consumed, confirming with a second receipt, leaving unknown
	// other than through Resolve.
	ErrInvalidTransition = errors.New("ledger: effect state transition not allowed")

	// Controller leases (see [Lease]); a [*LeaseError] wraps each of them.

	// ErrLeaseExpired is returned when a lease has expired or was released:
	// by RenewLease, and by LaunchAttempt and BeginEffect (new effect) for
	// an attempt whose controller's lease is not live. It is final for that
	// controller id: stop acting for its attempts (fail-stop).
	ErrLeaseExpired = errors.New("ledger: controller lease expired")

	// ErrLeaseHeld is returned by AcquireLease when another live lease
	// exists under the same controller id with another ttl.
	ErrLeaseHeld = errors.New("ledger: controller lease held")

	// ErrOwnerLive is returned by TakeOver when the attempt's controller
	// still holds a live lease: its attempts are never touched.
	ErrOwnerLive = errors.New("ledger: attempt's controller is live")

	// ErrInFlight is returned by Resolve for an authorized effect whose
	// controller still holds a live lease: the dispatch may be under way,
	// and only that controller may record its outcome. Ask again after the
	// controller has recorded it, or after its lease expired.
	ErrInFlight = errors.New("ledger: effect in flight under a live controller")
)

// FenceError reports a write refused because its fence is not the
// operation's current one. It wraps [ErrStaleFence]. The fields are for
// diagnostics; the decision has already been made.
type FenceError struct {
	// Op is the refused method, e.g. "BeginEffect".
	Op string
	// OperationID is the operation the fence names.
	OperationID string
	// Presented is the fence the caller presented.
	Presented Fence
	// CurrentAttemptID and CurrentGeneration are the operation's current
	// attempt and fencing generation; zero when no attempt was ever started.
	CurrentAttemptID  string
	CurrentGeneration int64
}

// Error describes the two fences.
func (e *FenceError) Error() string {
	return fmt.Sprintf("ledger: %s: operation %q: fence (attempt %q, generation %d) is stale, current is (attempt %q, generation %d); this attempt is over, do not retry",
		e.Op, e.OperationID, e.Presented.AttemptID, e.Presented.Generation, e.CurrentAttemptID, e.CurrentGeneration)
}

// Unwrap returns [ErrStaleFence].
func (e *FenceError) Unwrap() error { return ErrStaleFence }
