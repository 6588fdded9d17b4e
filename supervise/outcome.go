package supervise

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// One sentinel per outcome state other than succeeded. Every non-success
// Outcome comes with an *OutcomeError wrapping exactly one of them, so
// that errors.Is(err, supervise.ErrWaitingApproval) says what the caller
// may do next.
var (
	// ErrFailed: the capability ran and failed (the host's failed). A new
	// attempt would run it again; decide as for any business failure.
	ErrFailed = errors.New("supervise: capability failed")
	// ErrRefused: the host, the Runtime or the Authority refused the
	// attempt; nothing was run on its behalf past that point. The Reason
	// says which and why.
	ErrRefused = errors.New("supervise: refused")
	// ErrInvalidRequest: the arguments do not satisfy the capability's
	// request schema (found before launch, or by the host). Fix the call.
	ErrInvalidRequest = errors.New("supervise: invalid request")
	// ErrUnavailable: the capability cannot run in this environment (its
	// requirements, the host's interpreter or distribution), found before
	// launch or by the host.
	ErrUnavailable = errors.New("supervise: capability unavailable")
	// ErrCancelled: the operation was cancelled (Cancel), or the capability
	// reported itself cancelled.
	ErrCancelled = errors.New("supervise: cancelled")
	// ErrTimedOut: the attempt reached the operation deadline; the host was
	// stopped or reported timed_out. The ledger refuses new effects past the
	// deadline; a later call with the same operation id fails the same way.
	ErrTimedOut = errors.New("supervise: timed out")
	// ErrWaitingApproval: the Authority held the admission or an effect for
	// approval. Nothing held was recorded or dispatched; once approved,
	// Invoke again with the same operation id.
	ErrWaitingApproval = errors.New("supervise: waiting for approval")
	// ErrNeedsReconciliation: an effect's dispatch is uncertain. It is
	// recorded unknown; settle it with Supervisor.Resolve (list them with
	// Recover or ledger.ListUnknown), then Invoke again with the same
	// operation id.
	ErrNeedsReconciliation = errors.New("supervise: needs reconciliation")
	// ErrProtocol: what the host left behind proves nothing (a crash, a
	// signal, a malformed or incoherent result, a broken session). The
	// evidence is kept; never redispatch by hand: Invoke again with the
	// same operation id, and the ledger answers every effect already
	// recorded.
	ErrProtocol = errors.New("supervise: protocol error")
	// ErrRunning: the operation has an attempt in flight (in this
	// controller, or under another controller's live lease) and this call
	// did not wait for it to end. Nothing was launched or recorded by the
	// call; ask again with the same operation id for the outcome.
	ErrRunning = errors.New("supervise: operation running")
)

// Outcome is what one Invoke established about an operation. State is the
// Runtime's verdict, decided from the ledger and the session, with the
// host's result as evidence (see the package documentation, “Outcomes”).
type Outcome struct {
	// State is succeeded or the reason there is no result yet.
	State launch.State
	// Scope and OperationID name the operation.
	Scope       ledger.Scope
	OperationID string
	// AttemptID and Generation name the attempt this call ran; empty and
	// zero when nothing was launched (Reconnected, or refused before).
	AttemptID  string
	Generation int64
	// Launched reports whether a host process was started.
	Launched bool
	// Reconnected reports that the operation's result had already been
	// accepted: it is returned from the ledger and nothing was launched.
	Reconnected bool
	// Result is the accepted result (data digest and artifact refs) when
	// State is succeeded; nil otherwise.
	Result *ledger.Result
	// ErrorCode is the host's error_code, when it reported one.
	ErrorCode string
	// Reason says why a non-success happened, in words an operator can act
	// on (which check refused, which requirement is missing, what the
	// host's error code usually means).
	Reason string
	// Host is the host's own result when it wrote a valid one; it is
	// evidence, and may disagree with State (an incoherent claim is a
	// protocol error, Reason says so).
	Host *launch.HostResult
	// Launch is what the launcher observed (process, session summary,
	// launch digest); nil when nothing was launched.
	Launch *launch.Outcome
	// Effects are the operation's effects as the ledger holds them after
	// the attempt, ordered by logical effect id.
	Effects []ledger.Effect
	// Budget and BudgetUsed are the operation's total effect budget and the
	// distinct effects authorized so far, across all attempts.
	Budget, BudgetUsed int64
	// Decisions are the Handler's decisions during the attempt, in order.
	Decisions []Event
	// Evidence is what was recorded in the ledger about the attempt
	// (ledger.RecordAttempt); nil when nothing was launched or recording
	// failed, and then EvidenceErr says why. A failure to record evidence
	// does not change State: the ledger's other records are the truth.
	Evidence    *ledger.AttemptEvidence
	EvidenceErr error
	// Shared reports that this call found a concurrent Invoke of the same
	// operation and request running in this process, waited for it and
	// got its outcome: nothing was launched for this call.
	Shared bool
}

// OutcomeError is the error Invoke returns with every Outcome whose State is
// not succeeded. It wraps the state's sentinel (ErrFailed, ErrRefused, ...)
// and, when there is one, the cause (a *launch.ResultError, an
// *ipc.ViolationError, a ledger error, a *PreflightError).
type OutcomeError struct {
	Outcome *Outcome
	// Err is the state's sentinel.
	Err error
	// Cause is the underlying error, or nil.
	Cause error
}

// Error names the operation, the state and why.
func (e *OutcomeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "supervise: operation %q", e.Outcome.OperationID)
	if e.Outcome.AttemptID != "" {
		fmt.Fprintf(&b, " attempt %q", e.Outcome.AttemptID)
	}
	fmt.Fprintf(&b, ": %s", e.Outcome.State)
	if e.Outcome.ErrorCode != "" {
		fmt.Fprintf(&b, " (%s)", e.Outcome.ErrorCode)
	}
	if e.Outcome.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Outcome.Reason)
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the state's sentinel and the cause.
func (e *OutcomeError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}

// result returns o as Invoke returns it: nil error for a success, an
// *OutcomeError otherwise.
func (o *Outcome) result(cause error) (*Outcome, error) {
	if o.State == launch.StateSucceeded {
		return o, nil
	}
	sentinel := sentinelOf(o.State)
	return o, &OutcomeError{Outcome: o, Err: sentinel, Cause: cause}
}

// ended is what o established, for the Invoke's span and metrics; nil
// when Invoke returned no Outcome.
func (o *Outcome) ended() *telemetry.Ended {
	if o == nil {
		return nil
	}
	return &telemetry.Ended{State: string(o.State), AttemptID: o.AttemptID, Generation: o.Generation,
		Shared: o.Shared, Reconnected: o.Reconnected}
}
