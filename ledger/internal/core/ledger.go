package core

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Runner is the seam between the ledger's semantics and a backend: it runs
// one call of the ledger as one backend transaction. [Ledger] turns each
// method of [ledger.Ledger] into one Read or Write whose fn calls the
// function of this package that decides it.
//
// Read runs fn in a transaction that does not write. Write runs fn in a
// read-write transaction and returns only once its writes are durable, or
// an error that says whether they were applied (see below). Both check ctx
// and the backend's closed state before running fn (ctx's error, then
// ledger.ErrClosed, wrapped with the backend's name and op, the method's
// name), so that every backend answers the first step of the Ledger's
// error order alike. fn's error is returned as it is; the transaction is
// then discarded (core decides every refusal before its first write, so a
// refused call has written nothing anyway).
//
// Write may run fn more than once, as long as only the run whose
// transaction commits is the one the caller sees: fn writes its result
// into variables it captured, so the last run wins. A backend retries when
// its store asks for it (bolt reruns a group-commit batch without the write
// that hit a storage error; PostgreSQL reruns a transaction that failed with
// a serialization failure). When ctx ends before the outcome is known,
// Write wraps ledger.ErrNotApplied if the write certainly did not commit
// and ledger.ErrOutcomeUnknown if it may have.
//
// Close releases the backend; [Ledger.Close] calls it.
//
// What a backend implements is thus Runner and [Tx]. Tx is a record store:
// get and put of operation records, effects, bootstraps and artifacts, and
// the reconciliation index. A backend whose store can check the fence
// itself (a PostgreSQL UPDATE … WHERE generation = $n) still gets the
// fence checked here, inside the same transaction, before any write:
// its own check is a second guard, never the only one.
type Runner interface {
	Read(ctx context.Context, op string, fn func(Tx) error) error
	Write(ctx context.Context, op string, fn func(Tx) error) error
	Close(ctx context.Context) error
}

// Ledger implements [ledger.Ledger] over a backend's [Runner]: each method
// is one Read or Write running the function of this package of the same
// name. Backends embed it, so that the ledger's methods are written once.
type Ledger struct {
	r Runner
}

var _ ledger.Ledger = (*Ledger)(nil)

// New returns the ledger served by r.
func New(r Runner) *Ledger { return &Ledger{r: r} }

// write runs fn through the runner's Write and returns what the committed
// run of fn returned.
func write[T any](l *Ledger, ctx context.Context, op string, fn func(Tx) (T, error)) (T, error) {
	return run(l, true, ctx, op, fn)
}

// read is write for calls that do not write: the runner's Read.
func read[T any](l *Ledger, ctx context.Context, op string, fn func(Tx) (T, error)) (T, error) {
	return run(l, false, ctx, op, fn)
}

