package bench

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
)

// TestMain makes this test binary usable as the containment init of the
// hosts it launches contained (launch.Init).
func TestMain(m *testing.M) {
	launch.Init()
	os.Exit(m.Run())
}
