package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Each write checks its arguments with core (the same checks and error
// text as every backend), then makes one call of the SQL function that
// decides it (migrations/0001_ledger.sql) and turns the function's answer
// code into the ledger's value or error, again with core's refusals.

// raw is an identifier as stored: bytea, byte for byte.
func raw(s string) []byte { return []byte(s) }

func keyOf(s ledger.Scope, opID string) opKey {
	return opKey{org: s.OrganizationID, project: s.ProjectID, op: opID}
}

// val is *p, or the zero value for NULL.
func val[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// deadlineArgs are a deadline's stored columns; NULL for no deadline.
func deadlineArgs(dl time.Time) (sec *int64, nsec *int32) {
	if dl.IsZero() {
		return nil, nil
	}
	s, n := dl.Unix(), int32(dl.Nanosecond())
	return &s, &n
}

// deadlineOf is the deadline stored in sec and nsec (the zero time when
// NULL).
func deadlineOf(sec *int64, nsec *int32) time.Time {
	if sec == nil || nsec == nil {
		return time.Time{}
	}
	return time.Unix(*sec, int64(*nsec)).UTC()
}

// head is what every fenced function answers first: its code and the
// operation's current attempt (for a FenceError) and cancel reason.
type head struct {
	code         string
	curAttempt   []byte
	curGen       *int64
	cancelReason []byte
}

func (h *head) dest(more ...any) []any {
	return append([]any{&h.code, &h.curAttempt, &h.curGen, &h.cancelReason}, more...)
}

// refusal is the error of a code every fenced function may answer, in
// the ledger's error order: operation missing, fence stale, operation
// over. Any other code is one this build does not know.
func (h *head) refusal(op string, f ledger.Fence) error {
	switch h.code {
	case "not_found":
		return core.OperationNotFound(op, f.Scope, f.OperationID)
	case "stale":
		return core.StaleFence(op, f, string(h.curAttempt), val(h.curGen))
	case "cancelled":
		return core.NotOpen(op, f.OperationID, ledger.OperationCancelled, string(h.cancelReason))
	case "completed":
		return core.NotOpen(op, f.OperationID, ledger.OperationCompleted, "")
	}
	return unknownCode(op, h.code)
}

func unknownCode(op, code string) error {
	return fmt.Errorf("ledger/postgres: %s: the database answered %q, which this build does not know: %w", op, code, ledger.ErrCorrupt)
}

func fenceArgs(f ledger.Fence) []any {
	return []any{raw(f.Scope.OrganizationID), raw(f.Scope.ProjectID), raw(f.OperationID), raw(f.AttemptID), f.Generation}
}

// CreateOperation implements [ledger.Ledger]. One statement.
func (l *Ledger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	const op = "CreateOperation"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Operation{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateCreateOperation(spec); err != nil {
		return ledger.Operation{}, err
	}
	dl := core.NormDeadline(spec.Deadline)
	sec, nsec := deadlineArgs(dl)
	var (
		code, state         *string
		reason, curID, ctrl []byte
		used, gen           *int64
	)
	err := l.write(ctx, op, keyOf(spec.Scope, spec.OperationID), l.sql.createOperation,
		[]any{raw(spec.Scope.OrganizationID), raw(spec.Scope.ProjectID), raw(spec.OperationID), raw(spec.CapabilityID),
			string(spec.RequestDigest), string(spec.ManifestDigest), spec.EffectBudget, sec, nsec},
		&code, &state, &reason, &used, &curID, &gen, &ctrl)
	if err != nil {
		return ledger.Operation{}, err
	}
	switch val(code) {
	case "ok":
		return ledger.Operation{
			Scope: spec.Scope, OperationID: spec.OperationID, CapabilityID: spec.CapabilityID,
			RequestDigest: spec.RequestDigest, ManifestDigest: spec.ManifestDigest,
			EffectBudget: spec.EffectBudget, Deadline: dl, State: ledger.OperationState(val(state)),
			CancelReason: string(reason), EffectsUsed: val(used),
			CurrentAttemptID: string(curID), CurrentGeneration: val(gen), CurrentControllerID: string(ctrl),
		}, nil
	case "changed":
		return ledger.Operation{}, core.SpecChanged(spec.OperationID)
	}
	return ledger.Operation{}, unknownCode(op, val(code))
}

// StartAttempt implements [ledger.Ledger]. One statement.
func (l *Ledger) StartAttempt(ctx context.Context, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	const op = "StartAttempt"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Fence{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateStartAttempt(s, opID, attemptID); err != nil {
		return ledger.Fence{}, err
	}
	var (
		h   head
		gen *int64
	)
	err := l.write(ctx, op, keyOf(s, opID), l.sql.startAttempt,
		[]any{raw(s.OrganizationID), raw(s.ProjectID), raw(opID), raw(attemptID)},
		&h.code, &gen, &h.curAttempt, &h.curGen, &h.cancelReason)
	if err != nil {
		return ledger.Fence{}, err
	}
	f := ledger.Fence{Scope: s, OperationID: opID, AttemptID: attemptID, Generation: val(gen)}
	if h.code == "ok" {
		return f, nil
	}
	return ledger.Fence{}, h.refusal(op, f)
}

// bootstrapAnswer is the bootstrap record redeem_bootstrap answers with.
type bootstrapAnswer struct {
	attempt []byte
	gen     *int64
	launch  *string
	pid     *int64
	session []byte
}

func (b *bootstrapAnswer) dest() []any {
	return []any{&b.attempt, &b.gen, &b.launch, &b.pid, &b.session}
}

func (b *bootstrapAnswer) record(id string) ledger.Bootstrap {
	r := ledger.Bootstrap{BootstrapID: id, AttemptID: string(b.attempt), Generation: val(b.gen),
		LaunchDigest: canon.Digest(val(b.launch))}
	if b.pid != nil {
		r.Redeemed, r.RedeemedPID, r.RedeemedSessionID = true, int(*b.pid), string(b.session)
	}
	return r
}

// RedeemBootstrap implements [ledger.Ledger]. One statement.
func (l *Ledger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	const op = "RedeemBootstrap"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Bootstrap{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateRedeemBootstrap(f, r); err != nil {
		return ledger.Bootstrap{}, err
	}
	var (
		h head
		b bootstrapAnswer
	)
	err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.redeemBootstrap,
		append(fenceArgs(f), raw(r.BootstrapID), string(r.LaunchDigest), int64(r.PID), raw(r.SessionID)),
		h.dest(b.dest()...)...)
	if err != nil {
		return ledger.Bootstrap{}, err
	}
	rec := b.record(r.BootstrapID)
	switch h.code {
	case "ok":
		return rec, nil
	case "boot_not_found":
		return ledger.Bootstrap{}, core.BootstrapNotFound(op, r.BootstrapID, f.OperationID)
	case "stale_boot":
		return ledger.Bootstrap{}, core.BootstrapStale(op, rec, f, string(h.curAttempt), val(h.curGen))
	case "redeemed":
		return ledger.Bootstrap{}, core.BootstrapRedeemed(op, rec, r)
	case "changed_launch":
		return ledger.Bootstrap{}, core.RedemptionLaunchChanged(op, rec, r)
	}
	return ledger.Bootstrap{}, h.refusal(op, f)
}

// Admit implements [ledger.Ledger]. One statement. The deadline is judged
// by the database server's clock, the one clock every controller shares.
func (l *Ledger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	const op = "Admit"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Attempt{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateAdmit(f, d); err != nil {
		return ledger.Attempt{}, err
	}
	var (
		h       head
		request *string
		dlSec   *int64
		dlNsec  *int32
	)
	err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.admit, append(fenceArgs(f), string(d)), h.dest(&request, &dlSec, &dlNsec)...)
	if err != nil {
		return ledger.Attempt{}, err
	}
	switch h.code {
	case "ok":
		return ledger.Attempt{AttemptID: f.AttemptID, Generation: f.Generation, Admitted: true}, nil
	case "out_of_order":
		return ledger.Attempt{}, core.NotRedeemed(op, f)
	case "changed":
		return ledger.Attempt{}, core.RequestChanged(op, f.OperationID, d, canon.Digest(val(request)))
	case "deadline":
		return ledger.Attempt{}, core.DeadlinePassed(op, f.OperationID, deadlineOf(dlSec, dlNsec))
	}
	return ledger.Attempt{}, h.refusal(op, f)
}

// effectAnswer is the effect record begin_effect and settle_effect answer
// with, and the expiry of the lease that refused the call, if one did.
type effectAnswer struct {
	digest, auth, state, reason  *string
	receipt, attempt, controller []byte
	gen, ordinal                 *int64
	leaseExpires                 *time.Time
}

func (e *effectAnswer) dest() []any {
	return []any{&e.digest, &e.auth, &e.state, &e.receipt, &e.reason, &e.attempt, &e.gen, &e.ordinal, &e.controller, &e.leaseExpires}
}

func (e *effectAnswer) record(s ledger.Scope, opID, id string) ledger.Effect {
	return ledger.Effect{
		Scope: s, OperationID: opID, LogicalEffectID: id,
		RequestDigest: canon.Digest(val(e.digest)), AuthorizationID: val(e.auth),
		State: ledger.EffectState(val(e.state)), ReceiptID: string(e.receipt),
		Reason: ledger.NotConsumedReason(val(e.reason)), AttemptID: string(e.attempt),
		Generation: val(e.gen), Ordinal: val(e.ordinal), ControllerID: string(e.controller),
	}
}

// BeginEffect implements [ledger.Ledger]. One statement: the fence check,
// the redelivery lookup, the controller's lease, the budget debit and the
// effect's insert are one transaction. Like Admit, it judges the deadline
// and the lease by the server's clock.
func (l *Ledger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	const op = "BeginEffect"
	if err := l.enter(ctx, op); err != nil {
		return ledger.EffectGrant{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateBeginEffect(f, id, d); err != nil {
		return ledger.EffectGrant{}, err
	}
	var (
		h            head
		dlSec        *int64
		dlNsec       *int32
		budget, used *int64
		e            effectAnswer
		auth         = core.NewID("auth_") // used only if the effect is new
	)
	err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.beginEffect, append(fenceArgs(f), raw(id), string(d), auth),
		h.dest(append([]any{&dlSec, &dlNsec, &budget, &used}, e.dest()...)...)...)
	if err != nil {
		return ledger.EffectGrant{}, err
	}
	rec := e.record(f.Scope, f.OperationID, id)
	switch h.code {
	case "ok":
		return ledger.EffectGrant{Effect: rec}, nil
	case "redelivery":
		return ledger.EffectGrant{Effect: rec, Redelivery: true}, nil
	case "out_of_order":
		return ledger.EffectGrant{}, core.NotAdmitted(op, f)
	case "changed":
		return ledger.EffectGrant{}, core.EffectChanged(op, rec, d)
	case "deadline":
		return ledger.EffectGrant{}, core.DeadlinePassed(op, f.OperationID, deadlineOf(dlSec, dlNsec))
	case "budget":
		return ledger.EffectGrant{}, core.BudgetExhausted(op, f.OperationID, id, val(used), val(budget))
	case "lease_expired":
		return ledger.EffectGrant{}, leaseRefusal(op, string(e.controller), e.leaseExpires, ledger.ErrLeaseExpired)
	}
	return ledger.EffectGrant{}, h.refusal(op, f)
}

// ConfirmEffect implements [ledger.Ledger]. One statement.
func (l *Ledger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	const op = "ConfirmEffect"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Effect{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateConfirmEffect(f, id, d, receipt); err != nil {
		return ledger.Effect{}, err
	}
	return l.settle(ctx, op, f.Scope, f.OperationID, &f, id, d, ledger.EffectConfirmed, receipt, "")
}

// MarkNotConsumed implements [ledger.Ledger]. One statement.
func (l *Ledger) MarkNotConsumed(ctx context.Context, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	const op = "MarkNotConsumed"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Effect{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateMarkNotConsumed(f, id, d, reason); err != nil {
		return ledger.Effect{}, err
	}
	return l.settle(ctx, op, f.Scope, f.OperationID, &f, id, d, ledger.EffectNotConsumed, "", reason)
}

// MarkUnknown implements [ledger.Ledger]. One statement.
func (l *Ledger) MarkUnknown(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	const op = "MarkUnknown"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Effect{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateMarkUnknown(f, id, d); err != nil {
		return ledger.Effect{}, err
	}
	return l.settle(ctx, op, f.Scope, f.OperationID, &f, id, d, ledger.EffectUnknown, "", "")
}

// Resolve implements [ledger.Ledger]. One statement. An authorized
// effect's controller is judged in it, under lease_check's lock of the
// lease's row (migrations/0007_controller_leases.sql): a renewal under way
// is waited for, and none commits between the check and the write.
func (l *Ledger) Resolve(ctx context.Context, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	const op = "Resolve"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Effect{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateResolve(s, opID, id, d, res); err != nil {
		return ledger.Effect{}, err
	}
	return l.settle(ctx, op, s, opID, nil, id, d, res.State, res.ReceiptID, res.Reason)
}

// settle records an effect's outcome through settle_effect: fenced by f,
// or unfenced (Resolve) when f is nil.
func (l *Ledger) settle(ctx context.Context, op string, s ledger.Scope, opID string, f *ledger.Fence, id string, d canon.Digest,
	to ledger.EffectState, receipt string, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	var (
		attempt  []byte
		gen      *int64
		receiptA []byte
		reasonA  *string
	)
	if f != nil {
		attempt, gen = raw(f.AttemptID), &f.Generation
	}
	if receipt != "" {
		receiptA = raw(receipt)
	}
	if reason != "" {
		r := string(reason)
		reasonA = &r
	}
	var (
		h head
		e effectAnswer
	)
	err := l.write(ctx, op, keyOf(s, opID), l.sql.settleEffect,
		[]any{raw(s.OrganizationID), raw(s.ProjectID), raw(opID), attempt, gen, raw(id), string(d), string(to), receiptA, reasonA},
		append([]any{&h.code, &h.curAttempt, &h.curGen}, e.dest()...)...)
	if err != nil {
		return ledger.Effect{}, err
	}
	rec := e.record(s, opID, id)
	switch h.code {
	case "ok":
		return rec, nil
	case "not_found":
		return ledger.Effect{}, core.OperationNotFound(op, s, opID)
	case "effect_not_found":
		return ledger.Effect{}, core.EffectNotFound(op, opID, id)
	case "changed":
		return ledger.Effect{}, core.EffectChanged(op, rec, d)
	case "transition":
		return ledger.Effect{}, core.Transition(op, rec, to)
	case "in_flight":
		return ledger.Effect{}, leaseRefusal(op, rec.ControllerID, e.leaseExpires, ledger.ErrInFlight)
	}
	if f == nil {
		return ledger.Effect{}, unknownCode(op, h.code)
	}
	return ledger.Effect{}, h.refusal(op, *f)
}

// AcceptResult implements [ledger.Ledger]. One statement; the artifact
// travels with it even when the result was already accepted (its digest
// decides between the recorded result and ErrChangedInput).
func (l *Ledger) AcceptResult(ctx context.Context, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	const op = "AcceptResult"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Result{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateAcceptResult(f, dd, artifact); err != nil {
		return ledger.Result{}, err
	}
	if artifact == nil {
		artifact = []byte{} // NULL is not an empty artifact
	}
	var (
		h           head
		data        *string
		ref         []byte
		attempt     []byte
		gen         *int64
		sum, newRef = canon.Sum(artifact), core.NewID("artifact_")
	)
	err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.acceptResult, append(fenceArgs(f), string(dd), string(sum), artifact, raw(newRef)),
		h.dest(&data, &ref, &attempt, &gen)...)
	if err != nil {
		return ledger.Result{}, err
	}
	res := ledger.Result{DataDigest: canon.Digest(val(data)), ArtifactRefs: []string{string(ref)},
		AttemptID: string(attempt), Generation: val(gen)}
	switch h.code {
	case "ok":
		return res, nil
	case "out_of_order":
		return ledger.Result{}, core.NotAdmitted(op, f)
	case "accepted":
		return ledger.Result{}, core.ResultAccepted(op, f.OperationID, res.DataDigest, dd)
	case "changed":
		return ledger.Result{}, core.ResultBytesChanged(op, f.OperationID, dd)
	}
	return ledger.Result{}, h.refusal(op, f)
}

// Cancel implements [ledger.Ledger]. One statement.
func (l *Ledger) Cancel(ctx context.Context, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	const op = "Cancel"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Operation{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateCancel(s, opID, reason); err != nil {
		return ledger.Operation{}, err
	}
	var (
		code, req, man, state   *string
		capID, why, curID, ctrl []byte
		budget, used, gen       *int64
		dlSec                   *int64
		dlNsec                  *int32
	)
	err := l.write(ctx, op, keyOf(s, opID), l.sql.cancel, []any{raw(s.OrganizationID), raw(s.ProjectID), raw(opID), raw(reason)},
		&code, &capID, &req, &man, &budget, &dlSec, &dlNsec, &state, &why, &used, &curID, &gen, &ctrl)
	if err != nil {
		return ledger.Operation{}, err
	}
	switch val(code) {
	case "ok":
		return ledger.Operation{
			Scope: s, OperationID: opID, CapabilityID: string(capID),
			RequestDigest: canon.Digest(val(req)), ManifestDigest: canon.Digest(val(man)),
			EffectBudget: val(budget), Deadline: deadlineOf(dlSec, dlNsec), State: ledger.OperationState(val(state)),
			CancelReason: string(why), EffectsUsed: val(used), CurrentAttemptID: string(curID), CurrentGeneration: val(gen),
			CurrentControllerID: string(ctrl),
		}, nil
	case "not_found":
		return ledger.Operation{}, core.OperationNotFound(op, s, opID)
	case "completed":
		return ledger.Operation{}, core.CancelCompleted(opID)
	}
	return ledger.Operation{}, unknownCode(op, val(code))
}
