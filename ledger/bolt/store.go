package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// File layout, format version 8. Every bucket is top level; tuple keys use
// an order-preserving, prefix-free encoding (see appendKey), so a prefix
// scan over an operation's key yields its records in id order; seq keys are
// 8-byte big-endian sequence numbers.
//
//	meta       "format" → "8"
//	ops        (org, project, op)            → operation record (codec.go): core.OpRecord and the staged effect index
//	effects    seq                           → effect record (codec.go)
//	effidx     (org, project, op, effect)    → seq of the effect (flushed from the staged index)
//	pending    seq                           → "" (effects to reconcile)
//	bootstraps (org, project, op, bootstrap) → JSON ledger.Bootstrap
//	bootids    bootstrap                     → (org, project, op) that owns it
//	artifacts  ref                           → JSON ledger.Artifact (bytes are not in its JSON form)
//	blobs      ref                           → artifact bytes
//	evidence   (org, project, op, attempt)   → JSON ledger.AttemptEvidence
//	catalogue  kind byte, core.Key tuple     → the catalogue's records (catalogue.go; kinds in ledger/internal/core)
//	leases     controller id                 → JSON core.LeaseRecord
//
// Why effects are keyed by sequence. A group commit carries writes of many
// operations, and what a commit costs is mostly how many separate pages it
// writes: fdatasync pays for each discontiguous page (measured on the
// benchmark machine: 64 scattered 4 KiB pages cost 2.2 ms per commit, 64
// contiguous ones 0.7 ms). Format 2 keyed effects and the pending index by
// (operation, effect), so every write of a batch dirtied its own leaf, far
// from the others: 57 pages per commit of 32 writes with 64 writers
// (format 3: 13 for 32 writes, 17 for 46). A new effect now takes
// the next number of the effects bucket's sequence (bbolt's NextSequence,
// committed with the transaction), so a batch's new effect records, their
// outcomes (ConfirmEffect and the others rewrite a recent record) and the
// pending marks all land on the last pages of their buckets. The one
// per-operation record a write touches is the operation record, which
// BeginEffect rewrites anyway (EffectsUsed) and which is small, so many
// operations share a page.
//
// Finding an effect by (operation, effect id) needs an index; writing it on
// every BeginEffect would dirty one scattered page per write again. So the
// newest entries of an operation's index are staged in its operation
// record, and moved to effidx in one go when there are more than
// maxStaged of them (or maxStagedBytes of ids), which touches that
// operation's index page once per maxStaged effects. A lookup checks the
// staged entries, then effidx; an effect is in exactly one of them.
//
// Format 4 is format 3 with the evidence bucket, format 5 is format 4
// with the catalogue bucket, and format 6 is format 5 with the leases
// bucket and the controllers of attempts and effects, which are optional
// trailing fields of their records (codec.go): a record of format 3 to 5
// reads as one without controllers, and a record without controllers is
// written as those formats wrote it. Open upgrades a format 3, 4 or 5 file
// in place, in one transaction (it creates the missing buckets and stamps
// the new version), since no record needs rewriting; a build of format 5
// refuses a format 6 file by its version rather than misreading a record.
// Format 7 is format 6 with a checksum at the end of every value but the
// format stamp and the artifact bytes (seal.go); Open upgrades a format 3
// to 6 file by adding the missing buckets and sealing every record, in
// one transaction, which commits only if the whole ledger then passes its
// record check (core.CheckTx): a file is never sealed with damage in it.
// Format 8 is format 7 with the artifact bytes sealed too: their
// checksum is checked on every read, in place of the sha256 of their
// digest, which Check and the upgrade still verify (seal.go). Open
// upgrades a format 7 file by checking every artifact's bytes against its
// digest and sealing them, in one transaction.
// Format 2 files are refused (see initFile): the project had no deployed
// data then, so there is no migration from it.
var (
	bucketMeta       = []byte("meta")
	bucketOps        = []byte("ops")
	bucketEffects    = []byte("effects")
	bucketEffIdx     = []byte("effidx")
	bucketPending    = []byte("pending")
	bucketBootstraps = []byte("bootstraps")
	bucketBootIDs    = []byte("bootids")
	bucketArtifacts  = []byte("artifacts")
	bucketBlobs      = []byte("blobs")
	bucketEvidence   = []byte("evidence")
	bucketCatalogue  = []byte("catalogue")
	bucketLeases     = []byte("leases")
	allBuckets       = [][]byte{bucketMeta, bucketOps, bucketEffects, bucketEffIdx, bucketPending, bucketBootstraps, bucketBootIDs, bucketArtifacts, bucketBlobs, bucketEvidence, bucketCatalogue, bucketLeases}

	keyFormat     = []byte("format")
	formatVersion = []byte("8")
	// formatsUpgradable are the earlier formats Open upgrades in place, and
	// the buckets each lacks.
	formatsUpgradable = map[string][][]byte{
		"3": {bucketEvidence, bucketCatalogue, bucketLeases},
		"4": {bucketCatalogue, bucketLeases},
		"5": {bucketLeases},
		"6": {},
		"7": {},
	}
	// sealedBuckets are the buckets whose values carry a checksum (seal.go).
	sealedBuckets = [][]byte{bucketOps, bucketEffects, bucketEffIdx, bucketPending, bucketBootstraps, bucketBootIDs, bucketArtifacts, bucketBlobs, bucketEvidence, bucketCatalogue, bucketLeases}
)

