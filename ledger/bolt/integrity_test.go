package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// TestDamagedRecordReads: the three failures of the report, each made
// by editing the file with bbolt itself (so the page structure stays
// sound and only the ledger's own checks can find them): artifact bytes
// changed under their digest, an artifact record's organization changed
// to another one, and an operation record moved under another key. Each
// read of the damaged record is ErrCorrupt naming it; none is an answer.
func TestDamagedRecordReads(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name, want string
		damage     func(tx *bbolt.Tx) error
		read       func(l *bolt.Ledger, ref string) error
	}{
		{"artifact bytes", `bucket "blobs" key "artifact_`, func(tx *bbolt.Tx) error {
			return editFirst(tx, "blobs", func(k, v []byte) ([]byte, []byte) { v[3] ^= 1; return k, v })
		}, func(l *bolt.Ledger, ref string) error { _, err := l.Artifact(ctx, flipOrgA, ref); return err }},
		{"artifact organization", `bucket "artifacts" key "artifact_`, func(tx *bbolt.Tx) error {
			return editFirst(tx, "artifacts", func(k, v []byte) ([]byte, []byte) {
				return k, bytes.Replace(v, []byte(`"org-a"`), []byte(`"org-c"`), 1)
			})
		}, func(l *bolt.Ledger, ref string) error { _, err := l.Artifact(ctx, flipOrgC, ref); return err }},
		{"operation moved", `bucket "ops" key`, func(tx *bbolt.Tx) error {
			return editFirst(tx, "ops", func(k, v []byte) ([]byte, []byte) {
				return bytes.Replace(k, []byte("op-0"), []byte("op-9"), 1), v
			})
		}, func(l *bolt.Ledger, _ string) error { _, err := l.Operation(ctx, flipOrgA, "op-9"); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			populateSmall(t, path)
			l, err := bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			v, err := l.Operation(ctx, flipOrgA, "op-0")
			if err != nil {
				t.Fatal(err)
			}
			ref := v.Result.ArtifactRefs[0]
			if err := l.Close(ctx); err != nil {
				t.Fatal(err)
			}
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(tt.damage); err != nil {
				t.Fatal(err)
			}
			db.Close()
			l, err = bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			err = tt.read(l, ref)
			if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("read of the damaged record: %v, want ErrCorrupt naming %s", err, tt.want)
			}
			if err := l.Check(ctx); !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Check: %v, want ErrCorrupt", err)
			}
		})
	}
}

// editFirst replaces the first record of bucket by what edit makes of
// (a copy of) it.
func editFirst(tx *bbolt.Tx, bucket string, edit func(k, v []byte) ([]byte, []byte)) error {
	b := tx.Bucket([]byte(bucket))
	k, v := b.Cursor().First()
	if k == nil {
		return errors.New("empty bucket " + bucket)
	}
	nk, nv := edit(bytes.Clone(k), bytes.Clone(v))
	if !bytes.Equal(nk, k) {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return b.Put(nk, nv)
}
