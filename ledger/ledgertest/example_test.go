package ledgertest_test

import (
	"path/filepath"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// openFresh is what a backend hands the suite: a fresh, empty ledger for
// one subtest, in the subtest's own temporary directory. The suite closes
// it. Replace bolt.Open with your backend's constructor.
func openFresh(t *testing.T) ledger.Ledger {
	l, err := bolt.Open(filepath.Join(t.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// reopen is what a durable backend hands RunDurable: a ledger over the
// files in dir, which the suite closes and opens again.
func reopen(t *testing.T, dir string) ledger.Ledger {
	l, err := bolt.Open(filepath.Join(dir, "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A backend runs the conformance suite from one test of its own (run it
// under -race): Run starts one subtest per guarantee, each on a fresh
// ledger, and ends each with a consistency check of everything the ledger
// holds; a durable backend also runs RunDurable, which closes and reopens
// the ledger. In the backend's test file:
//
//	func TestConformance(t *testing.T) { ledgertest.Run(t, openFresh) }
//	func TestDurable(t *testing.T)     { ledgertest.RunDurable(t, reopen) }
func Example() {
	var (
		_ ledgertest.Opener                            = openFresh
		_ func(t *testing.T, dir string) ledger.Ledger = reopen
	)
}
