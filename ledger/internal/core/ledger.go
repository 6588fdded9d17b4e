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
	r      Runner
	serial Serial // r, when it is one; nil otherwise
}

var _ ledger.Ledger = (*Ledger)(nil)

// New returns the ledger served by r.
func New(r Runner) *Ledger {
	l := &Ledger{r: r}
	l.serial, _ = r.(Serial)
	return l
}

// Serial is implemented by a Runner whose calls all run once, on the
// caller's goroutine, under the backend's own lock (ledger/memory). Ledger
// then runs each call between Begin and End instead of through Read or
// Write, which spares the closures those take: no allocation per call.
// Begin checks ctx and the backend's closed state as Read and Write do,
// takes the lock and returns the Tx of one call; End releases the lock.
// Ledger calls End exactly once after each Begin that succeeded.
type Serial interface {
	Runner
	Begin(ctx context.Context, op string) (Tx, error)
	End()
}

// How Ledger runs a call. With a Serial runner, the call runs between
// Begin and End on the caller's goroutine, through a closure that does not
// escape: nothing is allocated per call. Otherwise it goes through the
// runner's Read or Write, which take a func(Tx) error that the backend may
// keep (bolt hands it to its committer goroutine): the closure and the
// result it fills are then on the heap. The callN helpers build each
// closure only on its own path, so that the serial path stays free of
// allocations; N is the number of arguments of the decision function.

const (
	reads  = false
	writes = true
)

func call0[T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx) (T, error)) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, fn)
	}
	return run(l, ctx, op, w, fn)
}

func call1[A, T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx, A) (T, error), a A) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, func(tx Tx) (T, error) { return fn(tx, a) })
	}
	return run(l, ctx, op, w, func(tx Tx) (T, error) { return fn(tx, a) })
}

func call2[A, B, T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx, A, B) (T, error), a A, b B) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, func(tx Tx) (T, error) { return fn(tx, a, b) })
	}
	return run(l, ctx, op, w, func(tx Tx) (T, error) { return fn(tx, a, b) })
}

func call3[A, B, C, T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx, A, B, C) (T, error), a A, b B, c C) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, func(tx Tx) (T, error) { return fn(tx, a, b, c) })
	}
	return run(l, ctx, op, w, func(tx Tx) (T, error) { return fn(tx, a, b, c) })
}

func call4[A, B, C, D, T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx, A, B, C, D) (T, error), a A, b B, c C, d D) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, func(tx Tx) (T, error) { return fn(tx, a, b, c, d) })
	}
	return run(l, ctx, op, w, func(tx Tx) (T, error) { return fn(tx, a, b, c, d) })
}

func call5[A, B, C, D, E, T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx, A, B, C, D, E) (T, error), a A, b B, c C, d D, e E) (T, error) {
	if l.serial != nil {
		return serial(l, ctx, op, func(tx Tx) (T, error) { return fn(tx, a, b, c, d, e) })
	}
	return run(l, ctx, op, w, func(tx Tx) (T, error) { return fn(tx, a, b, c, d, e) })
}

// serial runs fn between the Serial runner's Begin and End.
func serial[T any](l *Ledger, ctx context.Context, op string, fn func(Tx) (T, error)) (T, error) {
	tx, err := l.serial.Begin(ctx, op)
	if err != nil {
		var zero T
		return zero, err
	}
	defer l.serial.End()
	return fn(tx)
}

