package zeohost

import (
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Keys of Response.Result. Every Response has ResultState and
// ResultOperationID; the others are present when they apply. Numbers are
// float64, as under every backend (doc/capabilityruntime.md, “Values”).
const (
	// ResultState is the outcome's state: "succeeded" or one of the codes.
	ResultState = "state"
	// ResultOperationID is the operation's id: Execute again with it (as
	// ParamOperationID) to continue the operation.
	ResultOperationID = "operation_id"
	// ResultAttemptID and ResultGeneration name the attempt this call ran;
	// absent when nothing was launched.
	ResultAttemptID  = "attempt_id"
	ResultGeneration = "generation"
	// ResultLaunched, ResultReconnected and ResultShared are
	// supervise.Outcome's Launched, Reconnected (the accepted result came
	// from the ledger, nothing was launched) and Shared.
	ResultLaunched    = "launched"
	ResultReconnected = "reconnected"
	ResultShared      = "shared"
	// ResultData is the accepted result's data, read from its artifact;
	// only when succeeded.
	ResultData = "data"
	// ResultArtifact is the accepted result's record when succeeded:
	// {"artifact_refs": [...], "data_digest": "sha256:…"}. The artifact
	// is retrievable only under the instance's scope
	// (Backend.Supervisor().Artifact).
	ResultArtifact = "artifact"
	// ResultEffects lists the operation's effects as the ledger holds
	// them: {"logical_effect_id", "state", "authorization_id",
	// "receipt_id", "reason"} each, ordered by id.
	ResultEffects = "effects"
	// ResultBudget and ResultBudgetUsed are the operation's total effect
	// budget and the distinct effects authorized so far.
	ResultBudget     = "budget"
	ResultBudgetUsed = "budget_used"
	// ResultReason says why a non-success happened, in words an operator
	// can act on; ResultErrorCode is the host's error_code, when it wrote
	// one.
	ResultReason    = "reason"
	ResultErrorCode = "error_code"
)

// The codes of Response.Error: every outcome state but succeeded, spelled
// as the state (launch.State), each with what the caller does next. The
// returned *CallError wraps the matching supervise sentinel.
const (
	// CodeRefused: the Authority, the Runtime or the host refused the
	// attempt (a refused admission, a capability not in the inventory, an
	// effect refused); nothing ran past that point. supervise.ErrRefused.
	CodeRefused = string(launch.StateRefused)
	// CodeNeedsReconciliation: an effect's dispatch is uncertain and is
	// recorded unknown. Settle it (Backend.Supervisor().Resolve), then
	// Execute again with the same operation id.
	// supervise.ErrNeedsReconciliation.
	CodeNeedsReconciliation = string(launch.StateNeedsReconciliation)
	// CodeCancelled: the operation was cancelled (Supervisor.Cancel), or
	// the capability reported itself cancelled. supervise.ErrCancelled.
	CodeCancelled = string(launch.StateCancelled)
	// CodeRunning: an attempt of the operation is running (a concurrent
	// Execute, or another controller under a live lease) and this call did
	// not wait for it; ask again with the same operation id.
	// supervise.ErrRunning.
	CodeRunning = string(launch.StateRunning)
	// CodeWaitingApproval: the Authority held the admission or an effect;
	// once approved, Execute again with the same operation id.
	CodeWaitingApproval = string(launch.StateWaitingApproval)
	// CodeFailed: the capability ran and failed. supervise.ErrFailed.
	CodeFailed = string(launch.StateFailed)
	// CodeInvalidRequest: the arguments do not satisfy the capability's
	// request schema. supervise.ErrInvalidRequest.
	CodeInvalidRequest = string(launch.StateInvalidRequest)
	// CodeUnavailable: the capability cannot run in this environment.
	// supervise.ErrUnavailable.
	CodeUnavailable = string(launch.StateUnavailable)
	// CodeTimedOut: the operation's deadline passed. supervise.ErrTimedOut.
	CodeTimedOut = string(launch.StateTimedOut)
	// CodeProtocolError: what the host left behind proves nothing (a
	// crash, a broken session, or a host stopped because the call's
	// context ended, as when an instance's Close cuts it); Execute again
	// with the same operation id, and the ledger answers every effect
	// already recorded. supervise.ErrProtocol.
	CodeProtocolError = string(launch.StateProtocolError)
)

// resultOf is Response.Result for o, without the data.
func resultOf(o *supervise.Outcome) map[string]any {
	r := map[string]any{
		ResultState: string(o.State), ResultOperationID: o.OperationID,
		ResultLaunched: o.Launched, ResultReconnected: o.Reconnected, ResultShared: o.Shared,
		ResultBudget: float64(o.Budget), ResultBudgetUsed: float64(o.BudgetUsed),
	}
	if o.AttemptID != "" {
		r[ResultAttemptID], r[ResultGeneration] = o.AttemptID, float64(o.Generation)
	}
	if o.Result != nil {
		refs := make([]any, len(o.Result.ArtifactRefs))
		for i, ref := range o.Result.ArtifactRefs {
			refs[i] = ref
		}
		r[ResultArtifact] = map[string]any{"artifact_refs": refs, "data_digest": string(o.Result.DataDigest)}
	}
	effects := make([]any, len(o.Effects))
	for i, e := range o.Effects {
		m := map[string]any{"logical_effect_id": e.LogicalEffectID, "state": string(e.State), "authorization_id": e.AuthorizationID}
		if e.ReceiptID != "" {
			m["receipt_id"] = e.ReceiptID
		}
		if e.Reason != "" {
			m["reason"] = string(e.Reason)
		}
		effects[i] = m
	}
	r[ResultEffects] = effects
	if o.Reason != "" {
		r[ResultReason] = o.Reason
	}
	if o.ErrorCode != "" {
		r[ResultErrorCode] = o.ErrorCode
	}
	return r
}
