package supervisetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeparateModule builds a module of its own outside this module's
// tree (testdata/embedder, with a replace of this module by this working
// tree) whose tests use only supervisetest and the memory ledger to test
// their own Dispatcher and Authority, an uncertain effect and a crash
// included, and runs them with go test. It proves the test host is usable
// from another module: nothing it needs is internal.
func TestSeparateModule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: cannot build a separate module")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mod, err := os.ReadFile(filepath.Join("testdata", "embedder", "go.mod.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte(strings.ReplaceAll(string(mod), "REPO_ROOT", root)))
	for _, f := range []struct{ from, to string }{
		{filepath.Join("testdata", "embedder", "embedder_test.go"), "embedder_test.go"},
		// This module's sums cover every dependency the embedder gets
		// through it, so nothing is downloaded once the shared module
		// cache has them.
		{filepath.Join(root, "go.sum"), "go.sum"},
	} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			t.Fatal(err)
		}
		write(f.to, b)
	}
	cmd := exec.CommandContext(t.Context(), gobin, "test", "-count=1", "./...")
	cmd.Dir = dir
	// GOPROXY, GOMODCACHE and the rest come from the environment; -mod=mod
	// lets go fill in the embedder's requirements from this module's.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go test in the separate module: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ok") {
		t.Fatalf("go test in the separate module passed without saying ok:\n%s", out)
	}
	t.Logf("%s", out)
}
