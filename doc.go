// Package runtimeipc is the Runtime (supervisor) side of the ZEO runtime host
// protocol, version 1: the Go SDK a controller embeds to run untrusted Python
// capability providers through the zeo-capability host.
//
// Embed it with [github.com/zeoruntime/runtimeipc/supervise.New]; see
// examples/quickstart for the whole program. The first hour needs about a
// dozen names: a ledger (memory.New, bolt.Open or postgres.Open),
// manifest.DecodeBinding for the provider, launch.New for its host,
// supervise.New, then Supervisor.Invoke with a supervise.Call, its
// Outcome, Supervisor.Artifact and Supervisor.Resolve, and the outcome
// sentinels (supervise.ErrRefused, ...) to decide what to do next.
//
// The packages, the one you embed first and the one everything rests on
// last:
//
//   - [github.com/zeoruntime/runtimeipc/supervise]: capability operations
//     end to end on durable truth: the Supervisor (Invoke, Cancel, Recover,
//     Resolve, Artifact); the ports you implement, in supervise/port
//     (Dispatcher, Authority); for a controller of your own, the
//     ledger-backed Handler of one attempt, in supervise/handler.
//     supervise/supervisetest is its test host, as net/http/httptest.
//   - [github.com/zeoruntime/runtimeipc/launch]: the trusted launcher,
//     HostResult parsing and its coherence with the session, warm launch;
//     static discovery in launch/discovery, environment verification in
//     launch/environment.
//   - [github.com/zeoruntime/runtimeipc/ledger]: durable Runtime truth (fences,
//     bootstrap redemption, idempotent effects, budgets, results, evidence)
//     with in-memory (ledger/memory), embedded (ledger/bolt) and PostgreSQL
//     (ledger/postgres) backends and one conformance suite
//     (ledger/ledgertest); the catalogue's records beside it
//     (ledger/cataloguestore).
//   - [github.com/zeoruntime/runtimeipc/manifest]: capability manifests,
//     provider bindings, inventory validation and request preparation that
//     agrees with the provider's pydantic validation.
//   - [github.com/zeoruntime/runtimeipc/catalogue]: admitted providers, their
//     generations, scope visibility, consent and resource reservations.
//   - [github.com/zeoruntime/runtimeipc/agent]: the search, describe and run
//     facade for agents, served over MCP by agent/mcpserver.
//   - [github.com/zeoruntime/runtimeipc/capabilityruntime]: the capability
//     runtime package contract, with its process, wasm and zeohost
//     backends and the runtime author's side (serve).
//   - [github.com/zeoruntime/runtimeipc/ipc]: the length-prefixed frame codec,
//     the wire envelopes and the Runtime-side Session state machine.
//   - [github.com/zeoruntime/runtimeipc/canon]: strict JSON acceptance,
//     RFC 8785 canonical bytes and sha256 digests.
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
