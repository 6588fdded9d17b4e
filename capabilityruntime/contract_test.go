package capabilityruntime_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// TestWireStrings pins every string of the contract byte for byte: both ends
// of the contract are separate programs that agree only through them.
func TestWireStrings(t *testing.T) {
	t.Parallel()
	for got, want := range map[string]string{
		capabilityruntime.APIVersion:                    "neuron/v1",
		capabilityruntime.Kind:                          "CapabilityRuntime",
		capabilityruntime.ProtocolV1:                    "neuron/capability-runtime-v1",
		capabilityruntime.ProtocolJSONV1:                "neuron/capability-runtime-v1-json",
		capabilityruntime.ManifestFile:                  "runtime.json",
		capabilityruntime.InstallFile:                   "install.json",
		capabilityruntime.PlatformWasm:                  "wasm32-wasi",
		capabilityruntime.PackageArchiveSuffix:          "-capability-runtime.neuron.tar.gz",
		capabilityruntime.RuntimeKindProcess:            "process",
		capabilityruntime.RuntimeKindWasm:               "wasm",
		capabilityruntime.RuntimeKindContainer:          "container",
		capabilityruntime.RuntimeKindRemote:             "remote",
		capabilityruntime.EnvProtocol:                   "NEURON_CAPABILITY_RUNTIME_PROTOCOL",
		capabilityruntime.EnvType:                       "NEURON_CAPABILITY_RUNTIME_TYPE",
		capabilityruntime.EnvVersion:                    "NEURON_CAPABILITY_RUNTIME_VERSION",
		capabilityruntime.EnvSocket:                     "NEURON_CAPABILITY_RUNTIME_SOCKET",
		capabilityruntime.EnvReady:                      "NEURON_CAPABILITY_RUNTIME_READY",
		capabilityruntime.ResolvedCapabilityRuntimesKey: "resolved_capabilityRuntimes",
	} {
		if got != want {
			t.Errorf("constant is %q, want %q", got, want)
		}
	}
	kinds := capabilityruntime.SupportedRuntimeKinds()
	if diff := cmp.Diff([]string{"process", "wasm"}, kinds); diff != "" {
		t.Errorf("SupportedRuntimeKinds (-want +got):\n%s", diff)
	}
	kinds[0] = "changed"
	if capabilityruntime.SupportedRuntimeKinds()[0] != "process" {
		t.Error("SupportedRuntimeKinds returned a shared slice")
	}
	if capabilityruntime.DefaultProtocol("process") != capabilityruntime.ProtocolV1 ||
		capabilityruntime.DefaultProtocol("") != capabilityruntime.ProtocolV1 ||
		capabilityruntime.DefaultProtocol("wasm") != capabilityruntime.ProtocolJSONV1 {
		t.Error("DefaultProtocol does not follow the kind")
	}
}

// roundTrip decodes the document into a value of type T, re-encodes it, and
// requires the compact bytes of the document back.
func roundTrip[T any](t *testing.T, doc []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatalf("decode: %v", err)
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, doc); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Fatalf("round trip changed the document (-want +got):\n%s", diff)
	}
	return v
}

