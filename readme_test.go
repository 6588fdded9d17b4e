package runtimeipc_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLinks checks that every test the README names as the proof of
// a guarantee exists where the link points: a Go test function in the
// linked file, or a named case of the ledger conformance suite.
func TestReadmeLinks(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile("\\[`([A-Za-z0-9_]+)`\\]\\(([^)#]+)\\)").FindAllStringSubmatch(string(raw), -1)
	checked := 0
	for _, l := range links {
		name, path := l[1], l[2]
		if !strings.HasSuffix(path, "_test.go") && !strings.HasPrefix(path, "ledger/ledgertest/") {
			continue
		}
		src, err := os.ReadFile(filepath.FromSlash(path))
		if err != nil {
			t.Errorf("README links %s to %s: %v", name, path, err)
			continue
		}
		want := "func " + name + "("
		if strings.HasPrefix(path, "ledger/ledgertest/") {
			want = `{"` + name + `", `
		}
		if !strings.Contains(string(src), want) {
			t.Errorf("README links %s to %s, which does not define it", name, path)
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d test links found in the README; the guarantees section should link each to its test", checked)
	}
}
