// Package runtimeipc is the Runtime (supervisor) side of the ZEO runtime host
// protocol, version 1: the Go SDK a controller embeds to run untrusted Python
// capability providers through the zeo-capability host.
//
// The module is split into small packages with one job each:
//
//   - [github.com/zeoruntime/runtimeipc/canon]: strict JSON acceptance,
//     RFC 8785 canonical bytes and sha256 digests.
//   - [github.com/zeoruntime/runtimeipc/manifest]: capability manifests,
//     provider bindings, inventory validation and request preparation that
//     agrees with the provider's pydantic validation.
//   - [github.com/zeoruntime/runtimeipc/ipc]: the length-prefixed frame codec,
//     the wire envelopes and the Runtime-side Session state machine.
//   - [github.com/zeoruntime/runtimeipc/ledger]: durable Runtime truth (fences,
//     bootstrap redemption, idempotent effects, budgets, results, evidence,
//     the catalogue's records) with in-memory, embedded (bbolt) and
//     PostgreSQL backends and one conformance suite.
//   - [github.com/zeoruntime/runtimeipc/launch]: the trusted launcher,
//     HostResult parsing and its coherence with the session, static
//     discovery.
//   - [github.com/zeoruntime/runtimeipc/supervise]: one capability operation
//     end to end on durable truth: the ledger-backed Handler of an attempt
//     and the Supervisor (Invoke, Cancel, Recover, Resolve).
//   - [github.com/zeoruntime/runtimeipc/catalogue]: admitted providers, their
//     generations, scope visibility, consent and resource reservations.
//   - [github.com/zeoruntime/runtimeipc/agent]: the search, describe and run
//     facade for agents, served over MCP by agent/mcpserver.
//   - [github.com/zeoruntime/runtimeipc/capabilityruntime]: the capability
//     runtime package contract and its process backend.
//
// The operator CLI is cmd/zeoctl; `go run ./cmd/zeoctl demo` runs one
// supervised operation end to end on the simulated host.
//
// The protocol as this module relies on it, and the decisions that shape the
// module, are described in doc/protocol.md and doc/design.md; doc comments
// cite their sections by heading.
//
// This root package holds no code; it exists for its documentation and
// its example.
package runtimeipc
