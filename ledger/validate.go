package ledger

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// Validate reports whether both identifiers of s are valid.
func (s Scope) Validate() error {
	if err := check.ID("organization_id", s.OrganizationID); err != nil {
		return err
	}
	return check.ID("project_id", s.ProjectID)
}

// Validate reports whether every field of s is well formed.
func (s OperationSpec) Validate() error {
	if err := s.Scope.Validate(); err != nil {
		return err
	}
	if err := check.ID("operation_id", s.OperationID); err != nil {
		return err
	}
	if err := check.ID("capability_id", s.CapabilityID); err != nil {
		return err
	}
	if err := check.Digest("request_digest", s.RequestDigest); err != nil {
		return err
	}
	if err := check.Digest("manifest_digest", s.ManifestDigest); err != nil {
		return err
	}
	if s.EffectBudget < 0 {
		return fmt.Errorf("%w: effect budget %d is negative", ErrInvalid, s.EffectBudget)
	}
	return nil
}

// Validate reports whether every field of a is well formed.
func (a AttemptLaunch) Validate() error {
	if err := a.Operation.Validate(); err != nil {
		return err
	}
	if err := check.ID("attempt_id", a.AttemptID); err != nil {
		return err
	}
	if a.Generation < 1 {
		return fmt.Errorf("%w: fencing generation is %d, want >= 1 (the operation's current generation plus one)", ErrInvalid, a.Generation)
	}
	if err := check.ID("bootstrap_id", a.BootstrapID); err != nil {
		return err
	}
	if err := check.Digest("launch_digest", a.LaunchDigest); err != nil {
		return err
	}
	if a.ControllerID != "" {
		return check.ID("controller_id", a.ControllerID)
	}
	return nil
}

// Validate reports whether every field of t is well formed: the fence it
// takes over from, a new attempt id other than From's, and the taking
// controller's id.
func (t Takeover) Validate() error {
	if err := t.From.Validate(); err != nil {
		return err
	}
	if err := check.ID("attempt_id", t.AttemptID); err != nil {
		return err
	}
	if t.AttemptID == t.From.AttemptID {
		return fmt.Errorf("%w: takeover attempt id %q is the attempt it takes over; name a new attempt", ErrInvalid, truncate(t.AttemptID))
	}
	return check.ID("controller_id", t.ControllerID)
}

// Validate reports whether f is well formed (it does not say whether f is
// current; only the ledger knows that).
func (f Fence) Validate() error {
	if err := f.Scope.Validate(); err != nil {
		return err
	}
	if err := check.ID("operation_id", f.OperationID); err != nil {
		return err
	}
	if err := check.ID("attempt_id", f.AttemptID); err != nil {
		return err
	}
	if f.Generation < 1 {
		return fmt.Errorf("%w: fencing generation is %d, want >= 1 (use the fence StartAttempt returned)", ErrInvalid, f.Generation)
	}
	return nil
}

// Validate reports whether r is well formed.
func (r Redemption) Validate() error {
	if err := check.ID("bootstrap_id", r.BootstrapID); err != nil {
		return err
	}
	if err := check.Digest("launch_digest", r.LaunchDigest); err != nil {
		return err
	}
	if r.PID <= 0 {
		return fmt.Errorf("%w: pid %d, want > 0", ErrInvalid, r.PID)
	}
	return check.ID("session_id", r.SessionID)
}

// Validate reports whether r is a valid reason.
func (r NotConsumedReason) Validate() error {
	switch r {
	case ReasonRefused, ReasonCancelled, ReasonWaitingApproval:
		return nil
	}
	return fmt.Errorf("%w: not-consumed reason %q, want %q, %q or %q", ErrInvalid, truncate(string(r)), ReasonRefused, ReasonCancelled, ReasonWaitingApproval)
}

// Validate reports whether r is a valid resolution.
func (r Resolution) Validate() error {
	switch r.State {
	case EffectConfirmed:
		if r.Reason != "" {
			return fmt.Errorf("%w: a confirmed resolution has no reason", ErrInvalid)
		}
		return check.ID("receipt_id", r.ReceiptID)
	case EffectNotConsumed:
		if r.ReceiptID != "" {
			return fmt.Errorf("%w: a not-consumed resolution has no receipt", ErrInvalid)
		}
		return r.Reason.Validate()
	}
	return fmt.Errorf("%w: resolution state %q, want %q or %q", ErrInvalid, truncate(string(r.State)), EffectConfirmed, EffectNotConsumed)
}

// truncate keeps hostile input from making error text arbitrarily large.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
