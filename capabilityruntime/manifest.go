package capabilityruntime

import (
	"errors"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Identifiers of the runtime.json format and of the capability runtime
// protocols.
const (
	// APIVersion is the schema version of every runtime.json manifest.
	APIVersion = "neuron/v1"

	// Kind is the discriminant of every runtime.json manifest.
	Kind = "CapabilityRuntime"

	// ProtocolV1 is the protocol of long-lived capability runtime workers:
	// gRPC over a Unix domain socket (see doc/capabilityruntime.md,
	// “The gRPC protocol”).
	ProtocolV1 = "neuron/capability-runtime-v1"

	// ProtocolJSONV1 is the one-shot protocol: one process per call, one
	// Request as JSON on stdin, one Response as JSON on stdout. WASI modules
	// speak it because WASI has no sockets; any runtime that cannot host a
	// gRPC server must declare it.
	ProtocolJSONV1 = "neuron/capability-runtime-v1-json"

	// ManifestFile is the manifest at the root of every capability runtime
	// package and installed capability runtime directory.
	ManifestFile = "runtime.json"

	// InstallFile is the installation record written into an installed
	// capability runtime directory. This module writes none; the name is
	// here so that the contract has one spelling of it.
	InstallFile = "install.json"

	// PlatformWasm is the platforms-map key of WASM artifacts. A WASI module
	// runs on any host, so it is named by its execution boundary rather than
	// by a GOOS-GOARCH pair.
	PlatformWasm = "wasm32-wasi"

	// PackageArchiveSuffix ends the name of a capability runtime package
	// archive: <name>-<version>-capability-runtime.neuron.tar.gz. The archive
	// holds runtime.json at its root and every artifact the manifest names.
	PackageArchiveSuffix = "-capability-runtime.neuron.tar.gz"
)

// Manifest is the runtime.json package manifest: what the capability runtime
// is, how it is launched, which capabilities it executes and which platform
// artifacts back it. Its JSON form is the upstream format byte for byte:
// "capabilities" and "platforms" have no omitempty, so nil encodes as null.
// Decoding with encoding/json ignores unknown keys; Validate is what decides
// whether a decoded manifest is usable.
type Manifest struct {
	APIVersion   string              `json:"apiVersion"`
	Kind         string              `json:"kind"`
	Metadata     ManifestMetadata    `json:"metadata"`
	Runtime      ManifestRuntime     `json:"runtime"`
	Capabilities []string            `json:"capabilities"`
	Features     []string            `json:"features,omitempty"`
	Platforms    map[string]Platform `json:"platforms"`

	// Build and Artifact are authoring-time hints for a runtime that lives
	// in a local source tree: how its payload is produced and where it
	// lands, relative to the package directory. They are never part of an
	// installed runtime: Sanitized drops them.
	Build    *ManifestBuild    `json:"build,omitempty"`
	Artifact *ManifestArtifact `json:"artifact,omitempty"`
}

// ManifestMetadata identifies the capability runtime artifact.
type ManifestMetadata struct {
	// Name is the canonical logical name (see ParseType).
	Name string `json:"name"`
	// Version is the exact version; it becomes one directory name in the
	// store. Versions are compared as strings for equality only: ordering
	// versions (semver or otherwise) is a resolver's job, not the
	// contract's.
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// ManifestRuntime describes how the capability runtime is launched.
type ManifestRuntime struct {
	// Type is the runtime kind, one of SupportedRuntimeKinds; the backend
	// registry dispatches on it.
	Type string `json:"type"`

	// Entrypoint is the executable or module, relative to the installed
	// package root, with forward slashes.
	Entrypoint string `json:"entrypoint"`

	// Protocol is ProtocolV1 or ProtocolJSONV1. Empty means
	// DefaultProtocol(Type).
	Protocol string `json:"protocol,omitempty"`

	// MaxWorkers bounds the worker processes a backend with long-lived
	// workers may run at once for this runtime; 0 means the backend's
	// default.
	MaxWorkers int `json:"maxWorkers,omitempty"`
}

// ManifestBuild is an authoring-time instruction for producing a local
// capability runtime artifact. Distributed packages omit it.
type ManifestBuild struct {
	// Command is the shell command that produces the artifact named by
	// ManifestArtifact.Path. It runs in the package (version) directory
	// with the parent environment plus NEURON_PROJECT_ROOT and
	// NEURON_CAPABILITY_RUNTIME_DIR.
	Command string `json:"command,omitempty"`
}

// ManifestArtifact locates the built payload relative to the package
// directory: a directory is copied recursively, a file is treated as one
// binary or archive.
type ManifestArtifact struct {
	// Path is the file or directory Build.Command produces.
	Path string `json:"path,omitempty"`
}

// Platform maps one platform key (GOOS-GOARCH, or PlatformWasm) to its
// artifact.
type Platform struct {
	// Artifact is the file name of the binary, module or archive.
	Artifact string `json:"artifact"`

	// SHA256 is the artifact's checksum: 64 hex digits, optionally prefixed
	// "sha256:". Checksum policy: an installer must verify every artifact
	// it fetches and must refuse one without a checksum unless the package
	// archive that carried it was verified; an empty SHA256 here means
	// "verified through the archive", never "skip the check". This module
	// installs nothing itself; Validate checks the format.
	SHA256 string `json:"sha256,omitempty"`
}

// BuildCommand returns the trimmed authoring-time build command, or "" when
// the manifest (possibly nil) has none.
func (m *Manifest) BuildCommand() string {
	if m == nil || m.Build == nil {
		return ""
	}
	return strings.TrimSpace(m.Build.Command)
}

// HasFeature reports whether the manifest declares the feature. Features are
// opt-in, so an empty list, and a nil manifest, answer false.
//
// Fixed: upstream dereferences a nil receiver and panics.
func (m *Manifest) HasFeature(feature string) bool {
	return m != nil && slices.Contains(m.Features, feature)
}

// Sanitized returns the copy of the manifest that an installed capability
// runtime keeps: Build and Artifact, which only mean something in a source
// tree, are dropped. It returns nil for a nil manifest.
//
// The copy shares nothing with m: Capabilities, Features and Platforms are
// fresh (nil stays nil, so the JSON form is unchanged). Fixed: upstream
// copies the map but shares the slices, so editing the copy edited the
// original.
func (m *Manifest) Sanitized() *Manifest {
	if m == nil {
		return nil
	}
	c := *m
	c.Build, c.Artifact = nil, nil
	c.Capabilities = slices.Clone(m.Capabilities)
	c.Features = slices.Clone(m.Features)
	c.Platforms = maps.Clone(m.Platforms)
	return &c
}

// PackageArchiveName returns the canonical file name of a package archive:
// <name>-<version>-capability-runtime.neuron.tar.gz, where name and version
// are trimmed of surrounding whitespace and every ':' and '/' in the name
// becomes '-'. Nothing else is changed: a leading "v" is kept and empty
// inputs give "--capability-runtime.neuron.tar.gz", as upstream.
//
// The name is a hint for finding the archive among release assets; the
// manifest inside the archive is authoritative, and a caller that uses the
// result as a file name validates the name and version first
// (Manifest.Validate, ParseType).
func PackageArchiveName(name, version string) string {
	n := strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(name), ":", "-"), "/", "-")
	return n + "-" + strings.TrimSpace(version) + PackageArchiveSuffix
}

