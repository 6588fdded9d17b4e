package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// TestReadOnly: a read-only open reads a file whose permissions forbid
// writing, shares it with other read-only opens, changes no byte of it,
// refuses every write with ErrReadOnly, and is excluded by an owner (a
// running controller's read-write open) and excludes one, with an error
// naming the holder's pid.
func TestReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	populateSmall(t, path)
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ro := bolt.Options{ReadOnly: true, LockTimeout: 100 * time.Millisecond}
	a, err := bolt.Open(path, ro)
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	b, err := bolt.Open(path, ro)
	if err != nil {
		t.Fatalf("second read-only open beside the first: %v", err)
	}
	if v, err := b.Operation(ctx, flipOrgA, "op-0"); err != nil || v.Result == nil {
		t.Fatalf("read through a read-only ledger: %+v, %v", v, err)
	}
	if err := a.Check(ctx); err != nil {
		t.Fatalf("Check of a read-only ledger: %v", err)
	}
	_, err = a.CreateOperation(ctx, ledger.OperationSpec{Scope: flipOrgA, OperationID: "new", CapabilityID: "cap",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m")})
	if !errors.Is(err, bolt.ErrReadOnly) || !errors.Is(err, ledger.ErrNotApplied) {
		t.Errorf("write through a read-only ledger: %v, want ErrReadOnly and ErrNotApplied", err)
	}
	if _, err := a.AcquireLease(ctx, "c", time.Minute); !errors.Is(err, bolt.ErrReadOnly) {
		t.Errorf("AcquireLease through a read-only ledger: %v, want ErrReadOnly", err)
	}
	// An owner cannot take the file from readers.
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := bolt.Open(path, bolt.Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, ledger.ErrLocked) {
		t.Errorf("read-write open beside readers: %v, want ErrLocked", err)
		if err == nil {
			l.Close(ctx)
		}
	}
	for _, l := range []*bolt.Ledger{a, b} {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("read-only use changed the file")
	}
	// Readers cannot share the file with its owner; they say who it is.
	owner, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close(ctx)
	_, err = bolt.Open(path, ro)
	if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) ||
		!strings.Contains(err.Error(), "ledger/postgres for many readers") {
		t.Errorf("read-only open beside the owner: %v, want ErrLocked naming pid %d and what to do", err, os.Getpid())
	}
}

// TestReadOnlyRefusesWhatItWouldWrite: a read-only open never creates a
// file and never upgrades one; it says how to upgrade.
func TestReadOnlyRefusesWhatItWouldWrite(t *testing.T) {
	dir := t.TempDir()
	ro := bolt.Options{ReadOnly: true}
	if _, err := bolt.Open(filepath.Join(dir, "none.db"), ro); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of no file: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a read-only open created the file")
	}
	path := filepath.Join(dir, "ledger.db")
	populateSmall(t, path)
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		if err := stripChecksums(tx, false); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("6"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = bolt.Open(path, ro)
	if !errors.Is(err, bolt.ErrReadOnly) || !strings.Contains(err.Error(), "format 6 must be upgraded to format 8") {
		t.Fatalf("read-only open of a format 6 file: %v, want ErrReadOnly saying to upgrade", err)
	}
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("read-write open (upgrade) of the format 6 file: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, err = bolt.Open(path, ro)
	if err != nil {
		t.Fatalf("read-only open after the upgrade: %v", err)
	}
	if err := l.Check(context.Background()); err != nil {
		t.Errorf("Check after the upgrade: %v", err)
	}
	l.Close(context.Background())
}
