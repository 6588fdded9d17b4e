// Package memory is the in-memory [ledger.Ledger]: the full semantics of
// the ledger package with nothing persisted. It is what test suites and
// examples embed; it refuses nothing a durable backend accepts, and it
// loses everything when the process exits.
//
// Start with [New]; hand the ledger to supervise.Config.
//
// It is also a [cataloguestore.Store], the records of package catalogue.
//
// Controller leases ([ledger.Lease]) are judged by this process's clock
// (time.Now): a lease ends when it expires or is released, and since the
// ledger lives no longer than the process that holds it, every lease it
// records was acquired through it.
//
// It passes [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run] and
// [github.com/zeoruntime/runtimeipc/ledger/ledgertest.RunCatalogue].
package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Ledger is an in-memory ledger. The zero value is not usable; call [New].
// It has every method of [ledger.Ledger], with the semantics documented
// there (they come from an embedded adapter shared by all backends, so go
// doc lists only Close here). It is safe for concurrent use: every call
// runs under one mutex, so each call is one serializable transaction.
// Values are copied in and out: the caller never shares memory with the
// ledger (artifact bytes included).
type Ledger struct {
	*ledgerCore // the methods of ledger.Ledger, over runner

	mu     sync.Mutex // guards closed and st
	closed bool
	st     store
}

var (
	_ ledger.Ledger        = (*Ledger)(nil)
	_ cataloguestore.Store = (*Ledger)(nil)
)

// ledgerCore is the adapter that implements ledger.Ledger over a runner;
// the alias keeps the embedded field unexported.
type ledgerCore = core.Ledger

// New returns an empty ledger.
func New() *Ledger {
	l := &Ledger{st: store{
		ops:        map[core.OpKey]core.OpRecord{},
		effects:    map[core.OpKey]map[string]ledger.Effect{},
		bootstraps: map[core.OpKey]map[string]ledger.Bootstrap{},
		bootOwner:  map[string]core.OpKey{},
		artifacts:  map[string]ledger.Artifact{},
		pending:    map[core.EffectKey]struct{}{},
		evidence:   map[core.OpKey]map[string]ledger.AttemptEvidence{},
		recs:       map[core.Kind]map[string][]byte{},
		leases:     map[string]core.LeaseRecord{},
	}}
	l.ledgerCore = core.New(runner{l})
	return l
}

// runner runs each call under the mutex, on the caller's goroutine
// (core.Serial, so core calls Begin and End and allocates nothing per
// call; Read and Write do the same for any other user of the Runner).
// Reads and writes are alike: core decides every refusal before its first
// write and store writes cannot fail, so no rollback is ever needed.
type runner struct{ l *Ledger }

func (r runner) Begin(ctx context.Context, op string) (core.Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ledger/memory: %s: %w", op, err)
	}
	r.l.mu.Lock()
	if r.l.closed {
		r.l.mu.Unlock()
		return nil, fmt.Errorf("ledger/memory: %s: %w", op, ledger.ErrClosed)
	}
	return &r.l.st, nil
}

func (r runner) End() { r.l.mu.Unlock() }

func (r runner) Read(ctx context.Context, op string, fn func(core.Tx) error) error {
	return r.Write(ctx, op, fn)
}

func (r runner) Write(ctx context.Context, op string, fn func(core.Tx) error) error {
	tx, err := r.Begin(ctx, op)
	if err != nil {
		return err
	}
	defer r.End()
	return fn(tx)
}

func (r runner) Close(ctx context.Context) error { return r.l.Close(ctx) }

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
	evidence   map[core.OpKey]map[string]ledger.AttemptEvidence // by attempt id
	recs       map[core.Kind]map[string][]byte                  // the catalogue's records (catalogue.go)
	leases     map[string]core.LeaseRecord                      // by controller id
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

func (s *store) ScanOps(scope *ledger.Scope, after *core.OpKey, fn func(core.OpRecord) bool) error {
	keys := make([]core.OpKey, 0, len(s.ops))
	for k := range s.ops {
		if scope != nil && k.Scope() != *scope {
			continue
		}
		if after != nil && core.CompareKeys(k, *after) <= 0 {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, core.CompareKeys)
	for _, k := range keys {
		if !fn(cloneRec(s.ops[k])) {
			return nil
		}
	}
	return nil
}

// cloneEvidence copies e's slices, so that the caller and the store never
// share them.
func cloneEvidence(e ledger.AttemptEvidence) ledger.AttemptEvidence {
	e.HostResult = bytes.Clone(e.HostResult)
	e.StderrTail = bytes.Clone(e.StderrTail)
	e.Session.Exchanges = slices.Clone(e.Session.Exchanges)
	return e
}

func (s *store) Evidence(k core.OpKey, attemptID string) (ledger.AttemptEvidence, bool, error) {
	e, ok := s.evidence[k][attemptID]
	return cloneEvidence(e), ok, nil
}

func (s *store) PutEvidence(k core.OpKey, e ledger.AttemptEvidence) error {
	m := s.evidence[k]
	if m == nil {
		m = map[string]ledger.AttemptEvidence{}
		s.evidence[k] = m
	}
	m[e.AttemptID] = cloneEvidence(e)
	return nil
}

func (s *store) Evidences(k core.OpKey) ([]ledger.AttemptEvidence, error) {
	out := byID(s.evidence[k])
	for i := range out {
		out[i] = cloneEvidence(out[i])
	}
	return out, nil
}

func (s *store) Lease(id string) (core.LeaseRecord, bool, error) {
	r, ok := s.leases[id]
	return r, ok, nil
}

func (s *store) PutLease(r core.LeaseRecord) error {
	s.leases[r.ControllerID] = r
	return nil
}

func (s *store) Leases() ([]core.LeaseRecord, error) { return byID(s.leases), nil }

// Holder is the same for every transaction: the ledger lives exactly as
// long as its handle, so every lease it holds was acquired through it.
func (s *store) Holder() string { return "" }