// run runs fn through the runner's Write (w) or Read and returns what the
// committed run of fn returned.
func run[T any](l *Ledger, ctx context.Context, op string, w bool, fn func(Tx) (T, error)) (T, error) {
	var out T
	do := func(tx Tx) error {
		var err error
		out, err = fn(tx)
		return err
	}
	var err error
	if w {
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

// admitNow and beginEffectNow read the clock inside the transaction, so
// that a deadline is compared with the time the call is decided, not the
// time it was made (a group commit may hold it a while).
func admitNow(tx Tx, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	return Admit(tx, f, d, time.Now())
}

func beginEffectNow(tx Tx, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	return BeginEffect(tx, f, id, d, time.Now())
}

// CreateOperation implements [ledger.Ledger].
func (l *Ledger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	return call1(l, ctx, "CreateOperation", writes, CreateOperation, spec)
}

// StartAttempt implements [ledger.Ledger].
func (l *Ledger) StartAttempt(ctx context.Context, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	return call3(l, ctx, "StartAttempt", writes, StartAttempt, s, opID, attemptID)
}

// LaunchAttempt implements [ledger.Ledger].
func (l *Ledger) LaunchAttempt(ctx context.Context, a ledger.AttemptLaunch) (ledger.Fence, error) {
	return call1(l, ctx, "LaunchAttempt", writes, launchAttemptNow, a)
}

// RedeemBootstrap implements [ledger.Ledger].
func (l *Ledger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	return call2(l, ctx, "RedeemBootstrap", writes, RedeemBootstrap, f, r)
}

// Admit implements [ledger.Ledger]. The deadline is compared with the
// clock when the transaction runs, not when the call was made.
func (l *Ledger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	return call2(l, ctx, "Admit", writes, admitNow, f, d)
}

// BeginEffect implements [ledger.Ledger]. Like Admit, it reads the clock
// inside the transaction.
func (l *Ledger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	return call3(l, ctx, "BeginEffect", writes, beginEffectNow, f, id, d)
}

// ConfirmEffect implements [ledger.Ledger].
func (l *Ledger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	return call4(l, ctx, "ConfirmEffect", writes, ConfirmEffect, f, id, d, receipt)
}

// MarkNotConsumed implements [ledger.Ledger].
func (l *Ledger) MarkNotConsumed(ctx context.Context, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	return call4(l, ctx, "MarkNotConsumed", writes, MarkNotConsumed, f, id, d, reason)
}

// MarkUnknown implements [ledger.Ledger].
func (l *Ledger) MarkUnknown(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	return call3(l, ctx, "MarkUnknown", writes, MarkUnknown, f, id, d)
}

// Resolve implements [ledger.Ledger].
func (l *Ledger) Resolve(ctx context.Context, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	return call5(l, ctx, "Resolve", writes, resolveNow, s, opID, id, d, res)
}

// AcceptResult implements [ledger.Ledger]. The backend's Tx copies the
// artifact bytes when it stores them; the caller keeps artifact.
func (l *Ledger) AcceptResult(ctx context.Context, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	return call3(l, ctx, "AcceptResult", writes, AcceptResult, f, dd, artifact)
}

// Cancel implements [ledger.Ledger].
func (l *Ledger) Cancel(ctx context.Context, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	return call3(l, ctx, "Cancel", writes, Cancel, s, opID, reason)
}

// Operation implements [ledger.Ledger].
func (l *Ledger) Operation(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationView, error) {
	return call2(l, ctx, "Operation", reads, View, s, opID)
}

// ListUnknown implements [ledger.Ledger].
func (l *Ledger) ListUnknown(ctx context.Context) ([]ledger.Effect, error) {
	return call0(l, ctx, "ListUnknown", reads, listUnknownNow)
}

// ListOperations implements [ledger.Ledger].
func (l *Ledger) ListOperations(ctx context.Context, q ledger.OperationQuery) ([]ledger.Operation, error) {
	return call1(l, ctx, "ListOperations", reads, listOperationsNow, q)
}

// RecordAttempt implements [ledger.Ledger].
func (l *Ledger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	return call2(l, ctx, "RecordAttempt", writes, RecordAttempt, f, ev)
}

// Evidence implements [ledger.Ledger].
func (l *Ledger) Evidence(ctx context.Context, s ledger.Scope, opID string) ([]ledger.AttemptEvidence, error) {
	return call2(l, ctx, "Evidence", reads, Evidence, s, opID)
}

// Artifact implements [ledger.Ledger]. The returned bytes are the Tx's
// copy, owned by the caller.
func (l *Ledger) Artifact(ctx context.Context, s ledger.Scope, ref string) (ledger.Artifact, error) {
	return call2(l, ctx, "Artifact", reads, GetArtifact, s, ref)
}

// Close implements [ledger.Ledger] by closing the runner.
func (l *Ledger) Close(ctx context.Context) error { return l.r.Close(ctx) }
