package telemetry

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// observedLedger reports every write of the ledger it wraps: a span under
// the caller's (zeo.ledger.<write>) and its duration
// (zeo.runtime.ledger.write.duration). Reads pass through unobserved.
type observedLedger struct {
	ledger.Ledger
	t *T
}

// Observe wraps l when t reports anything; otherwise it is l.
func Observe(l ledger.Ledger, t *T) ledger.Ledger {
	if t == nil || l == nil {
		return l
	}
	if _, ok := l.(*observedLedger); ok {
		return l
	}
	return &observedLedger{Ledger: l, t: t}
}

func (l *observedLedger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	ctx, w := l.t.write(ctx, writeCreateOperation)
	r, err := l.Ledger.CreateOperation(ctx, spec)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) StartAttempt(ctx context.Context, scope ledger.Scope, operationID, attemptID string) (ledger.Fence, error) {
	ctx, w := l.t.write(ctx, writeStartAttempt)
	r, err := l.Ledger.StartAttempt(ctx, scope, operationID, attemptID)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) LaunchAttempt(ctx context.Context, a ledger.AttemptLaunch) (ledger.Fence, error) {
	ctx, w := l.t.write(ctx, writeLaunchAttempt)
	r, err := l.Ledger.LaunchAttempt(ctx, a)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) RedeemBootstrap(ctx context.Context, f ledger.Fence, rd ledger.Redemption) (ledger.Bootstrap, error) {
	ctx, w := l.t.write(ctx, writeRedeemBootstrap)
	r, err := l.Ledger.RedeemBootstrap(ctx, f, rd)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) Admit(ctx context.Context, f ledger.Fence, requestDigest canon.Digest) (ledger.Attempt, error) {
	ctx, w := l.t.write(ctx, writeAdmit)
	r, err := l.Ledger.Admit(ctx, f, requestDigest)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) BeginEffect(ctx context.Context, f ledger.Fence, logicalEffectID string, requestDigest canon.Digest) (ledger.EffectGrant, error) {
	ctx, w := l.t.write(ctx, writeBeginEffect)
	r, err := l.Ledger.BeginEffect(ctx, f, logicalEffectID, requestDigest)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) ConfirmEffect(ctx context.Context, f ledger.Fence, logicalEffectID string, requestDigest canon.Digest, receiptID string) (ledger.Effect, error) {
	ctx, w := l.t.write(ctx, writeConfirmEffect)
	r, err := l.Ledger.ConfirmEffect(ctx, f, logicalEffectID, requestDigest, receiptID)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) MarkNotConsumed(ctx context.Context, f ledger.Fence, logicalEffectID string, requestDigest canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	ctx, w := l.t.write(ctx, writeMarkNotConsumed)
	r, err := l.Ledger.MarkNotConsumed(ctx, f, logicalEffectID, requestDigest, reason)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) MarkUnknown(ctx context.Context, f ledger.Fence, logicalEffectID string, requestDigest canon.Digest) (ledger.Effect, error) {
	ctx, w := l.t.write(ctx, writeMarkUnknown)
	r, err := l.Ledger.MarkUnknown(ctx, f, logicalEffectID, requestDigest)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) Resolve(ctx context.Context, scope ledger.Scope, operationID, logicalEffectID string, requestDigest canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	ctx, w := l.t.write(ctx, writeResolve)
	r, err := l.Ledger.Resolve(ctx, scope, operationID, logicalEffectID, requestDigest, res)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) AcceptResult(ctx context.Context, f ledger.Fence, dataDigest canon.Digest, artifact []byte) (ledger.Result, error) {
	ctx, w := l.t.write(ctx, writeAcceptResult)
	r, err := l.Ledger.AcceptResult(ctx, f, dataDigest, artifact)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) Cancel(ctx context.Context, scope ledger.Scope, operationID, reason string) (ledger.Operation, error) {
	ctx, w := l.t.write(ctx, writeCancel)
	r, err := l.Ledger.Cancel(ctx, scope, operationID, reason)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	ctx, w := l.t.write(ctx, writeRecordAttempt)
	r, err := l.Ledger.RecordAttempt(ctx, f, ev)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) AcquireLease(ctx context.Context, controllerID string, ttl time.Duration) (ledger.Lease, error) {
	ctx, w := l.t.write(ctx, writeAcquireLease)
	r, err := l.Ledger.AcquireLease(ctx, controllerID, ttl)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) RenewLease(ctx context.Context, controllerID string, ttl time.Duration) (ledger.Lease, error) {
	ctx, w := l.t.write(ctx, writeRenewLease)
	r, err := l.Ledger.RenewLease(ctx, controllerID, ttl)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) ReleaseLease(ctx context.Context, controllerID string) (ledger.Lease, error) {
	ctx, w := l.t.write(ctx, writeReleaseLease)
	r, err := l.Ledger.ReleaseLease(ctx, controllerID)
	w.end(ctx, err)
	return r, err
}

func (l *observedLedger) TakeOver(ctx context.Context, t ledger.Takeover) (ledger.Fence, error) {
	ctx, w := l.t.write(ctx, writeTakeOver)
	r, err := l.Ledger.TakeOver(ctx, t)
	w.end(ctx, err)
	return r, err
}
