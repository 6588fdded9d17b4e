// Package answer implements the ledger-backed ipc.Handler of one attempt:
// package supervise/handler is its documented face, and a Supervisor
// makes one per attempt with what only it sets (its telemetry, its lease,
// the launch write in flight).
package answer
