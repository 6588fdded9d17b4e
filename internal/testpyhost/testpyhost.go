// Package testpyhost holds a Python test host for the tests and
// benchmarks of warm launch: zeotesthost (the protocol far enough to
// bootstrap, echo and publish, importing pydantic and jsonschema so that
// its start-up costs what the real host's does), its contracts module
// zeotestcontracts (a trusted dependency a zygote may preload), the
// provider demo_provider (imported after bootstrap only), the probe host
// zeotestprobe (one JSON line saying what the process inherited), and two
// modules that make a zygote refuse to fork (zeotestthread,
// zeotestswitch). It is for tests only.
package testpyhost

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed *.py
var files embed.FS

// Install writes the modules into dir, which then belongs on the host's
// PYTHONPATH.
func Install(dir string) error {
	ents, err := files.ReadDir(".")
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := files.ReadFile(e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

var (
	findOnce sync.Once
	found    string
	findErr  error
)

// Interpreter returns the absolute path of the real interpreter behind
// python3 (not a shim) when it has pydantic and jsonschema. Where it has
// not, it skips tb, or fails it when the environment says CI=true: CI
// installs them (.ci/run).
func Interpreter(tb testing.TB) string {
	tb.Helper()
	findOnce.Do(func() {
		out, err := exec.Command("python3", "-c",
			"import sys, pydantic, jsonschema; print(sys.executable)").CombinedOutput()
		if err != nil {
			findErr = fmt.Errorf("python3 with pydantic and jsonschema is not available (%v: %s)", err, bytes.TrimSpace(out))
			return
		}
		found, findErr = filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	})
	if findErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(findErr)
		}
		tb.Skip(findErr)
	}
	return found
}
