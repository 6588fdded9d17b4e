package capabilityruntime

import "context"

// Runtime kinds say how a capability runtime artifact is launched. The value
// of ManifestRuntime.Type and RuntimeInfo.Type is one of them, and a
// Registry dispatches on it.
const (
	// RuntimeKindProcess runs the entrypoint as a child process that speaks
	// ProtocolV1 (gRPC over a Unix socket) or ProtocolJSONV1.
	RuntimeKindProcess = "process"

	// RuntimeKindWasm runs the entrypoint in an embedded WASI runtime that
	// speaks ProtocolJSONV1.
	RuntimeKindWasm = "wasm"

	// RuntimeKindContainer is reserved for an OCI container backend. No
	// backend exists, so Validate refuses it.
	RuntimeKindContainer = "container"

	// RuntimeKindRemote is reserved for a remote host backend. No backend
	// exists, so Validate refuses it.
	RuntimeKindRemote = "remote"
)

// SupportedRuntimeKinds returns the runtime kinds that the contract can
// launch, "process" then "wasm", in a fresh slice the caller may keep:
// the values a runtime.json may declare (Manifest.Validate refuses any
// other), each with a backend in this module.
//
// A Registry may dispatch kinds beyond these that no manifest declares.
// This module has one, "zeohost" (package capabilityruntime/zeohost): ZEO
// providers run through the Supervisor. It is an extension of the
// contract, not a contract kind, because a ZEO provider is not a
// capability runtime package (see doc/capabilityruntime.md, “The zeohost
// backend”), so it is not listed here.
func SupportedRuntimeKinds() []string {
	return []string{RuntimeKindProcess, RuntimeKindWasm}
}

// DefaultProtocol returns the protocol that an empty Protocol means for a
// runtime kind: ProtocolJSONV1 for wasm (WASI has no sockets) and
// ProtocolV1 for every other kind. An extension backend, whose kind no
// manifest declares, says what an empty Protocol means for it (zeohost:
// its own protocol).
//
// Upstream disagrees with itself here (its backends default to the gRPC
// protocol, its adapter to the JSON one); this package settles on the
// protocol the kind can speak, the backend's reading.
func DefaultProtocol(kind string) string {
	if kind == RuntimeKindWasm {
		return ProtocolJSONV1
	}
	return ProtocolV1
}

// Backend starts capability runtime instances of one runtime kind. A
// Registry dispatches to it on runtime.type.
//
// Implementations are safe for concurrent use, and one Backend serves every
// capability runtime of its kind. A Backend that holds resources of its own
// (shared worker pools, an embedded runtime) also has a method
// Close(ctx context.Context) error, which Registry.CloseBackends calls.
type Backend interface {
	// Start returns an instance ready for Execute. The caller owns the
	// instance and must Close it. ctx bounds the start only.
	Start(ctx context.Context, spec BackendSpec) (BackendInstance, error)

	// BackendName returns the kind the backend launches ("process",
	// "wasm"), as it appears in runtime.type, or an extension kind that
	// no runtime.json declares ("zeohost").
	BackendName() string
}

// BackendInstance is a started capability runtime: one Execute contract for
// every kind of backend.
//
// The backends of this module document that their instances are safe for
// concurrent Execute calls; a backend that is not must say so.
type BackendInstance interface {
	// Execute runs one request. ctx bounds the call and its deadline is
	// passed to the runtime. A non-empty Response.Error is returned with
	// the Response as a *RuntimeError (errors.Is ErrRuntimeFailure).
	Execute(ctx context.Context, req *Request) (*Response, error)

	// Health reports whether the instance can take a request now. Backends
	// say what they check; for worker backends it is a live worker that
	// answers the runtime's own health check.
	Health(ctx context.Context) error

	// Close shuts the instance down, bounded by ctx, and is safe to call
	// more than once. The instance must not be used afterwards: Execute
	// then fails.
	Close(ctx context.Context) error
}

// BackendSpec says what a Backend launches. It is derived from the frozen
// ResolvedCapabilityRuntime of a deployment.
type BackendSpec struct {
	// Type is the logical capability runtime name (e.g. "github:read").
	Type string

	// Version is the exact resolved version.
	Version string

	// Protocol is the wire protocol the runtime speaks; empty means
	// DefaultProtocol of the backend's kind.
	Protocol string

	// Entrypoint is the binary or module. A relative entrypoint is taken
	// relative to RootDir, as ResolvedCapabilityRuntime.EntrypointPath does.
	Entrypoint string

	// RootDir is the absolute path of the installed capability runtime
	// directory; the runtime runs with it as its working directory.
	RootDir string

	// MaxWorkers bounds the concurrent workers of a backend with long-lived
	// workers; 0 means the backend's default and a negative value is
	// refused.
	MaxWorkers int

	// Config carries runtime-specific configuration. The contract does not
	// define how a backend forwards it; the process and wasm backends do
	// not read it and say so, and the zeohost backend reads its documented
	// keys (the provider binding, the scope, the call settings) and refuses
	// any other.
	Config map[string]any
}
