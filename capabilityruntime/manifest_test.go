package capabilityruntime_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// validManifest returns a manifest that passes every rule; each Validate case
// breaks exactly the rule it names.
func validManifest() *capabilityruntime.Manifest {
	return &capabilityruntime.Manifest{
		APIVersion:   capabilityruntime.APIVersion,
		Kind:         capabilityruntime.Kind,
		Metadata:     capabilityruntime.ManifestMetadata{Name: "neuron-runtime:github:read", Version: "1.2.0"},
		Runtime:      capabilityruntime.ManifestRuntime{Type: "process", Entrypoint: "bin/capability-runtime", Protocol: capabilityruntime.ProtocolV1, MaxWorkers: 2},
		Capabilities: []string{"github.read_issue", "github.list_issues"},
		Features:     []string{"concurrent"},
		Platforms: map[string]capabilityruntime.Platform{
			"linux-amd64":  {Artifact: "bin/capability-runtime", SHA256: "sha256:" + strings.Repeat("ab", 32)},
			"darwin-arm64": {Artifact: "bin/capability-runtime-darwin", SHA256: strings.Repeat("AB", 32)},
		},
	}
}

func TestValidateRules(t *testing.T) {
	t.Parallel()
	if err := validManifest().Validate(); err != nil {
		t.Fatalf("valid manifest refused: %v", err)
	}
	// In Validate's documented order; rule numbers as in its doc comment.
	tests := []struct {
		rule   int
		name   string
		mutate func(m *capabilityruntime.Manifest)
		field  string
	}{
		{2, "apiVersion other", func(m *capabilityruntime.Manifest) { m.APIVersion = "neuron/v2" }, "apiVersion"},
		{2, "apiVersion case", func(m *capabilityruntime.Manifest) { m.APIVersion = "Neuron/v1" }, "apiVersion"},
		{2, "apiVersion spaced", func(m *capabilityruntime.Manifest) { m.APIVersion = " neuron/v1" }, "apiVersion"},
		{3, "kind", func(m *capabilityruntime.Manifest) { m.Kind = "Executor" }, "kind"},
		{4, "name empty", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "" }, "metadata.name"},
		{5, "name blank", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "   " }, "metadata.name"},
		{5, "name without owner", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "read" }, "metadata.name"},
		{5, "name traversal", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "..:..:etc" }, "metadata.name"},
		{5, "name not canonical", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "github: read" }, "metadata.name"},
		{6, "version empty", func(m *capabilityruntime.Manifest) { m.Metadata.Version = "" }, "metadata.version"},
		{7, "version blank", func(m *capabilityruntime.Manifest) { m.Metadata.Version = " " }, "metadata.version"},
		{7, "version dotdot", func(m *capabilityruntime.Manifest) { m.Metadata.Version = ".." }, "metadata.version"},
		{7, "version separator", func(m *capabilityruntime.Manifest) { m.Metadata.Version = "1.0/../../x" }, "metadata.version"},
		{8, "type empty", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "" }, "runtime.type"},
		{9, "type reserved container", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "container" }, "runtime.type"},
		{9, "type reserved remote", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "remote" }, "runtime.type"},
		{9, "type unknown", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "foo" }, "runtime.type"},
		{9, "type case", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "WASM" }, "runtime.type"},
		{10, "protocol unknown", func(m *capabilityruntime.Manifest) { m.Runtime.Protocol = "neuron/executor-v1" }, "runtime.protocol"},
		{10, "protocol grpc on wasm", func(m *capabilityruntime.Manifest) {
			m.Runtime.Type = "wasm"
			m.Runtime.Protocol = capabilityruntime.ProtocolV1
		}, "runtime.protocol"},
		{11, "entrypoint empty", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "" }, "runtime.entrypoint"},
		{12, "entrypoint absolute", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "/usr/bin/env" }, "runtime.entrypoint"},
		{12, "entrypoint climbs", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "bin/../../x" }, "runtime.entrypoint"},
		{12, "entrypoint backslash", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = `bin\x.exe` }, "runtime.entrypoint"},
		{12, "entrypoint drive", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "C:x.exe" }, "runtime.entrypoint"},
		{12, "entrypoint root", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "./" }, "runtime.entrypoint"},
		{13, "maxWorkers negative", func(m *capabilityruntime.Manifest) { m.Runtime.MaxWorkers = -1 }, "runtime.maxWorkers"},
		{14, "capabilities nil", func(m *capabilityruntime.Manifest) { m.Capabilities = nil }, "capabilities"},
		{14, "capabilities empty", func(m *capabilityruntime.Manifest) { m.Capabilities = []string{} }, "capabilities"},
		{15, "capability empty", func(m *capabilityruntime.Manifest) { m.Capabilities = []string{"a", ""} }, "capabilities[1]"},
		{15, "capability spaced", func(m *capabilityruntime.Manifest) { m.Capabilities = []string{" a"} }, "capabilities[0]"},
		{15, "capability twice", func(m *capabilityruntime.Manifest) { m.Capabilities = []string{"a", "b", "a"} }, "capabilities[2]"},
		{16, "feature empty", func(m *capabilityruntime.Manifest) { m.Features = []string{"concurrent", ""} }, "features[1]"},
		{17, "platform key empty", func(m *capabilityruntime.Manifest) { m.Platforms[""] = capabilityruntime.Platform{Artifact: "x"} }, "platforms"},
		{17, "platform artifact empty", func(m *capabilityruntime.Manifest) { m.Platforms["linux-arm64"] = capabilityruntime.Platform{} }, "platforms.linux-arm64.artifact"},
		{17, "platform artifact absolute", func(m *capabilityruntime.Manifest) {
			m.Platforms["linux-arm64"] = capabilityruntime.Platform{Artifact: "/etc/passwd"}
		}, "platforms.linux-arm64.artifact"},
		{17, "platform sha short", func(m *capabilityruntime.Manifest) {
			m.Platforms["linux-arm64"] = capabilityruntime.Platform{Artifact: "x", SHA256: "sha256:abc"}
		}, "platforms.linux-arm64.sha256"},
		{17, "platform sha not hex", func(m *capabilityruntime.Manifest) {
			m.Platforms["linux-arm64"] = capabilityruntime.Platform{Artifact: "x", SHA256: strings.Repeat("g", 64)}
		}, "platforms.linux-arm64.sha256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validManifest()
			tt.mutate(m)
			err := m.Validate()
			var me *capabilityruntime.ManifestError
			if !errors.As(err, &me) || !errors.Is(err, capabilityruntime.ErrInvalidManifest) {
				t.Fatalf("rule %d: Validate() = %v; want a *ManifestError wrapping ErrInvalidManifest", tt.rule, err)
			}
			if me.Field != tt.field {
				t.Fatalf("rule %d: Field = %q (%v); want %q", tt.rule, me.Field, err, tt.field)
			}
			if me.Name != m.Metadata.Name {
				t.Fatalf("rule %d: Name = %q, want %q", tt.rule, me.Name, m.Metadata.Name)
			}
		})
	}
	// Order: one broken value per field, in Validate's order. With every
	// field from k on broken at once, the report names field k.
	order := []struct {
		field  string
		mutate func(m *capabilityruntime.Manifest)
	}{
		{"apiVersion", func(m *capabilityruntime.Manifest) { m.APIVersion = "" }},
		{"kind", func(m *capabilityruntime.Manifest) { m.Kind = "" }},
		{"metadata.name", func(m *capabilityruntime.Manifest) { m.Metadata.Name = "read" }},
		{"metadata.version", func(m *capabilityruntime.Manifest) { m.Metadata.Version = ".." }},
		{"runtime.type", func(m *capabilityruntime.Manifest) { m.Runtime.Type = "foo" }},
		{"runtime.protocol", func(m *capabilityruntime.Manifest) { m.Runtime.Protocol = "x" }},
		{"runtime.entrypoint", func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "/x" }},
		{"runtime.maxWorkers", func(m *capabilityruntime.Manifest) { m.Runtime.MaxWorkers = -3 }},
		{"capabilities", func(m *capabilityruntime.Manifest) { m.Capabilities = nil }},
		{"features[0]", func(m *capabilityruntime.Manifest) { m.Features = []string{""} }},
		{"platforms.linux-amd64.artifact", func(m *capabilityruntime.Manifest) { m.Platforms["linux-amd64"] = capabilityruntime.Platform{} }},
	}
	for k := range order {
		m := validManifest()
		// Break the later fields first so that the type stays valid while
		// the protocol is the first broken field, and so on.
		for _, o := range order[k:] {
			o.mutate(m)
		}
		var me *capabilityruntime.ManifestError
		if err := m.Validate(); !errors.As(err, &me) || me.Field != order[k].field {
			t.Errorf("fields from %s on broken: Validate() = %v; want field %s", order[k].field, err, order[k].field)
		}
	}
	var nilManifest *capabilityruntime.Manifest
	if err := nilManifest.Validate(); !errors.Is(err, capabilityruntime.ErrInvalidManifest) {
		t.Errorf("nil manifest: Validate() = %v; want ErrInvalidManifest", err)
	}
}

