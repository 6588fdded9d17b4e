package capabilityruntime

import (
	"path/filepath"
	"strings"
)

// ResolvedCapabilityRuntimesKey is the key under which the frozen set of
// ResolvedCapabilityRuntime records travels in a deployment's execution
// configuration. Producer and consumer agree through this constant only;
// note the mixed spelling, which is the wire's.
const ResolvedCapabilityRuntimesKey = "resolved_capabilityRuntimes"

// ResolvedCapabilityRuntime is the frozen dependency record of a deployment:
// the exact version, registry and content digest a requirement resolved to,
// and everything needed to launch it without resolving again.
type ResolvedCapabilityRuntime struct {
	// Type is the logical capability runtime name (e.g. "github:read").
	Type string `json:"type"`

	// RequestedVersion is the original constraint (e.g. "^1.0.0"); empty
	// when the requirement was floating.
	RequestedVersion string `json:"requestedVersion,omitempty"`

	// ResolvedVersion is the exact version frozen into the deployment.
	ResolvedVersion string `json:"resolvedVersion"`

	// Registry is the registry that supplied the package.
	Registry string `json:"registry,omitempty"`

	// Digest is the content digest of the installed artifact
	// ("sha256:<hex>").
	Digest string `json:"digest,omitempty"`

	// Runtime describes how to launch the artifact.
	Runtime RuntimeInfo `json:"runtime"`

	// Features declared by the capability runtime's manifest.
	Features []string `json:"features,omitempty"`

	// Capabilities the capability runtime can execute.
	Capabilities []string `json:"capabilities,omitempty"`

	// RootDir is the installed directory on the host that resolved the
	// record. It is host-specific: a consumer on another host derives its
	// own from the record's identity and its store root.
	RootDir string `json:"rootDir,omitempty"`
}

// RuntimeInfo is the runtime part of a ResolvedCapabilityRuntime, copied from
// the manifest so that a deployment carries everything needed to launch.
type RuntimeInfo struct {
	// Type is the runtime kind (see ManifestRuntime.Type).
	Type string `json:"type"`
	// Protocol is the wire protocol; empty means DefaultProtocol(Type).
	Protocol string `json:"protocol,omitempty"`
	// Entrypoint is relative to the installed root, with forward slashes.
	Entrypoint string `json:"entrypoint"`
	// MaxWorkers bounds the concurrent workers; 0 means the backend's
	// default.
	MaxWorkers int `json:"maxWorkers,omitempty"`
}

// EntrypointPath returns the path of the entrypoint on this host:
//
//   - empty entrypoint: "" (nothing to launch);
//   - empty RootDir: the entrypoint unchanged;
//   - absolute entrypoint: the entrypoint, cleaned, unchanged otherwise;
//   - relative entrypoint inside RootDir: RootDir joined with it (forward
//     slashes converted to the OS separator);
//   - relative entrypoint that climbs out of RootDir with "..": "", so that
//     a backend reports a missing entrypoint instead of running a file
//     outside the installed package.
//
// Fixed: upstream appends an absolute entrypoint under RootDir
// ("/opt/x/bin" under "/store/r" became "/store/r/opt/x/bin"), and lets ".."
// escape it.
func (r *ResolvedCapabilityRuntime) EntrypointPath() string {
	e := r.Runtime.Entrypoint
	if e == "" || r.RootDir == "" {
		return e
	}
	if filepath.IsAbs(e) {
		return filepath.Clean(e)
	}
	rel := filepath.Clean(filepath.FromSlash(e))
	if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	return filepath.Join(r.RootDir, rel)
}