// Validate reports whether the manifest can be installed and launched. It
// checks these rules in this order and returns a *ManifestError (wrapping
// ErrInvalidManifest) for the first one broken:
//
//  1. the manifest is not nil;
//  2. apiVersion is exactly APIVersion;
//  3. kind is exactly Kind;
//  4. metadata.name is not empty;
//  5. metadata.name is a canonical logical name: ParseType accepts it and
//     NormalizeType leaves it unchanged;
//  6. metadata.version is not empty;
//  7. metadata.version is safe as one directory name: no whitespace, path
//     separator, ':', control character, nor "." or "..";
//  8. runtime.type is not empty;
//  9. runtime.type is one of SupportedRuntimeKinds;
//  10. runtime.protocol is empty, ProtocolV1 or ProtocolJSONV1, and a wasm
//     runtime does not declare ProtocolV1 (WASI has no sockets);
//  11. runtime.entrypoint is not empty;
//  12. runtime.entrypoint is a relative slash-separated path that stays
//     inside the package root (no leading '/', no '\\', no drive letter, no
//     ".." that climbs out, not the root itself);
//  13. runtime.maxWorkers is not negative;
//  14. capabilities has at least one entry;
//  15. every capability is non-empty, has no surrounding whitespace, and
//     appears once;
//  16. every feature is non-empty;
//  17. for each platform, in key order: the key is not empty, the artifact
//     obeys rule 12, and sha256, when present, is 64 hex digits with an
//     optional "sha256:" prefix.
//
// build and artifact are not checked: they are authoring hints that an
// installed manifest does not carry.
//
// Fixed: upstream checks only rules 1–4, 6, 8, 11 and 14, with "" tests
// that let blank names and versions through, so unknown kinds ("container",
// "foo"), unknown protocols, negative maxWorkers and names that escape the
// store all passed.
func (m *Manifest) Validate() error {
	if m == nil {
		return &ManifestError{Problem: "manifest is nil"}
	}
	name := m.Metadata.Name
	fail := func(field, problem string) error {
		return &ManifestError{Name: name, Field: field, Problem: problem}
	}
	if m.APIVersion != APIVersion {
		return fail("apiVersion", "is "+strconv.Quote(m.APIVersion)+", want "+strconv.Quote(APIVersion))
	}
	if m.Kind != Kind {
		return fail("kind", "is "+strconv.Quote(m.Kind)+", want "+strconv.Quote(Kind))
	}
	if name == "" {
		return fail("metadata.name", "is required")
	}
	if n, err := NormalizeType(name); err != nil {
		problem := err.Error()
		if ne, ok := errors.AsType[*NameError](err); ok {
			problem = ne.Problem
		}
		return fail("metadata.name", problem)
	} else if n != name {
		return fail("metadata.name", "is not in canonical form "+strconv.Quote(n))
	}
	if m.Metadata.Version == "" {
		return fail("metadata.version", "is required")
	}
	if p := segmentProblem(m.Metadata.Version); p != "" {
		return fail("metadata.version", p)
	}
	kind := m.Runtime.Type
	if kind == "" {
		return fail("runtime.type", "is required")
	}
	if !slices.Contains(SupportedRuntimeKinds(), kind) {
		return fail("runtime.type", "is "+strconv.Quote(kind)+", want one of "+strings.Join(SupportedRuntimeKinds(), ", "))
	}
	switch p := m.Runtime.Protocol; {
	case p != "" && p != ProtocolV1 && p != ProtocolJSONV1:
		return fail("runtime.protocol", "is "+strconv.Quote(p)+", want "+ProtocolV1+" or "+ProtocolJSONV1)
	case kind == RuntimeKindWasm && p == ProtocolV1:
		return fail("runtime.protocol", "is "+ProtocolV1+", which a wasm runtime cannot speak (want "+ProtocolJSONV1+")")
	}
	if m.Runtime.Entrypoint == "" {
		return fail("runtime.entrypoint", "is required")
	}
	if p := relativePathProblem(m.Runtime.Entrypoint); p != "" {
		return fail("runtime.entrypoint", p)
	}
	if m.Runtime.MaxWorkers < 0 {
		return fail("runtime.maxWorkers", "is negative")
	}
	if len(m.Capabilities) == 0 {
		return fail("capabilities", "at least one capability is required")
	}
	seen := make(map[string]bool, len(m.Capabilities))
	for i, c := range m.Capabilities {
		field := "capabilities[" + strconv.Itoa(i) + "]"
		switch {
		case c == "":
			return fail(field, "is empty")
		case strings.TrimSpace(c) != c:
			return fail(field, "has surrounding whitespace")
		case seen[c]:
			return fail(field, strconv.Quote(c)+" is listed twice")
		}
		seen[c] = true
	}
	for i, f := range m.Features {
		if f == "" {
			return fail("features["+strconv.Itoa(i)+"]", "is empty")
		}
	}
	for _, key := range slices.Sorted(maps.Keys(m.Platforms)) {
		p := m.Platforms[key]
		if key == "" {
			return fail("platforms", "has an empty platform key")
		}
		if p.Artifact == "" {
			return fail("platforms."+key+".artifact", "is required")
		}
		if problem := relativePathProblem(p.Artifact); problem != "" {
			return fail("platforms."+key+".artifact", problem)
		}
		if p.SHA256 != "" && !isSHA256(p.SHA256) {
			return fail("platforms."+key+".sha256", "is not 64 hex digits (optionally prefixed sha256:)")
		}
	}
	return nil
}

// relativePathProblem says why p is not a relative, slash-separated path
// inside a package root, or "" when it is one.
func relativePathProblem(p string) string {
	switch {
	case strings.HasPrefix(p, "/"):
		return "is absolute; want a path relative to the package root"
	case strings.ContainsRune(p, '\\'):
		return "contains '\\'; want forward slashes"
	case len(p) >= 2 && p[1] == ':' && (p[0]|0x20 >= 'a' && p[0]|0x20 <= 'z'):
		return "starts with a drive letter; want a path relative to the package root"
	}
	switch c := path.Clean(p); {
	case c == ".":
		return "names the package root itself"
	case c == ".." || strings.HasPrefix(c, "../"):
		return "climbs out of the package root"
	}
	return ""
}

func isSHA256(s string) bool {
	s = strings.TrimPrefix(s, "sha256:")
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