// maxStaged and maxStagedBytes bound an operation's staged effect index
// (entries, and bytes of effect ids), and so the size of its record: small
// records keep many operations on one page, and a flush per maxStaged
// effects keeps the scattered effidx writes rare.
const (
	maxStaged      = 8
	maxStagedBytes = 512
)

// storageError marks an error from bbolt itself during a write. The
// committer discards the whole transaction when it sees one, because the
// function that got it may have written part of its records.
type storageError struct{ err error }

func (e *storageError) Error() string { return "ledger/bolt: storage: " + e.err.Error() }
func (e *storageError) Unwrap() error { return e.err }

func isStorage(err error) bool {
	var se *storageError
	return errors.As(err, &se)
}

// appendKey appends the order-preserving, prefix-free encoding of a tuple
// (core.AppendKey): byte order of encoded tuples equals the lexicographic
// order of the tuples, and no encoded tuple is a prefix of another with a
// different first part.
func appendKey(b []byte, parts ...string) []byte { return core.AppendKey(b, parts...) }

// splitKey decodes a key made by appendKey.
func splitKey(k []byte) ([]string, error) {
	parts, err := core.SplitKey(k)
	if err != nil {
		return nil, fmt.Errorf("ledger/bolt: key %q: %v: %w", k, err, ledger.ErrCorrupt)
	}
	return parts, nil
}

func opKey(k core.OpKey) []byte { return appendKey(nil, k.Org, k.Project, k.Op) }

// boltTx adapts a bbolt read-write or read-only transaction to core.Tx. It
// remembers, for this transaction only, the operation records it decoded
// or changed and the sequence numbers of effects it looked up, so the
// several calls of one write, and the writes of one batch, do not decode
// the same record again. Changed operation records are written back once,
// by flush, before the transaction commits: BeginEffect changes its
// operation's record twice (EffectsUsed, then the staged index), and the
// writes of a batch may share operations. Every read of an operation goes
// through the memo, so the bucket's stale value is never seen. A
// rolled-back transaction takes its boltTx with it.
//
// A write transaction also reads through committed, the committer's cache
// of operation records as last committed (see opCache); a read-only one has
// none.
type boltTx struct {
	tx        *bbolt.Tx
	ops       map[core.OpKey]*opRecord
	dirty     []core.OpKey // keys of ops changed since the last flush, each once
	seqs      map[core.EffectKey]uint64
	committed *opCache                    // nil for read-only transactions
	failFlush func() error                // testHooks.failFlush, per batch (hooks.go); nil in production
	holder    string                      // the Ledger's handle name (core.Tx.Holder; lease.go)
	leases    map[string]core.LeaseRecord // lease records read or written in this transaction (lease.go)

	// Encoding space. bbolt keeps the key and value slices given to Put
	// until the transaction ends, so each one is carved out of arena,
	// which is never reused within a transaction: one allocation per
	// arenaChunk bytes instead of two per Put. tmp is scratch for one
	// encoding at a time, and key for a lookup key bbolt does not keep.
	arena []byte
	tmp   []byte
	key   [8]byte
}

const arenaChunk = 16 << 10

