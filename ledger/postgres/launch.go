package postgres

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// LaunchAttempt implements [ledger.Ledger]. One statement: the call of
// launch_attempt (migrations/0002_launch_attempt.sql), which creates the
// operation when it is missing, starts the attempt and issues its
// bootstrap id in one transaction.
func (l *Ledger) LaunchAttempt(ctx context.Context, a ledger.AttemptLaunch) (ledger.Fence, error) {
	const op = "LaunchAttempt"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Fence{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateLaunchAttempt(a); err != nil {
		return ledger.Fence{}, err
	}
	spec := a.Operation
	sec, nsec := deadlineArgs(core.NormDeadline(spec.Deadline))
	var controller []byte // NULL: no controller
	if a.ControllerID != "" {
		controller = raw(a.ControllerID)
	}
	var (
		h            head
		b            bootstrapAnswer
		leaseExpires *time.Time
		controllerA  []byte // the controller an attempt already started has
	)
	err := l.write(ctx, op, keyOf(spec.Scope, spec.OperationID), l.sql.launchAttempt,
		[]any{raw(spec.Scope.OrganizationID), raw(spec.Scope.ProjectID), raw(spec.OperationID), raw(spec.CapabilityID),
			string(spec.RequestDigest), string(spec.ManifestDigest), spec.EffectBudget, sec, nsec,
			raw(a.AttemptID), a.Generation, raw(a.BootstrapID), string(a.LaunchDigest), controller},
		h.dest(append(b.dest(), &leaseExpires, &controllerA)...)...)
	if err != nil {
		return ledger.Fence{}, err
	}
	f := a.Fence()
	rec := b.record(a.BootstrapID)
	switch h.code {
	case "ok":
		return f, nil
	case "changed":
		return ledger.Fence{}, core.SpecChanged(spec.OperationID)
	case "other_operation":
		return ledger.Fence{}, core.BootstrapOtherOperation(op, a.BootstrapID)
	case "changed_attempt":
		return ledger.Fence{}, core.BootstrapOtherAttempt(op, rec, f)
	case "changed_launch":
		return ledger.Fence{}, core.BootstrapOtherLaunch(op, rec, a.LaunchDigest)
	case "changed_controller":
		return ledger.Fence{}, core.AttemptOtherController(op, f, string(controllerA), a.ControllerID)
	case "lease_expired":
		return ledger.Fence{}, leaseRefusal(op, a.ControllerID, leaseExpires, ledger.ErrLeaseExpired)
	}
	return ledger.Fence{}, h.refusal(op, f)
}