func run[T any](l *Ledger, writes bool, ctx context.Context, op string, fn func(Tx) (T, error)) (T, error) {
	var out T
	do := func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	}
	var err error
	if writes {
		err = l.r.Write(ctx, op, do)
	} else {
		err = l.r.Read(ctx, op, do)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// CreateOperation implements [ledger.Ledger].
func (l *Ledger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	return write(l, ctx, "CreateOperation", func(tx Tx) (ledger.Operation, error) { return CreateOperation(tx, spec) })
}

// StartAttempt implements [ledger.Ledger].
func (l *Ledger) StartAttempt(ctx context.Context, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	return write(l, ctx, "StartAttempt", func(tx Tx) (ledger.Fence, error) { return StartAttempt(tx, s, opID, attemptID) })
}

// IssueBootstrap implements [ledger.Ledger].
func (l *Ledger) IssueBootstrap(ctx context.Context, f ledger.Fence, id string, launch canon.Digest) (ledger.Bootstrap, error) {
	return write(l, ctx, "IssueBootstrap", func(tx Tx) (ledger.Bootstrap, error) { return IssueBootstrap(tx, f, id, launch) })
}

// RedeemBootstrap implements [ledger.Ledger].
func (l *Ledger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	return write(l, ctx, "RedeemBootstrap", func(tx Tx) (ledger.Bootstrap, error) { return RedeemBootstrap(tx, f, r) })
}

// Admit implements [ledger.Ledger]. The deadline is compared with the
// clock when the transaction runs, not when the call was made.
func (l *Ledger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	return write(l, ctx, "Admit", func(tx Tx) (ledger.Attempt, error) { return Admit(tx, f, d, time.Now()) })
}

// BeginEffect implements [ledger.Ledger]. Like Admit, it reads the clock
// inside the transaction.
func (l *Ledger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	return write(l, ctx, "BeginEffect", func(tx Tx) (ledger.EffectGrant, error) { return BeginEffect(tx, f, id, d, time.Now()) })
}

// ConfirmEffect implements [ledger.Ledger].
func (l *Ledger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	return write(l, ctx, "ConfirmEffect", func(tx Tx) (ledger.Effect, error) { return ConfirmEffect(tx, f, id, d, receipt) })
}

// MarkNotConsumed implements [ledger.Ledger].
func (l *Ledger) MarkNotConsumed(ctx context.Context, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	return write(l, ctx, "MarkNotConsumed", func(tx Tx) (ledger.Effect, error) { return MarkNotConsumed(tx, f, id, d, reason) })
}

// MarkUnknown implements [ledger.Ledger].
func (l *Ledger) MarkUnknown(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	return write(l, ctx, "MarkUnknown", func(tx Tx) (ledger.Effect, error) { return MarkUnknown(tx, f, id, d) })
}

// Resolve implements [ledger.Ledger].
func (l *Ledger) Resolve(ctx context.Context, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	return write(l, ctx, "Resolve", func(tx Tx) (ledger.Effect, error) { return Resolve(tx, s, opID, id, d, res) })
}

// AcceptResult implements [ledger.Ledger]. The backend's Tx copies the
// artifact bytes when it stores them; the caller keeps artifact.
func (l *Ledger) AcceptResult(ctx context.Context, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	return write(l, ctx, "AcceptResult", func(tx Tx) (ledger.Result, error) { return AcceptResult(tx, f, dd, artifact) })
}

// Cancel implements [ledger.Ledger].
func (l *Ledger) Cancel(ctx context.Context, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	return write(l, ctx, "Cancel", func(tx Tx) (ledger.Operation, error) { return Cancel(tx, s, opID, reason) })
}

// Operation implements [ledger.Ledger].
func (l *Ledger) Operation(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationView, error) {
	return read(l, ctx, "Operation", func(tx Tx) (ledger.OperationView, error) { return View(tx, s, opID) })
}

// ListUnknown implements [ledger.Ledger].
func (l *Ledger) ListUnknown(ctx context.Context) ([]ledger.Effect, error) {
	return read(l, ctx, "ListUnknown", ListUnknown)
}

// ListOperations implements [ledger.Ledger].
func (l *Ledger) ListOperations(ctx context.Context, q ledger.OperationQuery) ([]ledger.Operation, error) {
	return read(l, ctx, "ListOperations", func(tx Tx) ([]ledger.Operation, error) { return ListOperations(tx, q) })
}

// RecordAttempt implements [ledger.Ledger].
func (l *Ledger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	return write(l, ctx, "RecordAttempt", func(tx Tx) (ledger.AttemptEvidence, error) { return RecordAttempt(tx, f, ev) })
}

// Evidence implements [ledger.Ledger].
func (l *Ledger) Evidence(ctx context.Context, s ledger.Scope, opID string) ([]ledger.AttemptEvidence, error) {
	return read(l, ctx, "Evidence", func(tx Tx) ([]ledger.AttemptEvidence, error) { return Evidence(tx, s, opID) })
}

// Artifact implements [ledger.Ledger]. The returned bytes are the Tx's
// copy, owned by the caller.
func (l *Ledger) Artifact(ctx context.Context, s ledger.Scope, ref string) (ledger.Artifact, error) {
	return read(l, ctx, "Artifact", func(tx Tx) (ledger.Artifact, error) { return GetArtifact(tx, s, ref) })
}

// Close implements [ledger.Ledger] by closing the runner.
func (l *Ledger) Close(ctx context.Context) error { return l.r.Close(ctx) }
