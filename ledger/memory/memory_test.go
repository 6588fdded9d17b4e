package memory_test

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return memory.New() })
}

func TestCatalogueConformance(t *testing.T) {
	ledgertest.RunCatalogue(t, func(t *testing.T) ledgertest.CatalogueLedger { return memory.New() })
}

func TestMain(m *testing.M) {
	longtest.ShrinkRapid()
	os.Exit(m.Run())
}
