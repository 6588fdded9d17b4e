package supervise

import (
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/internal/answer"
)

// EventKind says what an Event reports.
type EventKind string

// The event kinds, in the order an attempt produces them.
const (
	// EventOperation: the operation was found, or created by its first
	// attempt's launch (Operation set, as it was before the attempt).
	EventOperation EventKind = "operation"
	// EventAttempt: an attempt's launch was recorded with a new fence
	// (AttemptID, Generation).
	EventAttempt EventKind = "attempt"
	// EventLaunch: the attempt's bootstrap id was issued with the launch
	// digest; the host is starting (BootstrapID, LaunchDigest, Budget).
	EventLaunch EventKind = "launch"
	// EventRequest: the Handler decided one IPC request (Method, State,
	// Reason; for effects Effect, Redelivery, Dispatched; for a publish
	// Result; for bootstrap PID and SessionID).
	EventRequest EventKind = "request"
	// EventOutcome: the attempt ended (Outcome).
	EventOutcome EventKind = "outcome"
)

// Event is one step of an operation, for traces and audit logs. Fields
// not named by the Kind are zero.
type Event struct {
	Kind EventKind
	// Time is when the step happened (for a request, when it was decided),
	// with the monotonic reading, so that an Observer can measure the time
	// to the first frame and each step.
	Time        time.Time
	Scope       ledger.Scope
	OperationID string
	AttemptID   string
	Generation  int64

	// Operation is set for EventOperation.
	Operation *ledger.Operation

	// BootstrapID, LaunchDigest and Budget (the host's
	// total_dispatch_budget) are set for EventLaunch.
	BootstrapID  string
	LaunchDigest canon.Digest
	Budget       int64

	// Method, Sequence, State and Reason describe an EventRequest: the
	// request and the reply state it was answered; Reason says why for a
	// state other than allowed.
	Method   ipc.Method
	Sequence int64
	State    ipc.ReplyState
	Reason   string
	// Refusal is the ledger's error behind a state other than allowed,
	// when the ledger refused (test it with errors.Is against the ledger's
	// sentinels); nil otherwise.
	Refusal error
	// PID and SessionID are the redeemer of the bootstrap id.
	PID       int
	SessionID string
	// Effect is the effect as recorded after the decision; Redelivery says
	// it was already recorded, Dispatched that the Dispatcher was called.
	Effect     *ledger.Effect
	Redelivery bool
	Dispatched bool
	// Result is the accepted result of a publish.
	Result *ledger.Result

	// Outcome is set for EventOutcome.
	Outcome *Outcome
}

// eventOf is the EventRequest of a Handler's decision.
func eventOf(a answer.Answer) Event {
	return Event{Kind: EventRequest, Time: a.Time, Scope: a.Scope, OperationID: a.OperationID, AttemptID: a.AttemptID,
		Generation: a.Generation, Method: a.Method, Sequence: a.Sequence, State: a.State, Reason: a.Reason,
		Refusal: a.Refusal, PID: a.PID, SessionID: a.SessionID, Effect: a.Effect, Redelivery: a.Redelivery,
		Dispatched: a.Dispatched, Result: a.Result}
}

// eventsOf is eventOf of each decision, in order.
func eventsOf(as []answer.Answer) []Event {
	if as == nil {
		return nil
	}
	evs := make([]Event, len(as))
	for i, a := range as {
		evs[i] = eventOf(a)
	}
	return evs
}
