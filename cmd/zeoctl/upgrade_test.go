package main_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// TestLedgerUpgrade: the inspection commands open a bolt file read-only
// and so refuse one of an earlier format, naming the command that
// upgrades it; ledger upgrade does, and inspection then works.
func TestLedgerUpgrade(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Format 6: the same buckets, records without checksums (this ledger
	// has none), and the stamp.
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("6")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path), 1, nil,
		[]string{"format 6 must be upgraded to format 8", "zeoctl ledger upgrade -ledger " + path})
	wantRun(t, zeoctl(t, "ledger", "upgrade", "-ledger", path), 0, []string{"a format 8 bolt ledger; every record checked"}, nil)
	wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path), 0, []string{"no operations"}, nil)
	db, err = bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("format")); !bytes.Equal(v, []byte("8")) {
			t.Errorf("format after ledger upgrade: %q, want 8", v)
		}
		return nil
	})
}