func newTx(tx *bbolt.Tx, holder string) *boltTx {
	return &boltTx{tx: tx, ops: map[core.OpKey]*opRecord{}, seqs: map[core.EffectKey]uint64{}, holder: holder}
}

// reuse readies t, whose transaction has ended, for tx: the committer keeps
// one boltTx so that its memo maps keep their room from batch to batch.
// The arena's last chunk is written over from its start: bbolt keeps a
// Put's key and value only in the nodes of the transaction that made the
// Put, which it drops when the transaction commits or rolls back (its
// pages are its own copies), and no record that outlives a transaction
// (the opCache's decoded records) points into the arena. Reusing it spares
// each commit a fresh chunk, most of what a commit allocated here.
func (t *boltTx) reuse(tx *bbolt.Tx) {
	t.tx = tx
	clear(t.ops)
	clear(t.seqs)
	clear(t.leases)
	t.dirty = t.dirty[:0]
	t.arena = t.arena[:0]
}

// alloc returns an empty slice with room for n bytes from the arena.
func (t *boltTx) alloc(n int) []byte {
	if cap(t.arena)-len(t.arena) < n {
		t.arena = make([]byte, 0, max(n, arenaChunk))
	}
	i := len(t.arena)
	t.arena = t.arena[:i+n]
	return t.arena[i : i : i+n]
}

// hold copies b into the arena, for a Put.
func (t *boltTx) hold(b []byte) []byte { return append(t.alloc(len(b)), b...) }

// seqKey returns seq's key in the arena, for a Put.
func (t *boltTx) seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(t.alloc(8), seq) }

// lookupSeq returns seq's key in t.key, for a Get or Delete (which do not
// keep the key); it is valid until the next call.
func (t *boltTx) lookupSeq(seq uint64) []byte {
	binary.BigEndian.PutUint64(t.key[:], seq)
	return t.key[:]
}

// flush writes back the changed operation records. The committer calls it
// after the batch's writes and before Commit; an error is a storage error
// and the transaction must be rolled back.
func (t *boltTx) flush() error {
	if t.failFlush != nil {
		if err := t.failFlush(); err != nil {
			return &storageError{err}
		}
	}
	for _, k := range t.dirty {
		r := t.ops[k]
		t.tmp = appendKey(t.tmp[:0], k.Org, k.Project, k.Op)
		key := t.hold(t.tmp)
		t.tmp = encodeOp(t.tmp[:0], r)
		if err := putRaw(t, bucketOps, key, t.tmp); err != nil {
			return err
		}
		r.dirty = false
	}
	t.dirty = t.dirty[:0]
	return nil
}

func (t *boltTx) bucket(name []byte) (*bbolt.Bucket, error) {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("ledger/bolt: bucket %q missing: %w", name, ledger.ErrCorrupt)
	}
	return b, nil
}

func get[T any](t *boltTx, bucket, key []byte) (T, bool, error) {
	var v T
	b, err := t.bucket(bucket)
	if err != nil {
		return v, false, err
	}
	raw, err := lookup(b, bucket, key)
	if err != nil || raw == nil {
		return v, false, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucket, key, ledger.ErrCorrupt, err)
	}
	return v, true, nil
}

func put(t *boltTx, bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return &storageError{fmt.Errorf("encoding %s record: %w", bucket, err)}
	}
	return putRaw(t, bucket, key, raw)
}

// putRaw stores payload under key in bucket, sealed with its checksum
// (seal.go) in the arena; key must stay valid until the transaction ends
// (bbolt keeps it).
func putRaw(t *boltTx, bucket, key, payload []byte) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return &storageError{err}
	}
	if err := b.Put(key, seal(t.alloc(len(payload)+sumSize), bucket, key, payload)); err != nil {
		return &storageError{fmt.Errorf("put %s: %w", bucket, err)}
	}
	return nil
}

func scan[T any](t *boltTx, bucket, prefix []byte) ([]T, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	var out []T
	err = scanSealed(b, bucket, prefix, prefix, func(k, raw []byte) (bool, error) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return false, fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucket, k, ledger.ErrCorrupt, err)
		}
		out = append(out, v)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

