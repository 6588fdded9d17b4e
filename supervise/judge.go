package supervise

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/internal/answer"
)

// hints says what a host error code usually means and what to do.
var hints = map[string]string{
	"ZEO_HOST_PROTOCOL": "the host refused after bootstrap or broke the protocol: most often its interpreter or installed distribution is not the binding's " +
		"(python_version, distribution, version), the factory failed to import, or the factory's inventory is not the binding's; " +
		"check the provider environment with describe/doctor",
	"ZEO_HOST_SCOPE":           "the host found the capability outside the launch context's admitted capabilities, or the attempt's manifest digest is not the provider's",
	"ZEO_HOST_DEADLINE":        "the attempt started at or after its deadline",
	"ZEO_HOST_REQUEST_BINDING": "the host normalized the arguments to another request digest (provider validators or defaults the request schema does not declare): pass already-normalized arguments",
	"ZEO_HOST_ORGANIZATION":    "the arguments' top-level organization_id is not the operation's organization",
	"ZEO_HOST_REQUIREMENTS":    "the launch context does not satisfy the capability's requirements",
	"ZEO_HOST_INVALID_REQUEST": "the host refused the arguments against the capability's model",
}

// leftBehind is what an ended attempt leaves for judge: the launcher's
// report of the host, the operation as the ledger holds it afterwards,
// and what the Runtime itself saw (a cancel, its session's decisions).
type leftBehind struct {
	lo   *launch.Outcome // the launcher's report; the host's claim is in it
	lerr error           // the launch's error (a *launch.ResultError when the claim proves nothing)

	after ledger.OperationView // the operation read after the host ended
	verr  error                // that read's error: nothing can be claimed without it

	cancelled bool            // the attempt was cancelled in process (Cancel)
	h         *answer.Handler // the attempt's Handler: its decisions
}

// judge decides o's state from what the attempt left behind: the ledger
// first (an accepted result is the truth whatever the host says), then the
// host's result when it is valid and coherent with the ledger, and
// otherwise what the launcher observed. It returns the cause to wrap.
func judge(o *Outcome, left leftBehind) error {
	lo, lerr, after, verr, cancelled, h := left.lo, left.lerr, left.after, left.verr, left.cancelled, left.h
	if verr == nil {
		o.Effects, o.Budget, o.BudgetUsed = after.Effects, after.Operation.EffectBudget, after.Operation.EffectsUsed
	}
	var claim *launch.HostResult
	if lerr == nil {
		r := lo.Result
		claim = &r
	} else {
		var re *launch.ResultError
		if errors.As(lerr, &re) && re.Result != nil {
			claim = re.Result
		}
	}
	o.Host = claim
	if claim != nil && claim.ErrorCode != nil {
		o.ErrorCode = *claim.ErrorCode
	}
	decided := lastRefusal(h.Decisions())

	if verr == nil && after.Result != nil {
		o.State, o.Result = launch.StateSucceeded, after.Result
		switch {
		case after.Result.AttemptID != o.AttemptID:
			o.Reason = fmt.Sprintf("the result was accepted by attempt %q", after.Result.AttemptID)
		case lerr != nil:
			o.Reason = "the result was accepted; the host's own report proves nothing: " + lerr.Error()
		case claim.State != launch.StateSucceeded:
			o.Reason = fmt.Sprintf("the result was accepted; the host reported %s", claim.State)
		case !slices.Equal(claim.ArtifactRefs, after.Result.ArtifactRefs):
			o.Reason = fmt.Sprintf("the result was accepted with artifact refs %q; the host claimed artifact refs %q", after.Result.ArtifactRefs, claim.ArtifactRefs)
		}
		return nil
	}
	if verr != nil {
		// Without the ledger's word nothing can be claimed.
		o.State, o.Reason = launch.StateProtocolError, "the ledger could not be read after the attempt"
		return errors.Join(verr, lerr)
	}
	if lerr != nil {
		switch {
		case lo.Process.Stopped == launch.StopDeadline:
			o.State, o.Reason = launch.StateTimedOut, "the host was stopped at the attempt deadline"
		case cancelled || after.Operation.State == ledger.OperationCancelled:
			o.State, o.Reason = launch.StateCancelled, "the operation was cancelled and the host was stopped"
		case lo.Process.Stopped == launch.StopCancelled:
			o.State, o.Reason = launch.StateProtocolError, "the call's context ended and the host was stopped; invoke the operation again to go on"
		default:
			o.State, o.Reason = launch.StateProtocolError, "what the host left behind proves no outcome; nothing is redispatched: invoke the operation again"
			if len(lo.Process.StderrTail) > 0 {
				o.Reason += fmt.Sprintf("; host stderr ends %q", answer.Truncate(string(lo.Process.StderrTail)))
			}
		}
		return lerr
	}
	if claim.State == launch.StateSucceeded {
		o.State = launch.StateProtocolError
		o.Reason = "the host claims succeeded, but the ledger holds no accepted result for the operation"
		return ErrIncoherent
	}
	if claim.State != launch.StateNeedsReconciliation && claim.State != launch.StateProtocolError {
		for _, e := range after.Effects {
			if e.AttemptID == o.AttemptID && (e.State == ledger.EffectUnknown || e.State == ledger.EffectAuthorized) {
				o.State = launch.StateProtocolError
				o.Reason = fmt.Sprintf("the host claims %s, but effect %q of this attempt is %s in the ledger: resolve it", claim.State, e.LogicalEffectID, e.State)
				return ErrIncoherent
			}
		}
	}
	o.State = claim.State
	switch {
	case decided != nil && stateOfReply(decided.State) == claim.State:
		o.Reason = fmt.Sprintf("%s answered %s: %s", decided.Method, decided.State, decided.Reason)
	case hints[o.ErrorCode] != "":
		o.Reason = hints[o.ErrorCode]
	case decided != nil:
		o.Reason = fmt.Sprintf("%s answered %s: %s", decided.Method, decided.State, decided.Reason)
	}
	if claim.State == launch.StateCancelled && cancelled && o.Reason == "" {
		o.Reason = "the operation was cancelled"
	}
	return nil
}

// lastRefusal returns the last decision that was not allowed, or nil.
func lastRefusal(evs []answer.Answer) *answer.Answer {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].State != ipc.StateAllowed {
			return &evs[i]
		}
	}
	return nil
}
