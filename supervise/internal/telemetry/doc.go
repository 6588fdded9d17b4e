// Package telemetry holds the spans, metrics and log attribute keys of
// package supervise and of the Handlers of package supervise/attempt
// (doc/design.md, “Telemetry”): one *T per Supervisor, shared by its
// Handlers, and Observe, which reports every ledger write.
package telemetry