// op returns the stored record of operation k (shared with the memo: the
// caller must not modify it).
func (t *boltTx) op(k core.OpKey) (*opRecord, bool, error) {
	if r, ok := t.ops[k]; ok {
		return r, true, nil
	}
	if r, ok := t.committed.get(k); ok {
		t.ops[k] = r
		return r, true, nil
	}
	b, err := t.bucket(bucketOps)
	if err != nil {
		return nil, false, err
	}
	raw, err := lookup(b, bucketOps, opKey(k))
	if err != nil || raw == nil {
		return nil, false, err
	}
	r, err := decodeOp(k, raw)
	if err != nil {
		return nil, false, fmt.Errorf("ledger/bolt: operation %q: %w", k.Op, err)
	}
	t.ops[k] = &r
	return &r, true, nil
}

// putOp makes r operation k's record; flush writes it to the bucket.
func (t *boltTx) putOp(k core.OpKey, r *opRecord) error {
	if t.tx.DB() == nil || !t.tx.Writable() {
		return &storageError{fmt.Errorf("put %s: %w", bucketOps, bberrors.ErrTxNotWritable)}
	}
	if old, ok := t.ops[k]; !ok || !old.dirty {
		t.dirty = append(t.dirty, k)
	}
	r.dirty = true
	t.ops[k] = r
	return nil
}

func (t *boltTx) Op(k core.OpKey) (core.OpRecord, bool, error) {
	r, ok, err := t.op(k)
	if err != nil || !ok {
		return core.OpRecord{}, ok, err
	}
	out := r.OpRecord
	out.Attempts = slices.Clone(out.Attempts)
	if out.Result != nil {
		res := *out.Result
		res.ArtifactRefs = slices.Clone(res.ArtifactRefs)
		out.Result = &res
	}
	return out, true, nil
}

// PutOp stores rec and keeps the operation's staged effect index, which
// core does not see.
func (t *boltTx) PutOp(k core.OpKey, rec core.OpRecord) error {
	nr := &opRecord{OpRecord: rec}
	nr.Attempts = slices.Clone(rec.Attempts) // the memo must not share the caller's arrays
	if rec.Result != nil {
		res := *rec.Result
		res.ArtifactRefs = slices.Clone(res.ArtifactRefs)
		nr.Result = &res
	}
	old, ok, err := t.op(k)
	if err != nil {
		return &storageError{err}
	}
	if ok {
		nr.staged = old.staged
	}
	return t.putOp(k, nr)
}

// seq returns the sequence number of effect k: from the memo, the
// operation's staged index, then effidx.
func (t *boltTx) seq(k core.EffectKey) (uint64, bool, error) {
	if s, ok := t.seqs[k]; ok {
		return s, true, nil
	}
	r, ok, err := t.op(k.OpKey)
	if err != nil || !ok {
		return 0, false, err
	}
	for _, s := range r.staged {
		if s.id == k.Effect {
			t.seqs[k] = s.seq
			return s.seq, true, nil
		}
	}
	b, err := t.bucket(bucketEffIdx)
	if err != nil {
		return 0, false, err
	}
	t.tmp = appendKey(t.tmp[:0], k.Org, k.Project, k.Op, k.Effect)
	raw, err := lookup(b, bucketEffIdx, t.tmp)
	if err != nil || raw == nil {
		return 0, false, err
	}
	if len(raw) != 8 {
		return 0, false, fmt.Errorf("ledger/bolt: index entry of effect %q of operation %q has %d bytes, want 8: %w", k.Effect, k.Op, len(raw), ledger.ErrCorrupt)
	}
	s := binary.BigEndian.Uint64(raw)
	t.seqs[k] = s
	return s, true, nil
}

// effectAt reads the effect record at seq and checks that it is effect k.
func (t *boltTx) effectAt(seq uint64, k core.EffectKey) (ledger.Effect, error) {
	b, err := t.bucket(bucketEffects)
	if err != nil {
		return ledger.Effect{}, err
	}
	raw, err := lookup(b, bucketEffects, t.lookupSeq(seq))
	if err != nil {
		return ledger.Effect{}, err
	}
	if raw == nil {
		return ledger.Effect{}, fmt.Errorf("ledger/bolt: effect %q of operation %q: index names record %d, which is missing: %w", k.Effect, k.Op, seq, ledger.ErrCorrupt)
	}
	e, err := decodeEffect(raw)
	if err != nil {
		return ledger.Effect{}, fmt.Errorf("ledger/bolt: effect record %d: %w", seq, err)
	}
	if e.Scope != k.Scope() || e.OperationID != k.Op || e.LogicalEffectID != k.Effect {
		return ledger.Effect{}, fmt.Errorf("ledger/bolt: effect %q of operation %q: index names record %d, which holds effect %q of operation %q: %w",
			k.Effect, k.Op, seq, e.LogicalEffectID, e.OperationID, ledger.ErrCorrupt)
	}
	return e, nil
}