func TestManifestJSON(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("testdata", "runtime.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := roundTrip[capabilityruntime.Manifest](t, doc)
	if err := m.Validate(); err != nil {
		t.Fatalf("the sample manifest does not validate: %v", err)
	}
	if m.Runtime.MaxWorkers != 4 || m.Platforms["linux-amd64"].Artifact != "bin/capability-runtime" || m.BuildCommand() == "" {
		t.Fatalf("decoded wrongly: %+v", m)
	}

	// The sanitized form is the sample less build and artifact.
	sanitized, err := json.Marshal(m.Sanitized())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sanitized, []byte(`"build"`)) || bytes.Contains(sanitized, []byte(`"artifact":{`)) {
		t.Fatalf("sanitized JSON kept authoring hints: %s", sanitized)
	}

	// Byte-exact shapes of the zero values: capabilities and platforms have
	// no omitempty upstream, so they encode as null.
	for _, tt := range []struct {
		v    any
		want string
	}{
		{capabilityruntime.Manifest{}, `{"apiVersion":"","kind":"","metadata":{"name":"","version":""},"runtime":{"type":"","entrypoint":""},"capabilities":null,"platforms":null}`},
		{capabilityruntime.Request{}, `{"params":null}`},
		{capabilityruntime.Request{Params: map[string]any{}, ExecutionID: "e", CorrelationID: "c"}, `{"params":{}}`},
		{capabilityruntime.Response{}, `{"result":null}`},
		{capabilityruntime.Response{Result: map[string]any{"a": 1.5}, Error: "boom"}, `{"result":{"a":1.5},"error":"boom"}`},
		{capabilityruntime.ResolvedCapabilityRuntime{}, `{"type":"","resolvedVersion":"","runtime":{"type":"","entrypoint":""}}`},
		{capabilityruntime.Platform{}, `{"artifact":""}`},
	} {
		got, err := json.Marshal(tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("json.Marshal(%T) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
}

func TestResolvedJSON(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("testdata", "resolved.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The set travels under ResolvedCapabilityRuntimesKey.
	type payload struct {
		Resolved []capabilityruntime.ResolvedCapabilityRuntime `json:"resolved_capabilityRuntimes"`
	}
	p := roundTrip[payload](t, doc)
	if len(p.Resolved) != 2 || p.Resolved[0].Runtime.MaxWorkers != 4 || p.Resolved[1].Runtime.Type != "wasm" {
		t.Fatalf("decoded wrongly: %+v", p)
	}
	var generic map[string]json.RawMessage
	if err := json.Unmarshal(doc, &generic); err != nil {
		t.Fatal(err)
	}
	if _, ok := generic[capabilityruntime.ResolvedCapabilityRuntimesKey]; !ok {
		t.Fatalf("the document does not use the key %q", capabilityruntime.ResolvedCapabilityRuntimesKey)
	}
}

func TestEntrypointPath(t *testing.T) {
	t.Parallel()
	root := filepath.FromSlash("/store/acme/echo/1.0.0")
	tests := []struct {
		name, root, entry, want string
	}{
		{"nested", root, "bin/capability-runtime", filepath.Join(root, "bin", "capability-runtime")},
		{"dot prefix", root, "./bin/x", filepath.Join(root, "bin", "x")},
		{"empty root", "", "bin/x", "bin/x"},
		{"empty entrypoint", root, "", ""},
		{"absolute kept (fixed)", root, filepath.FromSlash("/opt/tools/x"), filepath.FromSlash("/opt/tools/x")},
		{"absolute cleaned", root, filepath.FromSlash("/opt/tools/../x"), filepath.FromSlash("/opt/x")},
		{"climbs out (fixed)", root, "../../../../etc/passwd", ""},
		{"climbs back in", root, "bin/../x", filepath.Join(root, "x")},
	}
	for _, tt := range tests {
		r := capabilityruntime.ResolvedCapabilityRuntime{RootDir: tt.root, Runtime: capabilityruntime.RuntimeInfo{Entrypoint: tt.entry}}
		if got := r.EntrypointPath(); got != tt.want {
			t.Errorf("%s: EntrypointPath() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestPlatforms(t *testing.T) {
	t.Parallel()
	host := capabilityruntime.HostPlatform()
	if !regexp.MustCompile(`^[a-z0-9]+-[a-z0-9]+$`).MatchString(host) {
		t.Fatalf("HostPlatform() = %q, not GOOS-GOARCH", host)
	}
	if host == capabilityruntime.PlatformWasm {
		t.Fatal("HostPlatform collides with the wasm key")
	}
	for kind, want := range map[string]string{
		"wasm":      capabilityruntime.PlatformWasm,
		"process":   host,
		"":          host,
		"container": host,
		"remote":    host,
		"WASM":      host, // exact match only
		"unknown":   host,
	} {
		if got := capabilityruntime.PlatformForRuntime(kind); got != want {
			t.Errorf("PlatformForRuntime(%q) = %q, want %q", kind, got, want)
		}
	}
}

// FuzzManifest decodes arbitrary bytes as a runtime.json: nothing panics, and
// a manifest that validates has a name and version whose store directory and
// an entrypoint that stay inside the store and the package root.
func FuzzManifest(f *testing.F) {
	doc, err := os.ReadFile(filepath.Join("testdata", "runtime.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(doc)
	f.Add([]byte(`{"apiVersion":"neuron/v1","kind":"CapabilityRuntime","metadata":{"name":"a:b","version":"1"},"runtime":{"type":"wasm","entrypoint":"m.wasm"},"capabilities":["x"],"platforms":null}`))
	f.Add([]byte(`{"metadata":{"name":"..:..:etc","version":".."},"runtime":{"entrypoint":"../x"}}`))
	store := filepath.FromSlash("/store")
	f.Fuzz(func(t *testing.T, b []byte) {
		var m capabilityruntime.Manifest
		if json.Unmarshal(b, &m) != nil {
			return
		}
		_ = m.HasFeature("concurrent")
		_ = m.BuildCommand()
		if m.Validate() != nil {
			return
		}
		tp, err := capabilityruntime.TypePath(m.Metadata.Name)
		if err != nil {
			t.Fatalf("valid manifest name %q: TypePath: %v", m.Metadata.Name, err)
		}
		dir := filepath.Join(store, tp, m.Metadata.Version)
		if filepath.Dir(dir) != filepath.Join(store, tp) {
			t.Fatalf("version %q is not one directory level", m.Metadata.Version)
		}
		r := capabilityruntime.ResolvedCapabilityRuntime{RootDir: dir, Runtime: capabilityruntime.RuntimeInfo{Entrypoint: m.Runtime.Entrypoint}}
		ep := r.EntrypointPath()
		if rel, err := filepath.Rel(dir, ep); err != nil || rel == "." || rel == ".." || len(rel) > 2 && rel[:3] == ".."+string(filepath.Separator) {
			t.Fatalf("entrypoint %q resolves to %q, outside %q", m.Runtime.Entrypoint, ep, dir)
		}
	})
}
