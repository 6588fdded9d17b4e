package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// File layout, format version 2 (version 1 had no bootids index; this
// build refuses it rather than miss a reused bootstrap id). Every bucket is
// top level; keys are tuples in an order-preserving, prefix-free encoding (see appendKey), so a
// prefix scan over an operation's key yields its records in id order.
//
//	meta       "format" → "2"
//	ops        (org, project, op)            → JSON core.OpRecord
//	effects    (org, project, op, effect)    → JSON ledger.Effect
//	bootstraps (org, project, op, bootstrap) → JSON ledger.Bootstrap
//	bootids    bootstrap                     → (org, project, op) that owns it
//	artifacts  ref                           → JSON ledger.Artifact (bytes are not in its JSON form)
//	blobs      ref                           → artifact bytes
//	pending    (org, project, op, effect)    → "" (effects to reconcile)
var (
	bucketMeta       = []byte("meta")
	bucketOps        = []byte("ops")
	bucketEffects    = []byte("effects")
	bucketBootstraps = []byte("bootstraps")
	bucketBootIDs    = []byte("bootids")
	bucketArtifacts  = []byte("artifacts")
	bucketBlobs      = []byte("blobs")
	bucketPending    = []byte("pending")
	allBuckets       = [][]byte{bucketMeta, bucketOps, bucketEffects, bucketBootstraps, bucketBootIDs, bucketArtifacts, bucketBlobs, bucketPending}

	keyFormat     = []byte("format")
	formatVersion = []byte("2")
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

// appendKey appends each part, escaping 0x00 as 0x00 0xff and ending each
// part with 0x00 0x01. Byte order of encoded tuples equals the
// lexicographic order of the tuples, and no encoded tuple is a prefix of
// another with a different first part.
func appendKey(b []byte, parts ...string) []byte {
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if p[i] == 0 {
				b = append(b, 0, 0xff)
			} else {
				b = append(b, p[i])
			}
		}
		b = append(b, 0, 1)
	}
	return b
}

// splitKey decodes a key made by appendKey.
func splitKey(k []byte) ([]string, error) {
	var parts []string
	var cur []byte
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			cur = append(cur, k[i])
			continue
		}
		if i+1 >= len(k) {
			return nil, fmt.Errorf("ledger/bolt: key %q: truncated escape: %w", k, ledger.ErrCorrupt)
		}
		i++
		switch k[i] {
		case 0xff:
			cur = append(cur, 0)
		case 1:
			parts = append(parts, string(cur))
			cur = cur[:0]
		default:
			return nil, fmt.Errorf("ledger/bolt: key %q: bad escape: %w", k, ledger.ErrCorrupt)
		}
	}
	if len(cur) != 0 {
		return nil, fmt.Errorf("ledger/bolt: key %q: unterminated part: %w", k, ledger.ErrCorrupt)
	}
	return parts, nil
}

func opKey(k core.OpKey) []byte { return appendKey(nil, k.Org, k.Project, k.Op) }
func effectKey(k core.EffectKey) []byte {
	return appendKey(nil, k.Org, k.Project, k.Op, k.Effect)
}

// boltTx adapts a bbolt read-write or read-only transaction to core.Tx.
type boltTx struct{ tx *bbolt.Tx }

func (t boltTx) bucket(name []byte) (*bbolt.Bucket, error) {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("ledger/bolt: bucket %q missing: %w", name, ledger.ErrCorrupt)
	}
	return b, nil
}

func get[T any](t boltTx, bucket, key []byte) (T, bool, error) {
	var v T
	b, err := t.bucket(bucket)
	if err != nil {
		return v, false, err
	}
	raw := b.Get(key)
	if raw == nil {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucket, key, ledger.ErrCorrupt, err)
	}
	return v, true, nil
}

func put(t boltTx, bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return &storageError{fmt.Errorf("encoding %s record: %w", bucket, err)}
	}
	return putRaw(t, bucket, key, raw)
}

func putRaw(t boltTx, bucket, key, raw []byte) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return &storageError{err}
	}
	if err := b.Put(key, raw); err != nil {
		return &storageError{fmt.Errorf("put %s: %w", bucket, err)}
	}
	return nil
}

