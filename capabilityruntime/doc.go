// Package capabilityruntime is the contract for distributing and executing
// capability runtime packages (see doc/capabilityruntime.md): the runtime.json
// manifest, logical names and their store paths, platform keys, the frozen
// ResolvedCapabilityRuntime record of a deployment, the Request and Response
// of an execution, the Backend interfaces, and a Registry that dispatches on
// the runtime kind. It imports only the standard library, so both sides of
// the contract (the tool that resolves and installs, the service that
// executes) can share it without pulling in any backend.
//
// Start with a [Registry]: [Registry.Register] a backend per runtime kind
// (process.New, wasm.New, zeohost.New), [Registry.Start] one runtime from
// its [BackendSpec], and call Execute on the instance with a [Request].
//
// It merges the two upstream packages that carry these identifiers (a
// dependency-free contract and the CLI's name and platform helpers) into
// one. Every JSON shape is the upstream one byte for byte. Backends live in
// sub-packages: [github.com/zeoruntime/runtimeipc/capabilityruntime/process]
// runs native runtimes (a gRPC worker pool, or one process per call),
// [github.com/zeoruntime/runtimeipc/capabilityruntime/wasm] runs WASI
// preview 1 modules (one fresh instance per call),
// [github.com/zeoruntime/runtimeipc/capabilityruntime/serve] is the runtime
// author's side of both protocols, and
// [github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost] runs ZEO
// capability providers through the Supervisor: a kind ("zeohost") and a
// protocol that are this module's extension of the contract, which no
// runtime.json declares.
//
// # What it promises
//
// Nothing here panics on any input. ParseType and Validate refuse, with
// typed errors, every name and manifest that could name a file outside the
// store or the package root, and every runtime kind and protocol that no
// backend can run. Values returned to the caller share no memory with the
// inputs they came from.
//
// # Decisions
//
// Upstream leaves sixteen points open or contradicts itself. Each is settled
// once, here and in the doc comment of the identifier it concerns:
//
//  1. An empty protocol means the protocol the kind can speak: ProtocolV1
//     for process, ProtocolJSONV1 for wasm (DefaultProtocol).
//  2. One package holds every identifier of the contract, HostPlatform and
//     PlatformForRuntime included; the installer machinery is not part of
//     it.
//  3. Validate is strict: canonical names, path-safe versions, supported
//     kinds and protocols, relative entrypoints, maxWorkers ≥ 0, well-formed
//     checksums (Manifest.Validate lists its seventeen rules).
//  4. ParseType trims whitespace around every segment, keeps case, and
//     refuses ".", "..", separators, whitespace and control characters
//     inside a segment; NormalizeType is ParseType then String.
//  5. PlatformForRuntime maps exactly "wasm" to PlatformWasm and every other
//     value, empty and unknown included, to HostPlatform.
//  6. PackageArchiveName keeps upstream's output for every input (a naming
//     hint, never a path authority).
//  7. EntrypointPath keeps an absolute entrypoint and refuses (answers "")
//     a relative one that climbs out of RootDir.
//  8. BackendSpec.MaxWorkers 0 means the backend's default, a negative value
//     is refused; a second Start of the same type@version with a different
//     spec is refused rather than silently given the first spec's pool
//     (process.Backend.Start).
//  9. Readiness of a gRPC worker is the ready file's existence, polled, within
//     the caller's deadline and at most 30 s; Initialize must answer the
//     protocol that was asked for.
//  10. Health of a worker instance calls the runtime's Health RPC on a live
//     worker; an instance with no worker starts one to answer.
//  11. A worker is discarded after any failed Execute RPC (cancelled, past
//     its deadline, or a transport error), never returned to the pool.
//  12. Both protocols run the child with the same allowlisted environment
//     plus the NEURON_CAPABILITY_RUNTIME_* variables, RootDir as working
//     directory, and only descriptors 0–2.
//  13. Numbers come back as float64 on both protocols; parameters of any Go
//     type that encoding/json can encode are accepted on both, and integers
//     beyond ±2^53, NaN and infinities are refused before anything is sent.
//  14. Checksums are mandatory for installed artifacts (Platform.SHA256).
//  15. This module writes no install.json (InstallFile); its records are the
//     JSON types here, all camelCase.
//  16. Versions are compared for equality only (ManifestMetadata.Version);
//     ordering them is a resolver's job.
package capabilityruntime
