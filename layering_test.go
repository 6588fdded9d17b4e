package runtimeipc_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/zeoruntime/runtimeipc"

// floor says which of the module's two internal floors (doc/design.md,
// “Packages”) a package of the module stands on, if any.
type floor int

const (
	library    floor = iota // public packages and commands
	foundation              // internal/<name> and every nested internal/ that is not harness
	harness                 // internal/testkit/..., the public test kits, test programs
)

func floorOf(path string) floor {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	switch {
	case rel == "internal/testkit" || strings.HasPrefix(rel, "internal/testkit/"),
		rel == "supervise/supervisetest", rel == "ledger/ledgertest",
		rel == "capabilityruntime/process/internal/testruntime":
		return harness
	case strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/"):
		return foundation
	}
	return library
}

// mayImportHarness reports whether a package's own (non-test) code may
// depend on the test harness: the harness itself, the examples and the
// operator command (its demo and hidden host mode run the simulated host).
// Tests of every package may, and so may the nested bench module.
func mayImportHarness(path string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
	return floorOf(path) == harness || rel == "cmd/zeoctl" ||
		rel == "examples" || strings.HasPrefix(rel, "examples/")
}

// groundFloorMayImport is what the top-level ground floor, internal/<name>,
// may import from the module: itself and canon, the one public package
// below everything.
func groundFloorMayImport(dep string) bool {
	rel := strings.TrimPrefix(strings.TrimPrefix(dep, module), "/")
	return rel == "canon" || (strings.HasPrefix(rel, "internal/") && floorOf(dep) == foundation &&
		strings.Count(rel, "/") == 1)
}

// TestLayering holds the folder layering of doc/design.md, “Packages”, over
// the module's non-test import graph as `go list -deps` sees it:
//
//   - no package outside the harness, examples/ and cmd/zeoctl depends on a
//     harness package, directly or not (so the foundation imports no
//     harness package, and no library code ships the simulated host);
//   - the ground floor, internal/<name>, depends on nothing of the module
//     but canon and itself, so every arrow to it points down.
//
// Test files are free to use the harness; they are not part of the graph.
func TestLayering(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go test puts GOROOT/bin first on PATH, yet no go command was found: %v", err)
	}
	cmd := exec.Command(gobin, "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	counts := map[floor]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg, deps := fields[0], slices.DeleteFunc(fields[1:], func(d string) bool {
			return d != module && !strings.HasPrefix(d, module+"/")
		})
		counts[floorOf(pkg)]++
		for _, d := range deps {
			if floorOf(d) == harness && !mayImportHarness(pkg) {
				t.Errorf("%s depends on the test harness package %s; only tests, the harness, examples/, bench/ and cmd/zeoctl may", pkg, d)
			}
			rel := strings.TrimPrefix(pkg, module+"/")
			if floorOf(pkg) == foundation && strings.Count(rel, "/") == 1 && !groundFloorMayImport(d) {
				t.Errorf("ground-floor package %s depends on %s; internal/<name> may import only canon and the ground floor", pkg, d)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The rules above would hold vacuously if the floors were misnamed.
	for f, name := range map[floor]string{library: "library", foundation: "foundation", harness: "harness"} {
		if counts[f] == 0 {
			t.Errorf("go list found no %s package; the floor names in this test no longer match the tree", name)
		}
	}
}
