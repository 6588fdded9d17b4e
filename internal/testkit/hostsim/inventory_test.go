package hostsim_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

var update = flag.Bool("update", false, "rewrite the example files in testdata/examples from DemoBinding")

// examplesDir is the repository's folder of standalone example files.
const examplesDir = "../../../testdata/examples"

// indented is the canonical JSON of v, indented for reading, with a final
// newline.
func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// TestDemoBindingValid checks that the demo binding passes the inventory
// validation the host applies, and that every manifest is already in the
// materialized form that decoding it again gives.
func TestDemoBindingValid(t *testing.T) {
	b := hostsim.DemoBinding()
	if err := manifest.ValidateBinding(b); err != nil {
		t.Fatalf("ValidateBinding(DemoBinding()) = %v", err)
	}
	for _, m := range b.Manifests {
		raw, err := canon.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := manifest.DecodeManifest(raw)
		if err != nil {
			t.Fatalf("%s: %v", m.ID, err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Errorf("%s changes when decoded again (-before +after):\n%s", m.ID, diff)
		}
	}
}

// TestExampleFiles checks that testdata/examples holds DemoBinding and
// each of its manifests, and that each file decodes and validates on its
// own. Run with -update to rewrite them.
func TestExampleFiles(t *testing.T) {
	b := hostsim.DemoBinding()
	want := map[string][]byte{"binding.json": indented(t, b)}
	for _, m := range b.Manifests {
		want[filepath.Join("manifests", m.ID.Namespace+"."+m.ID.Name+".json")] = indented(t, m)
	}
	if *update {
		for name, data := range want {
			path := filepath.Join(examplesDir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(examplesDir, name))
		if err != nil {
			t.Fatalf("%v (run go test ./internal/testkit/hostsim -run TestExampleFiles -update)", err)
		}
		if diff := cmp.Diff(string(data), string(got)); diff != "" {
			t.Errorf("%s differs from DemoBinding (-want +got; run with -update):\n%s", name, diff)
		}
	}
	raw, err := os.ReadFile(filepath.Join(examplesDir, "binding.json"))
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := manifest.DecodeBinding(raw)
	if err != nil {
		t.Fatalf("binding.json: %v", err)
	}
	if err := manifest.ValidateBinding(decoded); err != nil {
		t.Errorf("binding.json: %v", err)
	}
	for _, m := range b.Manifests {
		raw, err := os.ReadFile(filepath.Join(examplesDir, "manifests", m.ID.Namespace+"."+m.ID.Name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := manifest.DecodeManifest(raw); err != nil {
			t.Errorf("%s: %v", m.ID, err)
		}
	}
}