func TestValidateAcceptsWhatUpstreamDistributes(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(m *capabilityruntime.Manifest){
		"no protocol":   func(m *capabilityruntime.Manifest) { m.Runtime.Protocol = "" },
		"json protocol": func(m *capabilityruntime.Manifest) { m.Runtime.Protocol = capabilityruntime.ProtocolJSONV1 },
		"wasm json": func(m *capabilityruntime.Manifest) {
			m.Runtime.Type, m.Runtime.Protocol = "wasm", capabilityruntime.ProtocolJSONV1
		},
		"wasm default": func(m *capabilityruntime.Manifest) { m.Runtime.Type, m.Runtime.Protocol = "wasm", "" },
		"no platforms": func(m *capabilityruntime.Manifest) { m.Platforms = nil },
		"no sha": func(m *capabilityruntime.Manifest) {
			m.Platforms = map[string]capabilityruntime.Platform{"wasm32-wasi": {Artifact: "m.wasm"}}
		},
		"zero maxWorkers":        func(m *capabilityruntime.Manifest) { m.Runtime.MaxWorkers = 0 },
		"v version":              func(m *capabilityruntime.Manifest) { m.Metadata.Version = "v1.0.0-rc.1+build.5" },
		"dotted entrypoint":      func(m *capabilityruntime.Manifest) { m.Runtime.Entrypoint = "./bin/../bin/x" },
		"build and artifact set": func(m *capabilityruntime.Manifest) { m.Build = &capabilityruntime.ManifestBuild{Command: "make"} },
	} {
		m := validManifest()
		mutate(m)
		if err := m.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPackageArchiveName(t *testing.T) {
	t.Parallel()
	const s = capabilityruntime.PackageArchiveSuffix
	tests := []struct{ name, version, want string }{
		{"github:read", "1.2.0", "github-read-1.2.0" + s},
		{"Muhammad-Jay/github:read", "v1.0.0", "Muhammad-Jay-github-read-v1.0.0" + s},
		{"  github:read  ", " 2.0.0 ", "github-read-2.0.0" + s},
		{"neuron-runtime:github:read", "1.0.0", "neuron-runtime-github-read-1.0.0" + s},
		{"", "", "--capability-runtime.neuron.tar.gz"},
		{"a b:c", "1", "a b-c-1" + s}, // a naming hint only: nothing else is changed
	}
	for _, tt := range tests {
		if got := capabilityruntime.PackageArchiveName(tt.name, tt.version); got != tt.want {
			t.Errorf("PackageArchiveName(%q, %q) = %q, want %q", tt.name, tt.version, got, tt.want)
		}
	}
	if !strings.HasSuffix(s, ".tar.gz") {
		t.Errorf("suffix %q does not end in .tar.gz", s)
	}
}

func TestSanitizedIsIndependent(t *testing.T) {
	t.Parallel()
	m := validManifest()
	m.Build = &capabilityruntime.ManifestBuild{Command: "  go build ./cmd/x  "}
	m.Artifact = &capabilityruntime.ManifestArtifact{Path: "bin/x"}
	before, _ := json.Marshal(m)

	s := m.Sanitized()
	if s.Build != nil || s.Artifact != nil {
		t.Fatalf("Sanitized kept build/artifact: %+v %+v", s.Build, s.Artifact)
	}
	if m.Build == nil || m.Artifact == nil {
		t.Fatal("Sanitized cleared the original's build/artifact")
	}
	if m.BuildCommand() != "go build ./cmd/x" || s.BuildCommand() != "" {
		t.Fatalf("BuildCommand: original %q, sanitized %q", m.BuildCommand(), s.BuildCommand())
	}
	s.Capabilities[0] = "changed"
	s.Features[0] = "changed"
	s.Platforms["linux-amd64"] = capabilityruntime.Platform{Artifact: "changed"}
	s.Platforms["new"] = capabilityruntime.Platform{Artifact: "new"}
	s.Metadata.Name = "changed:name"
	after, _ := json.Marshal(m)
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Fatalf("editing the sanitized copy changed the original (-before +after):\n%s", diff)
	}

	// nil stays nil, so the JSON form keeps its nulls.
	bare := &capabilityruntime.Manifest{}
	got, _ := json.Marshal(bare.Sanitized())
	want, _ := json.Marshal(bare)
	if string(got) != string(want) {
		t.Fatalf("Sanitized changed the JSON of an empty manifest: %s, want %s", got, want)
	}
	var nilManifest *capabilityruntime.Manifest
	if nilManifest.Sanitized() != nil || nilManifest.BuildCommand() != "" || nilManifest.HasFeature("concurrent") {
		t.Fatal("nil manifest: Sanitized, BuildCommand or HasFeature did not answer the zero value")
	}
}

func TestHasFeature(t *testing.T) {
	t.Parallel()
	m := validManifest()
	if !m.HasFeature("concurrent") || m.HasFeature("streaming") || m.HasFeature("") {
		t.Fatalf("HasFeature on %v answered wrongly", m.Features)
	}
	m.Features = nil
	if m.HasFeature("concurrent") {
		t.Fatal("HasFeature answered true on an empty feature list")
	}
}
