// Package hostsim is a Go host that behaves like the upstream Python runtime
// host (zeocore 0.11.0; see doc/protocol.md, “Frames”, “Session order”,
// “Effect port”, “Host endings” and “Invocation sequence”) on the IPC socket:
// canonical request frames, one exchange at a time, every correlation check
// on replies, a broken-channel latch with no retry, bootstrap first and once,
// the effect port's fingerprint, budget and pending/unknown rules, and the
// mapping of every ending to a HostResult and exit code.
//
// It is a test double for the Runtime side (Session tests, launch tests,
// the demo), never a real provider: capabilities are scripted Go functions
// (Provider) and provider activation is reduced to hooks. It lives under
// internal/ so that nothing outside this module can present it as one.
//
// Layers: Channel (one exchange per call), EffectPort (the runtime.effects
// service), Invocation.Run (the whole invocation sequence over a connection,
// returning the Result the host writes on stdout). The process that reads
// FD 3, stdin and FD 4 is package hostproc, built on top of Invocation: its
// Main is the zeo-hostsim command, and zeoctl's hidden host mode. Its
// settings, the ZEO_HOSTSIM_* environment variables (the simulated
// interpreter and distribution, and the misbehaviour scenarios tests
// select), are documented there.
package hostsim
