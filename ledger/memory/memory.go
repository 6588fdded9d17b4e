// Package memory is the in-memory [ledger.Ledger]: the full semantics of
// the ledger package with nothing persisted. It is what test suites and
// examples embed; it refuses nothing a durable backend accepts, and it
// loses everything when the process exits.
//
// It passes [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run].
package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Ledger is an in-memory ledger. The zero value is not usable; call [New].
// It is safe for concurrent use: every method runs under one mutex, so each
// call is one serializable transaction.
type Ledger struct {
	mu     sync.Mutex // guards everything below
	closed bool
	st     store
}

var _ ledger.Ledger = (*Ledger)(nil)

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{st: store{
		ops:        map[core.OpKey]core.OpRecord{},
		effects:    map[core.OpKey]map[string]ledger.Effect{},
		bootstraps: map[core.OpKey]map[string]ledger.Bootstrap{},
		bootOwner:  map[string]core.OpKey{},
		artifacts:  map[string]ledger.Artifact{},
		pending:    map[core.EffectKey]struct{}{},
	}}
}

// do runs fn as one transaction. core decides every refusal before its
// first write and store writes cannot fail, so no rollback is needed.
func do[T any](l *Ledger, ctx context.Context, op string, fn func(core.Tx) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, fmt.Errorf("ledger/memory: %s: %w", op, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return zero, fmt.Errorf("ledger/memory: %s: %w", op, ledger.ErrClosed)
	}
	return fn(&l.st)
}

// CreateOperation implements [ledger.Ledger].
func (l *Ledger) CreateOperation(ctx context.Context, spec ledger.OperationSpec) (ledger.Operation, error) {
	return do(l, ctx, "CreateOperation", func(tx core.Tx) (ledger.Operation, error) { return core.CreateOperation(tx, spec) })
}

// StartAttempt implements [ledger.Ledger].
func (l *Ledger) StartAttempt(ctx context.Context, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	return do(l, ctx, "StartAttempt", func(tx core.Tx) (ledger.Fence, error) { return core.StartAttempt(tx, s, opID, attemptID) })
}

// IssueBootstrap implements [ledger.Ledger].
func (l *Ledger) IssueBootstrap(ctx context.Context, f ledger.Fence, id string, launch canon.Digest) (ledger.Bootstrap, error) {
	return do(l, ctx, "IssueBootstrap", func(tx core.Tx) (ledger.Bootstrap, error) { return core.IssueBootstrap(tx, f, id, launch) })
}

// RedeemBootstrap implements [ledger.Ledger].
func (l *Ledger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	return do(l, ctx, "RedeemBootstrap", func(tx core.Tx) (ledger.Bootstrap, error) { return core.RedeemBootstrap(tx, f, r) })
}

// Admit implements [ledger.Ledger].
func (l *Ledger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	return do(l, ctx, "Admit", func(tx core.Tx) (ledger.Attempt, error) { return core.Admit(tx, f, d, time.Now()) })
}

// BeginEffect implements [ledger.Ledger].
func (l *Ledger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	return do(l, ctx, "BeginEffect", func(tx core.Tx) (ledger.EffectGrant, error) { return core.BeginEffect(tx, f, id, d, time.Now()) })
}

// ConfirmEffect implements [ledger.Ledger].
func (l *Ledger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	return do(l, ctx, "ConfirmEffect", func(tx core.Tx) (ledger.Effect, error) { return core.ConfirmEffect(tx, f, id, d, receipt) })
}

// MarkNotConsumed implements [ledger.Ledger].
func (l *Ledger) MarkNotConsumed(ctx context.Context, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	return do(l, ctx, "MarkNotConsumed", func(tx core.Tx) (ledger.Effect, error) { return core.MarkNotConsumed(tx, f, id, d, reason) })
}

// MarkUnknown implements [ledger.Ledger].
func (l *Ledger) MarkUnknown(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	return do(l, ctx, "MarkUnknown", func(tx core.Tx) (ledger.Effect, error) { return core.MarkUnknown(tx, f, id, d) })
}

// Resolve implements [ledger.Ledger].
func (l *Ledger) Resolve(ctx context.Context, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	return do(l, ctx, "Resolve", func(tx core.Tx) (ledger.Effect, error) { return core.Resolve(tx, s, opID, id, d, res) })
}

// AcceptResult implements [ledger.Ledger]. The artifact bytes are copied.
func (l *Ledger) AcceptResult(ctx context.Context, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	return do(l, ctx, "AcceptResult", func(tx core.Tx) (ledger.Result, error) { return core.AcceptResult(tx, f, dd, artifact) })
}

// Cancel implements [ledger.Ledger].
func (l *Ledger) Cancel(ctx context.Context, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	return do(l, ctx, "Cancel", func(tx core.Tx) (ledger.Operation, error) { return core.Cancel(tx, s, opID, reason) })
}

