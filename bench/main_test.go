package bench

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
)

// TestMain calls launch.Init first: the hosts that the benchmarks launch
// with the default containment start as this binary, which applies the
// containment and then executes the host.
func TestMain(m *testing.M) {
	launch.Init()
	os.Exit(m.Run())
}
