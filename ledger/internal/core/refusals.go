package core

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// This file holds what every backend says alike, whether it runs the
// functions of this package over a Tx or decides a call in its own store
// (ledger/postgres decides each call in one SQL function): the argument
// checks (step 2 of the ledger's error order) and the refusals, so that
// the text of an error does not depend on the backend.

// ValidateCreateOperation checks CreateOperation's arguments.
func ValidateCreateOperation(spec ledger.OperationSpec) error {
	return invalid("CreateOperation", spec.Validate())
}

// ValidateStartAttempt checks StartAttempt's arguments.
func ValidateStartAttempt(s ledger.Scope, opID, attemptID string) error {
	return invalid("StartAttempt", s.Validate(), check.ID("operation_id", opID), check.ID("attempt_id", attemptID))
}

// ValidateLaunchAttempt checks LaunchAttempt's arguments.
func ValidateLaunchAttempt(a ledger.AttemptLaunch) error {
	return invalid("LaunchAttempt", a.Validate())
}

// ValidateRedeemBootstrap checks RedeemBootstrap's arguments.
func ValidateRedeemBootstrap(f ledger.Fence, r ledger.Redemption) error {
	return invalid("RedeemBootstrap", r.Validate(), f.Validate())
}

// ValidateAdmit checks Admit's arguments.
func ValidateAdmit(f ledger.Fence, d canon.Digest) error {
	return invalid("Admit", check.Digest("request_digest", d), f.Validate())
}

// ValidateBeginEffect checks BeginEffect's arguments.
func ValidateBeginEffect(f ledger.Fence, id string, d canon.Digest) error {
	return invalid("BeginEffect", effectArgs(id, d), f.Validate())
}

// ValidateConfirmEffect checks ConfirmEffect's arguments.
func ValidateConfirmEffect(f ledger.Fence, id string, d canon.Digest, receipt string) error {
	return invalid("ConfirmEffect", check.ID("receipt_id", receipt), effectArgs(id, d), f.Validate())
}

// ValidateMarkNotConsumed checks MarkNotConsumed's arguments.
func ValidateMarkNotConsumed(f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) error {
	return invalid("MarkNotConsumed", reason.Validate(), effectArgs(id, d), f.Validate())
}

// ValidateMarkUnknown checks MarkUnknown's arguments.
func ValidateMarkUnknown(f ledger.Fence, id string, d canon.Digest) error {
	return invalid("MarkUnknown", effectArgs(id, d), f.Validate())
}

// ValidateResolve checks Resolve's arguments.
func ValidateResolve(s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) error {
	return invalid("Resolve", s.Validate(), check.ID("operation_id", opID), effectArgs(id, d), res.Validate())
}

// ValidateAcceptResult checks AcceptResult's arguments.
func ValidateAcceptResult(f ledger.Fence, dd canon.Digest, artifact []byte) error {
	if err := invalid("AcceptResult", check.Digest("data_digest", dd)); err != nil {
		return err
	}
	if len(artifact) > ledger.MaxArtifactBytes {
		return fmt.Errorf("ledger: AcceptResult: artifact of %d bytes exceeds %d: %w", len(artifact), ledger.MaxArtifactBytes, ledger.ErrInvalid)
	}
	return invalid("AcceptResult", f.Validate())
}

// MaxReasonBytes bounds a cancellation reason.
const MaxReasonBytes = 1024

// ValidateCancel checks Cancel's arguments.
func ValidateCancel(s ledger.Scope, opID, reason string) error {
	if err := invalid("Cancel", s.Validate(), check.ID("operation_id", opID)); err != nil {
		return err
	}
	if len(reason) > MaxReasonBytes || !utf8.ValidString(reason) {
		return fmt.Errorf("ledger: Cancel: reason must be valid UTF-8 of at most %d bytes: %w", MaxReasonBytes, ledger.ErrInvalid)
	}
	return nil
}

// ValidateView checks the arguments of Operation.
func ValidateView(s ledger.Scope, opID string) error {
	return invalid("Operation", s.Validate(), check.ID("operation_id", opID))
}

// ValidateArtifact checks the arguments of Artifact.
func ValidateArtifact(s ledger.Scope, ref string) error {
	return invalid("Artifact", s.Validate(), check.ID("artifact ref", ref))
}

// ValidateRecordAttempt checks RecordAttempt's arguments, and that the
// evidence names no other attempt than the fence.
func ValidateRecordAttempt(f ledger.Fence, ev ledger.AttemptEvidence) error {
	if err := invalid("RecordAttempt", f.Validate(), ev.Validate()); err != nil {
		return err
	}
	if (ev.AttemptID != "" && ev.AttemptID != f.AttemptID) || (ev.Generation != 0 && ev.Generation != f.Generation) {
		return fmt.Errorf("ledger: RecordAttempt: evidence names attempt (%q, %d), the fence (%q, %d): %w",
			ev.AttemptID, ev.Generation, f.AttemptID, f.Generation, ledger.ErrInvalid)
	}
	return nil
}

