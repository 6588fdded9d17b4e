package wasm

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// These errors are returned by New and Backend.Start.
var (
	// ErrInvalidConfig: a Config field is out of range. The message names
	// every such field.
	ErrInvalidConfig = errors.New("wasm: invalid Config")
	// ErrInvalidSpec: the BackendSpec cannot be launched: no type or
	// version, an unknown protocol, a negative MaxWorkers, no RootDir, no
	// entrypoint, no usable runtime.json in RootDir (missing, invalid, for
	// another runtime, without a wasm32-wasi platform entry naming the
	// entrypoint, or without its sha256), or a module larger than
	// Config.MaxModuleBytes.
	ErrInvalidSpec = errors.New("wasm: invalid backend spec")
	// ErrSpecConflict: a runtime of the same type@version is live and was
	// started from a different spec. Close every instance of the old one
	// first; one type@version runs one module.
	ErrSpecConflict = errors.New("wasm: spec differs from the live runtime of the same type@version")
	// ErrChecksum is wrapped by every *ChecksumError: the module's bytes do
	// not have the sha256 its manifest declares. Nothing was compiled.
	ErrChecksum = errors.New("wasm: module does not match its manifest's sha256")
	// ErrCompile: wazero refused to compile the module (not WebAssembly,
	// or a feature wazero does not support), or the compilation cache
	// directory could not be used.
	ErrCompile = errors.New("wasm: compiling the module failed")
)

// ErrClosed is returned by calls on an instance that was closed, or whose
// Backend was closed, including calls that were running or waiting for a
// slot when it closed.
var ErrClosed = errors.New("wasm: closed")

// These errors describe a call that produced no Response. Each is wrapped
// by a *CallError.
var (
	// ErrExitStatus: the module called proc_exit with a non-zero status.
	// CallError.Stderr holds the tail of what it wrote to stderr and
	// StderrHead its start (where a Go module that ran out of memory says
	// "out of memory").
	ErrExitStatus = errors.New("wasm: module exited unsuccessfully")
	// ErrTrap: the module trapped (unreachable, an out-of-bounds access,
	// a stack overflow, an integer division by zero, an instantiation that
	// failed): WebAssembly's own way of failing, not an exit.
	ErrTrap = errors.New("wasm: module trapped")
	// ErrOutputTooLarge: stdout exceeded Config.MaxResponseBytes; the
	// module was stopped.
	ErrOutputTooLarge = errors.New("wasm: module output exceeds the limit")
	// ErrBadOutput: stdout is not exactly one JSON Response object.
	ErrBadOutput = errors.New("wasm: module output is not one JSON response")
)

// ErrUnsupportedValue is wrapped by the error of an Execute whose params
// hold a value that cannot be sent (an integer beyond ±(2^53−1), NaN, an
// infinity, a channel, a value that contains itself). Nothing was run. It is
// the same value as the process backend's ErrUnsupportedValue.
var ErrUnsupportedValue = pbvalue.ErrUnsupported

// ChecksumError is a module whose bytes do not match the sha256 of its
// manifest's wasm32-wasi platform entry. It wraps ErrChecksum.
type ChecksumError struct {
	// Runtime is "type@version".
	Runtime string
	// Module is the module's path.
	Module string
	// Want is the manifest's checksum, Got the module's, both as lower-case
	// hex without a "sha256:" prefix.
	Want, Got string
}

// Error implements error.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("wasm: %s: module %s has sha256 %s, its manifest declares %s; reinstall the runtime",
		e.Runtime, e.Module, e.Got, e.Want)
}

// Unwrap returns ErrChecksum.
func (e *ChecksumError) Unwrap() error { return ErrChecksum }

// CallError is a call that produced no Response.
type CallError struct {
	// Runtime is "type@version".
	Runtime string
	// Err is ErrExitStatus, ErrTrap, ErrOutputTooLarge, ErrBadOutput,
	// ErrClosed, or the call context's cause when its deadline passed or it
	// was cancelled (the module was then stopped).
	Err error
	// ExitCode is the proc_exit status for ErrExitStatus, else 0.
	ExitCode uint32
	// Detail is wazero's description of a trap (for ErrTrap), else "".
	Detail string
	// Stdout is a prefix of what the module wrote to stdout (for
	// ErrBadOutput), Stderr the tail of its standard error
	// (Config.StderrTailBytes at most).
	Stdout, Stderr string
	// StderrHead is the first KiB of standard error when the module wrote
	// more than the tail holds, else "". A Go module states a fatal error
	// ("out of memory") there, before the goroutine dump in the tail.
	StderrHead string
}

// Error implements error. The text is for people; test with errors.Is
// against the sentinels and errors.As for the fields.
func (e *CallError) Error() string {
	s := fmt.Sprintf("wasm: %s: %v", e.Runtime, e.Err)
	if e.Err == ErrExitStatus {
		s += fmt.Sprintf(" (exit status %d)", e.ExitCode)
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Stdout != "" {
		s += fmt.Sprintf("; stdout begins %q", e.Stdout)
	}
	switch {
	case e.StderrHead != "":
		s += "; stderr: " + e.StderrHead + " … " + e.Stderr
	case e.Stderr != "":
		s += "; stderr: " + e.Stderr
	}
	return s
}

// Unwrap returns Err.
func (e *CallError) Unwrap() error { return e.Err }