func scan[T any](t boltTx, bucket, prefix []byte) ([]T, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	var out []T
	c := b.Cursor()
	for k, raw := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucket, k, ledger.ErrCorrupt, err)
		}
		out = append(out, v)
	}
	if out == nil {
		out = []T{}
	}
	return out, nil
}

func (t boltTx) Op(k core.OpKey) (core.OpRecord, bool, error) {
	return get[core.OpRecord](t, bucketOps, opKey(k))
}

func (t boltTx) PutOp(k core.OpKey, r core.OpRecord) error { return put(t, bucketOps, opKey(k), r) }

func (t boltTx) Effect(k core.EffectKey) (ledger.Effect, bool, error) {
	return get[ledger.Effect](t, bucketEffects, effectKey(k))
}

func (t boltTx) PutEffect(k core.EffectKey, e ledger.Effect) error {
	return put(t, bucketEffects, effectKey(k), e)
}

func (t boltTx) Effects(k core.OpKey) ([]ledger.Effect, error) {
	return scan[ledger.Effect](t, bucketEffects, opKey(k))
}

func (t boltTx) Bootstrap(k core.OpKey, id string) (ledger.Bootstrap, bool, error) {
	return get[ledger.Bootstrap](t, bucketBootstraps, appendKey(opKey(k), id))
}

func (t boltTx) PutBootstrap(k core.OpKey, b ledger.Bootstrap) error {
	if err := put(t, bucketBootstraps, appendKey(opKey(k), b.BootstrapID), b); err != nil {
		return err
	}
	return putRaw(t, bucketBootIDs, []byte(b.BootstrapID), opKey(k))
}

func (t boltTx) BootstrapOwner(id string) (core.OpKey, bool, error) {
	b, err := t.bucket(bucketBootIDs)
	if err != nil {
		return core.OpKey{}, false, err
	}
	raw := b.Get([]byte(id))
	if raw == nil {
		return core.OpKey{}, false, nil
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

func (t boltTx) Bootstraps(k core.OpKey) ([]ledger.Bootstrap, error) {
	return scan[ledger.Bootstrap](t, bucketBootstraps, opKey(k))
}

func (t boltTx) Artifact(ref string) (ledger.Artifact, bool, error) {
	a, ok, err := get[ledger.Artifact](t, bucketArtifacts, []byte(ref))
	if err != nil || !ok {
		return a, ok, err
	}
	b, err := t.bucket(bucketBlobs)
	if err != nil {
		return a, false, err
	}
	raw := b.Get([]byte(ref))
	if raw == nil {
		return a, false, fmt.Errorf("ledger/bolt: artifact %q has no bytes: %w", ref, ledger.ErrCorrupt)
	}
	a.Bytes = bytes.Clone(raw) // bbolt memory is valid only inside the transaction
	if a.Bytes == nil {
		a.Bytes = []byte{}
	}
	return a, true, nil
}

func (t boltTx) PutArtifact(a ledger.Artifact) error {
	data := a.Bytes // not in the record's JSON form (json:"-")
	if err := put(t, bucketArtifacts, []byte(a.Ref), a); err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	return putRaw(t, bucketBlobs, []byte(a.Ref), data)
}

func (t boltTx) SetPending(k core.EffectKey, pending bool) error {
	b, err := t.bucket(bucketPending)
	if err != nil {
		return &storageError{err}
	}
	if pending {
		err = b.Put(effectKey(k), []byte{})
	} else {
		err = b.Delete(effectKey(k))
	}
	if err != nil {
		return &storageError{fmt.Errorf("pending index: %w", err)}
	}
	return nil
}

func (t boltTx) Pending() ([]core.EffectKey, error) {
	b, err := t.bucket(bucketPending)
	if err != nil {
		return nil, err
	}
	var out []core.EffectKey
	err = b.ForEach(func(k, _ []byte) error {
		p, err := splitKey(k)
		if err != nil {
			return err
		}
		if len(p) != 4 {
			return fmt.Errorf("ledger/bolt: pending key %q has %d parts, want 4: %w", k, len(p), ledger.ErrCorrupt)
		}
		out = append(out, core.EffectKey{OpKey: core.OpKey{Org: p[0], Project: p[1], Op: p[2]}, Effect: p[3]})
		return nil
	})
	return out, err
}
