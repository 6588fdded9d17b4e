package bench

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
)

// TestMain makes this test binary the containment init of the hosts the
// benchmarks launch (launch.Init): hosts are contained by default on Linux.
func TestMain(m *testing.M) {
	launch.Init()
	os.Exit(m.Run())
}