func (t *boltTx) Effect(k core.EffectKey) (ledger.Effect, bool, error) {
	seq, ok, err := t.seq(k)
	if err != nil || !ok {
		return ledger.Effect{}, false, err
	}
	e, err := t.effectAt(seq, k)
	if err != nil {
		return ledger.Effect{}, false, err
	}
	return e, true, nil
}

// PutEffect rewrites a recorded effect in place. A new effect takes the
// next sequence number and is staged in its operation's record, which is
// flushed to effidx when it holds too much (see the layout comment).
func (t *boltTx) PutEffect(k core.EffectKey, e ledger.Effect) error {
	seq, ok, err := t.seq(k)
	if err != nil {
		return &storageError{err}
	}
	if !ok {
		if seq, err = t.stage(k); err != nil {
			return err
		}
	}
	t.tmp = encodeEffect(t.tmp[:0], &e)
	return putRaw(t, bucketEffects, t.seqKey(seq), t.tmp)
}

func (t *boltTx) stage(k core.EffectKey) (uint64, error) {
	r, ok, err := t.op(k.OpKey)
	if err != nil {
		return 0, &storageError{err}
	}
	if !ok {
		return 0, &storageError{fmt.Errorf("effect %q of operation %q: no operation record: %w", k.Effect, k.Op, ledger.ErrCorrupt)}
	}
	effects, err := t.bucket(bucketEffects)
	if err != nil {
		return 0, &storageError{err}
	}
	seq, err := effects.NextSequence()
	if err != nil {
		return 0, &storageError{fmt.Errorf("effect sequence: %w", err)}
	}
	// A damaged sequence (it is in the bucket's header, which no checksum
	// covers) must not make a new effect overwrite a recorded one.
	if effects.Get(t.lookupSeq(seq)) != nil {
		return 0, &storageError{fmt.Errorf("bucket %q: its sequence gave %d, which holds a record already: %w", bucketEffects, seq, ledger.ErrCorrupt)}
	}
	nr := &opRecord{OpRecord: r.OpRecord}
	nr.staged = append(slices.Clip(r.staged), stagedEffect{id: k.Effect, seq: seq})
	if n := stagedBytes(nr.staged); len(nr.staged) > maxStaged || n > maxStagedBytes {
		for _, s := range nr.staged {
			var v [8]byte
			binary.BigEndian.PutUint64(v[:], s.seq)
			if err := putRaw(t, bucketEffIdx, t.hold(appendKey(t.tmp[:0], k.Org, k.Project, k.Op, s.id)), v[:]); err != nil {
				return 0, err
			}
		}
		nr.staged = nil
	}
	if err := t.putOp(k.OpKey, nr); err != nil {
		return 0, err
	}
	t.seqs[k] = seq
	return seq, nil
}

func stagedBytes(s []stagedEffect) int {
	n := 0
	for _, e := range s {
		n += len(e.id)
	}
	return n
}