// ValidateEvidence checks the arguments of Evidence.
func ValidateEvidence(s ledger.Scope, opID string) error {
	return invalid("Evidence", s.Validate(), check.ID("operation_id", opID))
}

// ValidateListOperations checks the query of ListOperations.
func ValidateListOperations(q ledger.OperationQuery) error {
	return invalid("ListOperations", q.Validate())
}

func effectArgs(id string, d canon.Digest) error {
	return firstErr(check.ID("logical_effect_id", id), check.Digest("effect_request_digest", d))
}

// invalid prefixes the first non-nil error (which wraps ledger.ErrInvalid)
// with the method's name.
func invalid(op string, errs ...error) error {
	if err := firstErr(errs...); err != nil {
		return fmt.Errorf("ledger: %s: %w", op, err)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// NormDeadline is the form a deadline is stored in: UTC, no monotonic
// clock reading; the zero time stays zero (no deadline).
func NormDeadline(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.Round(0).UTC()
}

// Refusals. op is the refused method's name.

// OperationNotFound: no operation opID in scope s.
func OperationNotFound(op string, s ledger.Scope, opID string) error {
	return fmt.Errorf("ledger: %s: operation %q in organization %q project %q: %w", op, opID, s.OrganizationID, s.ProjectID, ledger.ErrNotFound)
}

// SpecChanged: CreateOperation for an existing operation with another spec.
func SpecChanged(opID string) error {
	return fmt.Errorf("ledger: CreateOperation: operation %q exists with another capability, digest, budget or deadline: %w", opID, ledger.ErrChangedInput)
}

// StaleFence: presented is not the operation's current fence (current
// attempt curAttempt, generation curGen).
func StaleFence(op string, presented ledger.Fence, curAttempt string, curGen int64) error {
	return &ledger.FenceError{Op: op, OperationID: presented.OperationID, Presented: presented,
		CurrentAttemptID: curAttempt, CurrentGeneration: curGen}
}

// NotOpen refuses a call that would advance an operation in state st
// (cancelled with reason, or completed); nil when st is open.
func NotOpen(op, opID string, st ledger.OperationState, reason string) error {
	switch st {
	case ledger.OperationCancelled:
		return fmt.Errorf("ledger: %s: operation %q: %w (reason %q)", op, opID, ledger.ErrOperationCancelled, reason)
	case ledger.OperationCompleted:
		return fmt.Errorf("ledger: %s: operation %q: %w; read it with Operation", op, opID, ledger.ErrResultAlreadyAccepted)
	}
	return nil
}

// CancelCompleted: Cancel of an operation whose result was accepted.
func CancelCompleted(opID string) error {
	return fmt.Errorf("ledger: Cancel: operation %q: %w", opID, ledger.ErrResultAlreadyAccepted)
}

// DeadlinePassed: the operation's deadline dl has passed.
func DeadlinePassed(op, opID string, dl time.Time) error {
	return fmt.Errorf("ledger: %s: operation %q: deadline %s passed: %w", op, opID, dl.Format(time.RFC3339Nano), ledger.ErrDeadlineExceeded)
}

// NotRedeemed: Admit before the fenced attempt redeemed a bootstrap id.
func NotRedeemed(op string, f ledger.Fence) error {
	return fmt.Errorf("ledger: %s: operation %q: attempt %q has redeemed no bootstrap id; redeem one first: %w", op, f.OperationID, f.AttemptID, ledger.ErrOutOfOrder)
}

// NotAdmitted: an effect or a result before the fenced attempt was admitted.
func NotAdmitted(op string, f ledger.Fence) error {
	return fmt.Errorf("ledger: %s: operation %q: attempt %q was not admitted; call Admit first: %w", op, f.OperationID, f.AttemptID, ledger.ErrOutOfOrder)
}

// RequestChanged: Admit with a request digest other than the operation's.
func RequestChanged(op, opID string, got, want canon.Digest) error {
	return fmt.Errorf("ledger: %s: operation %q: request digest %s differs from the operation's %s: %w", op, opID, got, want, ledger.ErrChangedInput)
}

// AttemptOtherController: LaunchAttempt names an attempt that was started
// for controller have, not want.
func AttemptOtherController(op string, f ledger.Fence, have, want string) error {
	return fmt.Errorf("ledger: %s: operation %q: attempt %q was started for controller %q, not %q: %w", op, f.OperationID, f.AttemptID, have, want, ledger.ErrChangedInput)
}

// BootstrapOtherOperation: the bootstrap id was issued under another
// operation, which is not named (it may be in another scope).
func BootstrapOtherOperation(op, id string) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q was issued to another operation: %w", op, id, ledger.ErrChangedInput)
}

// BootstrapOtherAttempt: b was issued to another attempt than f's.
func BootstrapOtherAttempt(op string, b ledger.Bootstrap, f ledger.Fence) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q was issued to attempt %q (generation %d), not %q: %w", op, b.BootstrapID, b.AttemptID, b.Generation, f.AttemptID, ledger.ErrChangedInput)
}

