// Package runtimeipc is the Runtime (supervisor) side of the ZEO runtime host
// protocol, version 1: the Go SDK a controller embeds to run untrusted Python
// capability providers through the zeo-capability host.
//
// The module is split into small packages with one job each:
//
//   - [github.com/zeoruntime/runtimeipc/canon]: strict JSON acceptance,
//     RFC 8785 canonical bytes and sha256 digests.
//   - [github.com/zeoruntime/runtimeipc/manifest]: capability manifests,
//     provider bindings, inventory validation and request preparation.
//   - [github.com/zeoruntime/runtimeipc/ipc]: the length-prefixed frame codec,
//     the wire envelopes and the Runtime-side Session state machine.
//   - [github.com/zeoruntime/runtimeipc/ledger]: durable Runtime truth (fences,
//     bootstrap redemption, idempotent effects, budgets, results) with
//     in-memory and embedded (bbolt) backends.
//   - [github.com/zeoruntime/runtimeipc/launch]: the trusted launcher and
//     HostResult parsing.
//
// The protocol as this module relies on it, and the decisions that shape the
// module, are described in doc/protocol.md and doc/design.md; doc comments
// cite their sections by heading.
//
// This root package holds no code; it exists for its documentation.
package runtimeipc
