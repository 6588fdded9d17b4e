package supervise_test

import (
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

func TestMain(m *testing.M) {
	// The contained hosts of these tests start as this binary
	// (contain.Init, which RunHost calls), and the Example functions' hosts
	// are this binary re-executed as supervisetest's simulated host.
	supervisetest.RunHost()
	if os.Getenv(controllerEnv) != "" {
		// This process is a controller of the restart test (see
		// controllerMain), not a test run.
		os.Exit(controllerMain())
	}
	if i := os.Getenv(fleetEnv); i != "" {
		// A controller of the fleet test (fleetMain, Linux only).
		os.Exit(fleetMain(i))
	}
	longtest.ShrinkRapid()
	os.Exit(testbin.RunWithHostsim(m, &hostsimPath))
}
