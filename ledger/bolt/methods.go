package bolt

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// CreateOperation implements [ledger.Ledger].
func (l *Ledger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	return write(l, ctx, "CreateOperation", func(tx core.Tx) (ledger.Operation, error) { return core.CreateOperation(tx, spec) })
}

// StartAttempt implements [ledger.Ledger].
func (l *Ledger) StartAttempt(ctx context.Context, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	return write(l, ctx, "StartAttempt", func(tx core.Tx) (ledger.Fence, error) { return core.StartAttempt(tx, s, opID, attemptID) })
}

// IssueBootstrap implements [ledger.Ledger].
func (l *Ledger) IssueBootstrap(ctx context.Context, f ledger.Fence, id string, launch canon.Digest) (ledger.Bootstrap, error) {
	return write(l, ctx, "IssueBootstrap", func(tx core.Tx) (ledger.Bootstrap, error) { return core.IssueBootstrap(tx, f, id, launch) })
}

// RedeemBootstrap implements [ledger.Ledger].
func (l *Ledger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	return write(l, ctx, "RedeemBootstrap", func(tx core.Tx) (ledger.Bootstrap, error) { return core.RedeemBootstrap(tx, f, r) })
}

// Admit implements [ledger.Ledger].
func (l *Ledger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	return write(l, ctx, "Admit", func(tx core.Tx) (ledger.Attempt, error) { return core.Admit(tx, f, d, time.Now()) })
}

// BeginEffect implements [ledger.Ledger].
func (l *Ledger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	return write(l, ctx, "BeginEffect", func(tx core.Tx) (ledger.EffectGrant, error) { return core.BeginEffect(tx, f, id, d, time.Now()) })
}

// ConfirmEffect implements [ledger.Ledger].
func (l *Ledger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	return write(l, ctx, "ConfirmEffect", func(tx core.Tx) (ledger.Effect, error) { return core.ConfirmEffect(tx, f, id, d, receipt) })
}

// MarkNotConsumed implements [ledger.Ledger].
func (l *Ledger) MarkNotConsumed(ctx context.Context, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	return write(l, ctx, "MarkNotConsumed", func(tx core.Tx) (ledger.Effect, error) { return core.MarkNotConsumed(tx, f, id, d, reason) })
}

// MarkUnknown implements [ledger.Ledger].
func (l *Ledger) MarkUnknown(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	return write(l, ctx, "MarkUnknown", func(tx core.Tx) (ledger.Effect, error) { return core.MarkUnknown(tx, f, id, d) })
}

// Resolve implements [ledger.Ledger].
func (l *Ledger) Resolve(ctx context.Context, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	return write(l, ctx, "Resolve", func(tx core.Tx) (ledger.Effect, error) { return core.Resolve(tx, s, opID, id, d, res) })
}

// AcceptResult implements [ledger.Ledger]. The artifact bytes are copied
// into the file before AcceptResult returns; the caller keeps artifact.
func (l *Ledger) AcceptResult(ctx context.Context, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	return write(l, ctx, "AcceptResult", func(tx core.Tx) (ledger.Result, error) { return core.AcceptResult(tx, f, dd, artifact) })
}

// Cancel implements [ledger.Ledger].
func (l *Ledger) Cancel(ctx context.Context, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	return write(l, ctx, "Cancel", func(tx core.Tx) (ledger.Operation, error) { return core.Cancel(tx, s, opID, reason) })
}

// Operation implements [ledger.Ledger].
func (l *Ledger) Operation(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationView, error) {
	return read(l, ctx, "Operation", func(tx core.Tx) (ledger.OperationView, error) { return core.View(tx, s, opID) })
}

// ListUnknown implements [ledger.Ledger].
func (l *Ledger) ListUnknown(ctx context.Context) ([]ledger.Effect, error) {
	return read(l, ctx, "ListUnknown", core.ListUnknown)
}

// Artifact implements [ledger.Ledger]. The returned bytes are a copy.
func (l *Ledger) Artifact(ctx context.Context, s ledger.Scope, ref string) (ledger.Artifact, error) {
	return read(l, ctx, "Artifact", func(tx core.Tx) (ledger.Artifact, error) { return core.GetArtifact(tx, s, ref) })
}