// Operation implements [ledger.Ledger].
func (l *Ledger) Operation(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationView, error) {
	return do(l, ctx, "Operation", func(tx core.Tx) (ledger.OperationView, error) { return core.View(tx, s, opID) })
}

// ListUnknown implements [ledger.Ledger].
func (l *Ledger) ListUnknown(ctx context.Context) ([]ledger.Effect, error) {
	return do(l, ctx, "ListUnknown", core.ListUnknown)
}

// Artifact implements [ledger.Ledger]. The returned bytes are a copy.
func (l *Ledger) Artifact(ctx context.Context, s ledger.Scope, ref string) (ledger.Artifact, error) {
	return do(l, ctx, "Artifact", func(tx core.Tx) (ledger.Artifact, error) { return core.GetArtifact(tx, s, ref) })
}

// Close marks the ledger closed and drops its contents; it never blocks
// beyond calls already running and always returns nil. Later calls return
// [ledger.ErrClosed].
func (l *Ledger) Close(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.st = store{}
	return nil
}

// store implements core.Tx over maps. Values are copied in and out so that
// callers never share memory with the ledger.
type store struct {
	ops        map[core.OpKey]core.OpRecord
	effects    map[core.OpKey]map[string]ledger.Effect
	bootstraps map[core.OpKey]map[string]ledger.Bootstrap
	bootOwner  map[string]core.OpKey // bootstrap id → operation, ledger-wide
	artifacts  map[string]ledger.Artifact
	pending    map[core.EffectKey]struct{}
}

func cloneRec(r core.OpRecord) core.OpRecord {
	r.Attempts = slices.Clone(r.Attempts)
	if r.Result != nil {
		res := *r.Result
		res.ArtifactRefs = slices.Clone(res.ArtifactRefs)
		r.Result = &res
	}
	return r
}

func (s *store) Op(k core.OpKey) (core.OpRecord, bool, error) {
	r, ok := s.ops[k]
	return cloneRec(r), ok, nil
}

func (s *store) PutOp(k core.OpKey, r core.OpRecord) error {
	s.ops[k] = cloneRec(r)
	return nil
}

func (s *store) Effect(k core.EffectKey) (ledger.Effect, bool, error) {
	e, ok := s.effects[k.OpKey][k.Effect]
	return e, ok, nil
}

func (s *store) PutEffect(k core.EffectKey, e ledger.Effect) error {
	m := s.effects[k.OpKey]
	if m == nil {
		m = map[string]ledger.Effect{}
		s.effects[k.OpKey] = m
	}
	m[k.Effect] = e
	return nil
}

func (s *store) Effects(k core.OpKey) ([]ledger.Effect, error) { return byID(s.effects[k]), nil }

// byID returns m's values ordered by key (never nil).
func byID[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[id])
	}
	return out
}

func (s *store) Bootstrap(k core.OpKey, id string) (ledger.Bootstrap, bool, error) {
	b, ok := s.bootstraps[k][id]
	return b, ok, nil
}

func (s *store) PutBootstrap(k core.OpKey, b ledger.Bootstrap) error {
	m := s.bootstraps[k]
	if m == nil {
		m = map[string]ledger.Bootstrap{}
		s.bootstraps[k] = m
	}
	m[b.BootstrapID] = b
	s.bootOwner[b.BootstrapID] = k
	return nil
}

func (s *store) BootstrapOwner(id string) (core.OpKey, bool, error) {
	k, ok := s.bootOwner[id]
	return k, ok, nil
}

func (s *store) Bootstraps(k core.OpKey) ([]ledger.Bootstrap, error) {
	return byID(s.bootstraps[k]), nil
}

func (s *store) Artifact(ref string) (ledger.Artifact, bool, error) {
	a, ok := s.artifacts[ref]
	a.Bytes = bytes.Clone(a.Bytes)
	if ok && a.Bytes == nil {
		a.Bytes = []byte{}
	}
	return a, ok, nil
}

func (s *store) PutArtifact(a ledger.Artifact) error {
	a.Bytes = bytes.Clone(a.Bytes)
	s.artifacts[a.Ref] = a
	return nil
}

func (s *store) SetPending(k core.EffectKey, pending bool) error {
	if pending {
		s.pending[k] = struct{}{}
	} else {
		delete(s.pending, k)
	}
	return nil
}

func (s *store) Pending() ([]core.EffectKey, error) {
	return slices.SortedFunc(maps.Keys(s.pending), func(a, b core.EffectKey) int {
		return cmp.Or(cmp.Compare(a.Org, b.Org), cmp.Compare(a.Project, b.Project), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Effect, b.Effect))
	}), nil
}