// Effects returns the operation's effects, staged and flushed, ordered by
// logical effect id.
func (t *boltTx) Effects(k core.OpKey) ([]ledger.Effect, error) {
	r, ok, err := t.op(k)
	if err != nil {
		return nil, err
	}
	var ids []stagedEffect
	if ok {
		ids = append(ids, r.staged...)
	}
	b, err := t.bucket(bucketEffIdx)
	if err != nil {
		return nil, err
	}
	prefix := opKey(k)
	err = scanSealed(b, bucketEffIdx, prefix, prefix, func(key, raw []byte) (bool, error) {
		p, err := splitKey(key)
		if err != nil {
			return false, err
		}
		if len(p) != 4 || len(raw) != 8 {
			return false, fmt.Errorf("ledger/bolt: effect index key %q (%d parts) or value (%d bytes) malformed: %w", key, len(p), len(raw), ledger.ErrCorrupt)
		}
		ids = append(ids, stagedEffect{id: p[3], seq: binary.BigEndian.Uint64(raw)})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ids, func(a, b stagedEffect) int { return strings.Compare(a.id, b.id) })
	out := make([]ledger.Effect, 0, len(ids))
	for i, s := range ids {
		if i > 0 && ids[i-1].id == s.id {
			return nil, fmt.Errorf("ledger/bolt: effect %q of operation %q is indexed twice: %w", s.id, k.Op, ledger.ErrCorrupt)
		}
		e, err := t.effectAt(s.seq, core.EffectKey{OpKey: k, Effect: s.id})
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

func (t *boltTx) Bootstrap(k core.OpKey, id string) (ledger.Bootstrap, bool, error) {
	return get[ledger.Bootstrap](t, bucketBootstraps, appendKey(opKey(k), id))
}

func (t *boltTx) PutBootstrap(k core.OpKey, b ledger.Bootstrap) error {
	if err := put(t, bucketBootstraps, appendKey(opKey(k), b.BootstrapID), b); err != nil {
		return err
	}
	return putRaw(t, bucketBootIDs, []byte(b.BootstrapID), opKey(k))
}

func (t *boltTx) BootstrapOwner(id string) (core.OpKey, bool, error) {
	b, err := t.bucket(bucketBootIDs)
	if err != nil {
		return core.OpKey{}, false, err
	}
	raw, err := lookup(b, bucketBootIDs, []byte(id))
	if err != nil || raw == nil {
		return core.OpKey{}, false, err
	}
	p, err := splitKey(raw)
	if err != nil {
		return core.OpKey{}, false, err
	}
	if len(p) != 3 {
		return core.OpKey{}, false, fmt.Errorf("ledger/bolt: bootstrap id %q names an operation key of %d parts, want 3: %w", id, len(p), ledger.ErrCorrupt)
	}
	return core.OpKey{Org: p[0], Project: p[1], Op: p[2]}, true, nil
}

func (t *boltTx) Bootstraps(k core.OpKey) ([]ledger.Bootstrap, error) {
	return scan[ledger.Bootstrap](t, bucketBootstraps, opKey(k))
}

func (t *boltTx) Artifact(ref string) (ledger.Artifact, bool, error) {
	a, ok, err := get[ledger.Artifact](t, bucketArtifacts, []byte(ref))
	if err != nil || !ok {
		return a, ok, err
	}
	b, err := t.bucket(bucketBlobs)
	if err != nil {
		return a, false, err
	}
	if a.Ref != ref {
		return ledger.Artifact{}, false, fmt.Errorf("ledger/bolt: bucket %q key %q: the record names artifact %q: %w", bucketArtifacts, ref, a.Ref, ledger.ErrCorrupt)
	}
	raw, err := lookup(b, bucketBlobs, []byte(ref))
	if err != nil {
		return ledger.Artifact{}, false, err
	}
	if raw == nil {
		return ledger.Artifact{}, false, fmt.Errorf("ledger/bolt: bucket %q key %q: artifact %q has no bytes: %w", bucketBlobs, ref, ref, ledger.ErrCorrupt)
	}
	a.Bytes = bytes.Clone(raw) // bbolt memory is valid only inside the transaction
	if a.Bytes == nil {
		a.Bytes = []byte{}
	}
	return a, true, nil
}

func (t *boltTx) PutArtifact(a ledger.Artifact) error {
	data := a.Bytes // not in the record's JSON form (json:"-")
	if err := put(t, bucketArtifacts, []byte(a.Ref), a); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	b, err := t.bucket(bucketBlobs)
	if err != nil {
		return &storageError{err}
	}
	// The digest of the bytes was computed by the caller's write (the
	// core checks it against them); the seal is what every later read
	// checks (seal.go).
	key := []byte(a.Ref)
	if err := b.Put(key, seal(make([]byte, 0, len(data)+sumSize), bucketBlobs, key, data)); err != nil {
		return &storageError{fmt.Errorf("put %s: %w", bucketBlobs, err)}
	}
	return nil
}

func (t *boltTx) SetPending(k core.EffectKey, pending bool) error {
	seq, ok, err := t.seq(k)
	if err == nil && !ok {
		err = fmt.Errorf("effect %q of operation %q is not recorded: %w", k.Effect, k.Op, ledger.ErrCorrupt)
	}
	if err != nil {
		return &storageError{fmt.Errorf("pending index: %w", err)}
	}
	b, err := t.bucket(bucketPending)
	if err != nil {
		return &storageError{err}
	}
	if pending {
		return putRaw(t, bucketPending, t.seqKey(seq), nil)
	}
	if err := b.Delete(t.lookupSeq(seq)); err != nil {
		return &storageError{fmt.Errorf("pending index: %w", err)}
	}
	return nil
}

// Pending reads the effect record of every pending sequence number for its
// key and sorts the keys in the order core promises.
func (t *boltTx) Pending() ([]core.EffectKey, error) {
	b, err := t.bucket(bucketPending)
	if err != nil {
		return nil, err
	}
	effects, err := t.bucket(bucketEffects)
	if err != nil {
		return nil, err
	}
	var out []core.EffectKey
	err = b.ForEach(func(k, v []byte) error {
		if _, err := sealed(bucketPending, k, v); err != nil {
			return err
		}
		if len(k) != 8 {
			return fmt.Errorf("ledger/bolt: pending key %q has %d bytes, want 8: %w", k, len(k), ledger.ErrCorrupt)
		}
		seq := binary.BigEndian.Uint64(k)
		raw, err := lookup(effects, bucketEffects, k)
		if err != nil {
			return err
		}
		if raw == nil {
			return fmt.Errorf("ledger/bolt: pending effect record %d is missing: %w", seq, ledger.ErrCorrupt)
		}
		e, err := decodeEffect(raw)
		if err != nil {
			return fmt.Errorf("ledger/bolt: effect record %d: %w", seq, err)
		}
		out = append(out, core.EffectKey{OpKey: core.KeyOf(e.Scope, e.OperationID), Effect: e.LogicalEffectID})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b core.EffectKey) int {
		return cmp.Or(strings.Compare(a.Org, b.Org), strings.Compare(a.Project, b.Project), strings.Compare(a.Op, b.Op), strings.Compare(a.Effect, b.Effect))
	})
	return out, nil
}

// ScanOps reads the operation records in key order, which is CompareKeys
// order (appendKey preserves the order of tuples), from the memo when the
// transaction holds a newer record.
func (t *boltTx) ScanOps(scope *ledger.Scope, after *core.OpKey, fn func(core.OpRecord) bool) error {
	b, err := t.bucket(bucketOps)
	if err != nil {
		return err
	}
	var prefix []byte
	if scope != nil {
		prefix = appendKey(nil, scope.OrganizationID, scope.ProjectID)
	}
	start := prefix
	var skip []byte
	if after != nil {
		skip = opKey(*after)
		if bytes.Compare(skip, start) > 0 {
			start = skip
		}
	}
	return scanSealed(b, bucketOps, start, prefix, func(key, raw []byte) (bool, error) {
		if skip != nil && bytes.Compare(key, skip) <= 0 {
			return true, nil
		}
		p, err := splitKey(key)
		if err != nil {
			return false, err
		}
		if len(p) != 3 {
			return false, fmt.Errorf("ledger/bolt: operation key %q has %d parts, want 3: %w", key, len(p), ledger.ErrCorrupt)
		}
		k := core.OpKey{Org: p[0], Project: p[1], Op: p[2]}
		var rec core.OpRecord
		if r, ok := t.ops[k]; ok {
			rec = r.OpRecord
		} else {
			r, err := decodeOp(k, raw)
			if err != nil {
				return false, fmt.Errorf("ledger/bolt: operation %q: %w", k.Op, err)
			}
			rec = r.OpRecord
		}
		rec.Attempts = slices.Clone(rec.Attempts)
		return fn(rec), nil
	})
}

func evidenceKey(k core.OpKey, attemptID string) []byte {
	return appendKey(nil, k.Org, k.Project, k.Op, attemptID)
}

func (t *boltTx) Evidence(k core.OpKey, attemptID string) (ledger.AttemptEvidence, bool, error) {
	return get[ledger.AttemptEvidence](t, bucketEvidence, evidenceKey(k, attemptID))
}

func (t *boltTx) PutEvidence(k core.OpKey, e ledger.AttemptEvidence) error {
	return put(t, bucketEvidence, t.hold(evidenceKey(k, e.AttemptID)), e)
}

func (t *boltTx) Evidences(k core.OpKey) ([]ledger.AttemptEvidence, error) {
	return scan[ledger.AttemptEvidence](t, bucketEvidence, opKey(k))
}
