// Package discovery asks a provider environment's host what it holds
// without running a capability: the static commands describe, doctor,
// capabilities list and capabilities describe (doc/protocol.md, “Static
// discovery”), each run through a launch.Launcher (Launcher.Discover) and
// checked against the provider binding. An answer that does not say what
// the binding says is ErrMismatch, a host that refuses is ErrRefused, and
// every failure is an *Error carrying the process evidence.
package discovery