// BootstrapOtherLaunch: b was issued with another launch digest.
func BootstrapOtherLaunch(op string, b ledger.Bootstrap, launch canon.Digest) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q was issued with launch digest %s, not %s: %w", op, b.BootstrapID, b.LaunchDigest, launch, ledger.ErrChangedInput)
}

// BootstrapNotFound: no bootstrap id id in operation opID.
func BootstrapNotFound(op, id, opID string) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q of operation %q: %w", op, id, opID, ledger.ErrNotFound)
}

// BootstrapStale: b was issued to an older attempt than the current one;
// the child that presents it belongs to a fenced attempt.
func BootstrapStale(op string, b ledger.Bootstrap, f ledger.Fence, curAttempt string, curGen int64) error {
	return StaleFence(op, ledger.Fence{Scope: f.Scope, OperationID: f.OperationID, AttemptID: b.AttemptID, Generation: b.Generation}, curAttempt, curGen)
}

// BootstrapRedeemed: b was redeemed by another claimant than r.
func BootstrapRedeemed(op string, b ledger.Bootstrap, r ledger.Redemption) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q was redeemed by pid %d (session %q); refusing pid %d: %w",
		op, b.BootstrapID, b.RedeemedPID, b.RedeemedSessionID, r.PID, ledger.ErrBootstrapRedeemed)
}

// RedemptionLaunchChanged: r presents another launch digest than b's.
func RedemptionLaunchChanged(op string, b ledger.Bootstrap, r ledger.Redemption) error {
	return fmt.Errorf("ledger: %s: bootstrap id %q: launch digest %s differs from the issued %s: %w", op, b.BootstrapID, r.LaunchDigest, b.LaunchDigest, ledger.ErrChangedInput)
}

// BudgetExhausted: a new effect id would be effect used+1 of budget.
func BudgetExhausted(op, opID, id string, used, budget int64) error {
	return fmt.Errorf("ledger: %s: operation %q: logical effect %q would be effect %d of a budget of %d: %w",
		op, opID, id, used+1, budget, ledger.ErrBudgetExhausted)
}

// EffectNotFound: no logical effect id in operation opID.
func EffectNotFound(op, opID, id string) error {
	return fmt.Errorf("ledger: %s: logical effect %q of operation %q: %w", op, id, opID, ledger.ErrNotFound)
}

// EffectChanged: e was recorded with another request digest than d.
func EffectChanged(op string, e ledger.Effect, d canon.Digest) error {
	return fmt.Errorf("ledger: %s: logical effect %q of operation %q was recorded with request digest %s, not %s: %w",
		op, e.LogicalEffectID, e.OperationID, e.RequestDigest, d, ledger.ErrChangedInput)
}

// Transition: e cannot move to state to.
func Transition(op string, e ledger.Effect, to ledger.EffectState) error {
	return fmt.Errorf("ledger: %s: logical effect %q of operation %q is %s (receipt %q, reason %q), cannot become %s: %w",
		op, e.LogicalEffectID, e.OperationID, e.State, e.ReceiptID, e.Reason, to, ledger.ErrInvalidTransition)
}

// ResultAccepted: the operation accepted data digest have; got is refused.
func ResultAccepted(op, opID string, have, got canon.Digest) error {
	return fmt.Errorf("ledger: %s: operation %q accepted data digest %s, refusing %s: %w", op, opID, have, got, ledger.ErrResultAlreadyAccepted)
}

// ResultBytesChanged: the accepted data digest dd again, with other bytes.
func ResultBytesChanged(op, opID string, dd canon.Digest) error {
	return fmt.Errorf("ledger: %s: operation %q: same data digest %s but other artifact bytes: %w", op, opID, dd, ledger.ErrChangedInput)
}

// NoSuchAttempt: the operation has no attempt f.AttemptID of generation
// f.Generation.
func NoSuchAttempt(op string, f ledger.Fence) error {
	return fmt.Errorf("ledger: %s: operation %q has no attempt %q of generation %d: %w", op, f.OperationID, f.AttemptID, f.Generation, ledger.ErrNotFound)
}

// OtherEvidence: the attempt f names already recorded other evidence.
func OtherEvidence(op string, f ledger.Fence) error {
	return fmt.Errorf("ledger: %s: attempt %q of operation %q already has other evidence: %w", op, f.AttemptID, f.OperationID, ledger.ErrChangedInput)
}

// ArtifactNotFound: no artifact ref.
func ArtifactNotFound(ref string) error {
	return fmt.Errorf("ledger: Artifact: artifact %q: %w", ref, ledger.ErrNotFound)
}

// ArtifactOutOfScope: artifact ref is stored under another scope than s.
func ArtifactOutOfScope(ref string, s ledger.Scope) error {
	return fmt.Errorf("ledger: Artifact: artifact %q is not in organization %q project %q: %w", ref, s.OrganizationID, s.ProjectID, ledger.ErrOutOfScope)
}
