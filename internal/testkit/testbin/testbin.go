// Package testbin builds this module's commands for tests that run them as
// real processes (the simulated host, zeoctl). It is for tests only.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build builds pkg (an import path, or a directory relative to the
// calling test's package) into dir/name and returns the executable's path.
// The build is static (CGO_ENABLED=0) and -trimpath, as bench/ builds its
// tools: a static binary starts without the dynamic loader, which every
// launch would pay. The go tool's output goes to stderr.
func Build(dir, name, pkg string) (string, error) {
	// go test puts the bin directory of the go tool running the tests
	// first on the test binary's PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("testbin: go tool not found on PATH: %w", err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testbin: building %s: %w", pkg, err)
	}
	return out, nil
}

// HostsimPackage is the import path of the simulated host's executable.
const HostsimPackage = "github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/cmd/zeo-hostsim"

// InitPackage is the import path of the containment init command.
const InitPackage = "github.com/zeoruntime/runtimeipc/cmd/zeo-launch-init"

// InitBeside returns the path of the containment init RunWithHostsim
// builds beside the simulated host at hostsim: a launcher's
// Containment.InitPath that starts in a fraction of the time a test
// binary re-executed takes (its package inits, the race detector's).
func InitBeside(hostsim string) string {
	return filepath.Join(filepath.Dir(hostsim), "zeo-launch-init")
}

// RunWithHostsim is the body of a TestMain whose tests launch the
// simulated host: it builds the host (and the containment init, see
// InitBeside) into a temporary directory, stores the host's path in
// *path, runs the tests and removes the directory. It returns the exit
// code for os.Exit.
func RunWithHostsim(m *testing.M, path *string) int {
	dir, err := os.MkdirTemp("", "hostsim-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if *path, err = Build(dir, "zeo-hostsim", HostsimPackage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err = Build(dir, "zeo-launch-init", InitPackage); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
