// Package wasm is the capability runtime backend of kind "wasm": WASI
// preview 1 modules run in an embedded WebAssembly runtime (wazero, pure Go,
// no cgo), speaking neuron/capability-runtime-v1-json (see
// doc/capabilityruntime.md, “The wasm backend”).
//
// Start with [New]: the [*Backend] it returns is registered in a
// capabilityruntime.Registry under the kind "wasm".
//
// # One call, one instance
//
// Each Execute instantiates the compiled module afresh: the Request as JSON
// on stdin, exactly one Response on stdout, then _start returns or calls
// proc_exit. Nothing survives between calls, not memory, not globals (a
// small linear memory is reused by a later call, but only after every byte
// the instance could reach was zeroed: it reads as a fresh one). A
// non-zero proc_exit is ErrExitStatus with the tail of stderr, a trap is
// ErrTrap, a stdout that is not one JSON object is ErrBadOutput; a
// non-empty Response.Error is a *capabilityruntime.RuntimeError next to the
// Response, as for every backend.
//
// # What a module gets
//
//   - Arguments: the module file's base name, nothing else.
//   - Environment: NEURON_CAPABILITY_RUNTIME_PROTOCOL, _TYPE and _VERSION,
//     nothing of this process's environment.
//   - No filesystem: no directory is preopened, so every path fails to
//     open. No network: no socket is provided, and the caller's context
//     values, through which wazero's experimental socket support would be
//     enabled, never reach it.
//   - The real wall and monotonic clocks, a sleep that ends early when the
//     call does, and crypto/rand as its random source (wazero's defaults
//     are fake clocks and a deterministic source).
//   - At most Config.MemoryLimitPages of linear memory (256 MiB by
//     default): a memory.grow past it fails inside the module. A Go module
//     then exits with status 2 and "out of memory" on stderr.
//   - At most Config.MaxResponseBytes (4 MiB) of stdout: the call is stopped
//     at the first write past it (ErrOutputTooLarge). Of stderr only the
//     first KiB and the last Config.StderrTailBytes (4 KiB) are kept.
//   - Its caller's deadline (Config.ExecuteTimeout, 10 minutes, when the
//     caller has none): the runtime is built WithCloseOnContextDone, so a
//     module in an endless loop is stopped at its next loop iteration or
//     function entry once the context ends, and the call fails with the
//     context's cause.
//
// # Verified, compiled once
//
// Start reads the installed runtime.json in spec.RootDir, requires its
// wasm32-wasi platform entry to name the entrypoint with a sha256, reads the
// module once and checks the checksum before compiling (a *ChecksumError
// wrapping ErrChecksum, with nothing compiled, when one byte differs). The
// bytes checked are the bytes compiled. A module is compiled once per
// Backend (keyed by its sha256) and kept while a runtime uses it (its data
// section first merged into one segment with the same memory image, since
// Go's thousands of segments would otherwise be applied at every call); with
// Config.CompilationCacheDir, the compiled code is also kept on disk, so
// that a restarted controller loads it instead of compiling again.
//
// # Concurrency and isolation
//
// Every Start of the same type@version shares one bound: at most MaxWorkers
// instances of that runtime execute at once (0 means
// Config.DefaultMaxWorkers, 1 by default); a call waits for a slot within
// its context. Backend.Stats reports how many run, and the most that ever
// ran at once. Each Backend owns its own wazero runtime and compilation
// cache: closing one Backend, or one instance, never affects another.
// Errors are sentinels and typed errors, for errors.Is and errors.As; their
// text is for people.
package wasm
