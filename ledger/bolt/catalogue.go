package bolt

import (
	"bytes"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// The catalogue's records (cataloguestore.Store) live in one bucket,
// keyed by the record's kind (one byte) and its core.Key tuple, so that a
// prefix scan of a kind and tuple prefix yields records in key order.
// boltTx is the core.CatTx of a transaction.

var _ cataloguestore.Store = (*Ledger)(nil)

// catKey returns kind and key as a bucket key in the arena (bbolt keeps a
// Put's key until the transaction ends).
func (t *boltTx) catKey(kind core.Kind, key string) []byte {
	b := t.alloc(1 + len(key))
	b = append(b, byte(kind))
	return append(b, key...)
}

func (t *boltTx) Rec(kind core.Kind, key string) ([]byte, bool, error) {
	b, err := t.bucket(bucketCatalogue)
	if err != nil {
		return nil, false, err
	}
	v, err := lookup(b, bucketCatalogue, t.catKey(kind, key))
	if err != nil || v == nil {
		return nil, false, err
	}
	return bytes.Clone(v), true, nil
}

func (t *boltTx) PutRec(kind core.Kind, key string, v []byte) error {
	return putRaw(t, bucketCatalogue, t.catKey(kind, key), v)
}

func (t *boltTx) DelRec(kind core.Kind, key string) error {
	b, err := t.bucket(bucketCatalogue)
	if err != nil {
		return &storageError{err}
	}
	if err := b.Delete(t.catKey(kind, key)); err != nil {
		return &storageError{err}
	}
	return nil
}

func (t *boltTx) ScanRecs(kind core.Kind, prefix string, fn func(string, []byte) bool) error {
	b, err := t.bucket(bucketCatalogue)
	if err != nil {
		return err
	}
	p := append([]byte{byte(kind)}, prefix...)
	return scanSealed(b, bucketCatalogue, p, p, func(k, v []byte) (bool, error) {
		return fn(string(k[1:]), bytes.Clone(v)), nil
	})
}

func (t *boltTx) Operation(k core.OpKey) (ledger.Operation, bool, error) {
	r, ok, err := t.op(k)
	if err != nil || !ok {
		return ledger.Operation{}, ok, err
	}
	return r.Op, true, nil
}

func (t *boltTx) Now() time.Time { return time.Now() }

// Lock does nothing: bbolt runs one write transaction at a time.
func (t *boltTx) Lock(core.Kind, string) error { return nil }
