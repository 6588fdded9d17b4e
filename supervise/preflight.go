package supervise

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// preflight runs the checks that need no launch and no ledger: what the
// host would refuse for certain is refused here, before a host is started
// or a bootstrap id is spent, every time the call is repeated. A non-nil
// done is the cause of the refusal, with o's State and Reason set.
func (s *Supervisor) preflight(p *provider, c Call, o *Outcome) (manifest.CapabilityManifest, manifest.Prepared, error) {
	m, ok := p.manifests[c.CapabilityID]
	if !ok {
		o.State, o.Reason = launch.StateRefused, fmt.Sprintf("capability %q is not in the provider's inventory", c.CapabilityID)
		return m, manifest.Prepared{}, &PreflightError{Check: "capability", Detail: o.Reason}
	}
	if err := handler.CheckRequirements(m, s.cfg.Grants); err != nil {
		o.State, o.Reason = launch.StateUnavailable, "the capability's requirements cannot be met here"
		return m, manifest.Prepared{}, requirementsRefused(err)
	}
	if err := port.CheckDocument("arguments", c.Arguments); err != nil {
		o.State, o.Reason = launch.StateInvalidRequest, "the arguments cannot be sent to the host"
		return m, manifest.Prepared{}, &PreflightError{Check: "document", Detail: "arguments", Err: err}
	}
	prep, err := s.validator.PrepareRequest(m, c.Arguments)
	if err != nil {
		o.State, o.Reason = launch.StateInvalidRequest, "the arguments do not satisfy the capability's request schema"
		return m, prep, &PreflightError{Check: "arguments", Detail: o.Reason, Err: err}
	}
	// The host refuses arguments whose top-level organization_id, after
	// its own validation (defaults included), is not the attempt's
	// organization (ZEO_HOST_ORGANIZATION).
	if org, ok := prep.Arguments["organization_id"]; ok && org != c.Scope.OrganizationID {
		o.State = launch.StateRefused
		o.Reason = fmt.Sprintf("the arguments' organization_id is %s (after the request schema's defaults) but the operation runs in organization %q: the host refuses that; pass organization_id %q or run in that organization",
			describe(org), c.Scope.OrganizationID, c.Scope.OrganizationID)
		return m, prep, &PreflightError{Check: "organization", Detail: o.Reason}
	}
	if err := s.admitFits(p, c, prep); err != nil {
		o.State, o.Reason = launch.StateInvalidRequest, "the arguments do not fit in the host's invoke.admit frame"
		var pe *PreflightError
		if errors.As(err, &pe) {
			o.Reason = pe.Detail
		}
		return m, prep, err
	}
	return m, prep, nil
}

// budgetCheck refuses a new operation of a capability that uses the
// effect port with a budget of zero: every effect it asks for would be
// refused, so the call could only fail. It is checked once the operation
// is known to be new (an existing one keeps its recorded budget).
func budgetCheck(m manifest.CapabilityManifest, budget int64, o *Outcome) error {
	if budget != 0 || !effectful(m) {
		return nil
	}
	o.State = launch.StateRefused
	o.Reason = fmt.Sprintf("capability %s uses the effect port (it requires %s) but the operation's effect budget is 0: every effect would be refused; give the Call an EffectBudget of at least the effects it dispatches",
		m.ID, port.EffectsService)
	return &PreflightError{Check: "budget", Detail: o.Reason}
}

// effectful reports whether m's capability dispatches effects through the
// Runtime: it requires the effect port.
func effectful(m manifest.CapabilityManifest) bool {
	return slices.Contains(m.Requirements.Services, port.EffectsService)
}

// admitFrameSlack is what an invoke.admit frame holds besides the
// binding and the arguments: the method, the nonce, the version and
// sequence fields and their punctuation, rounded up.
const admitFrameSlack = 256

// admitFits refuses arguments whose invoke.admit request would exceed the
// message bound: the host would fail to send it, after launch, on every
// attempt. The size is the canonical size of the request the host sends
// with the prepared arguments (the host sends its own normalized form,
// which the prepared form stands for).
func (s *Supervisor) admitFits(p *provider, c Call, prep manifest.Prepared) error {
	limit := s.cfg.MaxMessageBytes
	if limit == 0 {
		limit = ipc.MaxMessageBytes
	}
	args, err := canon.Marshal(prep.Arguments)
	if err != nil {
		return &PreflightError{Check: "document", Detail: "arguments", Err: err}
	}
	if len(args) < limit-64<<10 {
		return nil // far below the bound: the binding is a few hundred bytes
	}
	b := ipc.AttemptBinding{
		OrganizationID: c.Scope.OrganizationID, ProjectID: c.Scope.ProjectID,
		SeatID: or(c.SeatID, s.cfg.SeatID), RuntimeBindingID: or(c.RuntimeBindingID, s.cfg.RuntimeBindingID),
		PacketID: or(c.PacketID, c.OperationID), OperationID: c.OperationID, AttemptID: strings.Repeat("a", 40),
		FencingGeneration: 1 << 40, CapabilityID: c.CapabilityID, RequestDigest: prep.RequestDigest, ManifestDigest: p.binding.ManifestDigest,
	}
	bb, err := canon.Marshal(b)
	if err != nil {
		return fmt.Errorf("supervise: sizing the invoke.admit frame: %w", err)
	}
	size := len(args) + len(bb) + 2*64 + admitFrameSlack
	if size <= limit {
		return nil
	}
	return &PreflightError{Check: "message_size", Detail: fmt.Sprintf(
		"the host's invoke.admit request would be about %d bytes with these arguments (%d bytes canonical), above the %d-byte message bound: it can never be sent, so nothing is launched; send smaller arguments (pass large data by reference)",
		size, len(args), limit)}
}

// describe renders a JSON value for a reason: strings quoted, others as
// their canonical JSON.
func describe(v any) string {
	if b, err := canon.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprintf("%v", v)
}

// requirementsRefused is the *PreflightError (check "requirements") of
// handler.CheckRequirements' error.
func requirementsRefused(err error) error {
	var re *handler.RequirementsError
	if !errors.As(err, &re) {
		return err
	}
	return &PreflightError{Check: "requirements", Detail: re.Detail()}
}
