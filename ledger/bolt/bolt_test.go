package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

func openTemp(t *testing.T) *bolt.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(t.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return openTemp(t) })
}
