package supervise

import (
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// The states a caller reads are launch.State values, one vocabulary for
// every Outcome whatever decided it: the host's result, a reply of the
// Handler, the ledger's record of the operation, a check before launch.
// states is the one table that maps the other packages' states onto it,
// and each state onto the sentinel its *OutcomeError wraps.
var states = []struct {
	state launch.State
	err   error // the *OutcomeError's sentinel; nil for succeeded
	// reply is the ipc reply state that ends an attempt in state, when
	// the host stops at such a reply; empty when none does.
	reply ipc.ReplyState
	// operation is the ledger state of an operation that is answered in
	// state without launching; empty when none is.
	operation ledger.OperationState
}{
	{launch.StateSucceeded, nil, "", ledger.OperationCompleted},
	{launch.StateFailed, ErrFailed, "", ""},
	{launch.StateRefused, ErrRefused, ipc.StateRefused, ""},
	{launch.StateInvalidRequest, ErrInvalidRequest, "", ""},
	{launch.StateUnavailable, ErrUnavailable, "", ""},
	{launch.StateCancelled, ErrCancelled, ipc.StateCancelled, ledger.OperationCancelled},
	{launch.StateTimedOut, ErrTimedOut, "", ""},
	{launch.StateWaitingApproval, ErrWaitingApproval, ipc.StateWaitingApproval, ""},
	{launch.StateNeedsReconciliation, ErrNeedsReconciliation, ipc.StateNeedsReconciliation, ""},
	{launch.StateRunning, ErrRunning, "", ""},
	{launch.StateProtocolError, ErrProtocol, "", ""},
	// A host never ends queued; a claim of it is a protocol error.
	{launch.StateQueued, ErrProtocol, "", ""},
}

// sentinelOf returns the sentinel of a state other than succeeded;
// ErrProtocol for one outside the table.
func sentinelOf(st launch.State) error {
	for _, s := range states {
		if s.state == st && s.err != nil {
			return s.err
		}
	}
	return ErrProtocol
}

// stateOfReply returns the state an attempt ends in when the host stops
// at a reply of state st that is not allowed: refused for any reply state
// the table does not name.
func stateOfReply(st ipc.ReplyState) launch.State {
	for _, s := range states {
		if s.reply != "" && s.reply == st {
			return s.state
		}
	}
	return launch.StateRefused
}

// stateOfOperation returns the state an operation that is over is
// answered in without launching: succeeded for a completed one, cancelled
// for a cancelled one.
func stateOfOperation(st ledger.OperationState) launch.State {
	for _, s := range states {
		if s.operation != "" && s.operation == st {
			return s.state
		}
	}
	return launch.StateProtocolError
}
