package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// exampleBinding is the repository's standalone example binding file.
const exampleBinding = "../../testdata/examples/binding.json"

func abs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakePython writes an executable that stands in for a provider
// environment's interpreter: it answers zeoctl's version probe (-c) with
// python and version, and runs anything else (-m zeo_core...) as zeoctl's
// simulated host. It returns the interpreter's path. zeoctl is linked
// beside it, in the interpreter's directory, which a contained host may
// read and execute.
func fakePython(t *testing.T, python, version string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "python")
	self := filepath.Join(dir, "zeoctl")
	if err := os.Link(zeoctlPath, self); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = -c ]; then echo '{\"python\": \"" + python + "\", \"version\": \"" + version + "\"}'; exit 0; fi\n" +
		"shift 2\n" + // -m zeo_core.adapters.runtime_host
		"exec " + self + " __host \"$@\"\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	b := hostsim.DemoBinding()
	wantRun(t, zeoctl(t, "describe", "-simulated"), 0,
		[]string{"zeocore 0.11.0", string(b.ManifestDigest), "static_inventory_valid (authorized: false)"},
		[]string{"asking the simulated host to describe"})

	r := zeoctl(t, "describe", "-simulated", "-json", "-binding", abs(t, exampleBinding))
	wantRun(t, r, 0, nil, nil)
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("-json output: %v\n%s", err, r)
	}
	if got["manifest_digest"] != string(b.ManifestDigest) || got["readiness"] != "static_inventory_valid" {
		t.Errorf("-json output %v", got)
	}
}

func TestCapabilities(t *testing.T) {
	t.Parallel()
	r := zeoctl(t, "capabilities", "list", "-simulated")
	wantRun(t, r, 0, []string{"example.echo@1.0.0", "example.fail@1.0.0", "example.two_effects@1.0.0  external_communication,write  runtime.effects"}, nil)
	if strings.Contains(r.stdout, "more:") {
		t.Errorf("one page holds the whole inventory\n%s", r)
	}
	wantRun(t, zeoctl(t, "capabilities", "list", "-simulated", "-limit", "1", "-offset", "1"), 0,
		[]string{"example.fail@1.0.0", "(more: -offset 2)"}, nil)

	r = zeoctl(t, "capabilities", "describe", "-simulated", "example.two_effects@1.0.0")
	wantRun(t, r, 0, nil, nil)
	got, err := manifest.DecodeManifest([]byte(r.stdout))
	if err != nil {
		t.Fatalf("output is not a manifest: %v\n%s", err, r)
	}
	want, err := manifest.Describe(hostsim.DemoBinding().Manifests, "example.two_effects@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capabilities describe (-want +got):\n%s", diff)
	}
}

func TestDoctor(t *testing.T) {
	t.Parallel()
	t.Run("simulated", func(t *testing.T) {
		t.Parallel()
		r := zeoctl(t, "doctor", "-simulated")
		wantRun(t, r, 0, []string{"ok    binding", "ok    interpreter   Python 3.14.0", "ok    distribution  zeocore 0.11.0",
			"skip  environment", "ok    host          static_inventory_valid"}, nil)
	})
	t.Run("python mismatch", func(t *testing.T) {
		t.Parallel()
		py := fakePython(t, "3.12.1", "0.11.0")
		r := zeoctl(t, "doctor", "-python", py, "-binding", abs(t, exampleBinding))
		wantRun(t, r, 1, []string{"FAIL  interpreter   " + py + ` is Python 3.12.1 but the binding names python_version "3.14.0"`,
			"ok    distribution  zeocore 0.11.0", "ok    host"}, []string{"doctor: 1 of 5 checks failed"})
	})
	t.Run("distribution missing", func(t *testing.T) {
		t.Parallel()
		py := fakePython(t, "3.14.0", "")
		r := zeoctl(t, "doctor", "-python", py, "-binding", abs(t, exampleBinding))
		wantRun(t, r, 1, []string{"ok    interpreter", "FAIL  distribution  zeocore is not installed for this interpreter: install zeocore==0.11.0"}, nil)
	})
	t.Run("environment digest", func(t *testing.T) {
		t.Parallel()
		py := fakePython(t, "3.14.0", "0.11.0")
		r := zeoctl(t, "doctor", "-python", py, "-binding", abs(t, exampleBinding), "-env-root", t.TempDir())
		wantRun(t, r, 1, []string{"FAIL  environment", "the binding names sha256:0000"}, nil)
	})
	t.Run("simulated host refuses", func(t *testing.T) {
		t.Parallel()
		r := zeoctl(t, "doctor", "-simulated", "-env", "ZEO_HOSTSIM_SCENARIO=exit-1")
		wantRun(t, r, 1, []string{"FAIL  host"}, []string{"1 of 5 checks failed"})
	})
}

func TestDiscoveryFailures(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A binding whose digest no longer matches its inventory.
	b := hostsim.DemoBinding()
	b.ManifestDigest = canon.Digest("sha256:" + strings.Repeat("1", 64))
	raw, err := canon.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, "stale.json")
	if err := os.WriteFile(stale, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"missing binding", []string{"describe", "-simulated", "-binding", filepath.Join(dir, "nope.json")}, []string{"reading the provider binding", "no such file"}},
		{"stale digest", []string{"describe", "-simulated", "-binding", stale}, []string{"is not valid, and the host would refuse it", "manifest_digest"}},
		{"unknown capability", []string{"capabilities", "describe", "-simulated", "example.nope@1.0.0"}, []string{"the binding has no capability example.nope@1.0.0"}},
		{"host misbehaves", []string{"describe", "-simulated", "-env", "ZEO_HOSTSIM_SCENARIO=lie"}, []string{"zeoctl: describe: ", "run 'zeoctl doctor'"}},
		{"python without the host module", []string{"describe", "-python", "/bin/false", "-binding", abs(t, exampleBinding)}, []string{"zeoctl: describe: "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantRun(t, zeoctl(t, tt.args...), 1, nil, tt.stderr)
		})
	}
}
