package bench

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// TestMain makes this test binary usable as the containment init of the
// hosts it launches contained (contain.Init).
func TestMain(m *testing.M) {
	contain.Init()
	os.Exit(m.Run())
}
