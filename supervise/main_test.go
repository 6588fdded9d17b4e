package supervise_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testbin"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

func TestMain(m *testing.M) {
	if os.Getenv(controllerEnv) != "" {
		// This process is a controller of the restart test (see
		// controllerMain), not a test run.
		os.Exit(controllerMain())
	}
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "supervise-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if hostsimPath, err = testbin.Build(dir, "zeo-hostsim", "github.com/zeoruntime/runtimeipc/internal/hostsim/cmd/zeo-hostsim"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
