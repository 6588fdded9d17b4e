package process

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// These errors are returned by Backend.Start.
var (
	// ErrInvalidSpec: the BackendSpec cannot be launched (no type or
	// version, no entrypoint, an entrypoint that is not an executable
	// regular file, a negative MaxWorkers, an unknown protocol).
	ErrInvalidSpec = errors.New("process: invalid backend spec")
	// ErrSpecConflict: a pool for the same type@version is live and was
	// started from a different spec. Close every instance of the old one
	// first; one type@version launches one thing.
	ErrSpecConflict = errors.New("process: spec differs from the live pool of the same type@version")
)

// ErrClosed is returned by calls on an instance that was closed, or whose
// Backend was closed, including calls that were waiting for a worker when
// it closed.
var ErrClosed = errors.New("process: closed")

// These errors say why a gRPC worker could not be started. Each is wrapped
// by a *StartError.
var (
	// ErrExited: the worker exited before it was ready.
	ErrExited = errors.New("process: worker exited before it was ready")
	// ErrNotReady: the worker did not create its ready file within the
	// start bound (the caller's deadline, at most Config.StartTimeout).
	ErrNotReady = errors.New("process: worker did not become ready in time")
	// ErrInitialize: the Initialize call failed.
	ErrInitialize = errors.New("process: worker initialization failed")
	// ErrProtocolMismatch: the worker's Initialize answered a protocol other
	// than the one asked for.
	ErrProtocolMismatch = errors.New("process: worker speaks another protocol")
)

// ErrWorkerFailed is wrapped by the error of an Execute or Health call whose
// RPC failed for another reason than the caller's context: the worker
// crashed, the connection broke, or the worker answered a non-OK status. The
// worker is discarded; the call is not retried, because the runtime may
// have acted on it.
var ErrWorkerFailed = errors.New("process: worker failed")

// ErrUnhealthy: a worker answered the Health call with ready=false.
var ErrUnhealthy = errors.New("process: worker reports it is not ready")

// These errors describe a failed one-shot (JSON protocol) call. Each is
// wrapped by a *CallError.
var (
	// ErrExitStatus: the process exited non-zero or was killed by a signal
	// it was not sent by the backend.
	ErrExitStatus = errors.New("process: runtime exited unsuccessfully")
	// ErrOutputTooLarge: stdout exceeded Config.MaxResponseBytes; the
	// process group was killed.
	ErrOutputTooLarge = errors.New("process: runtime output exceeds the limit")
	// ErrBadOutput: stdout is not exactly one JSON Response object.
	ErrBadOutput = errors.New("process: runtime output is not one JSON response")
)

// ErrKilled is wrapped by a Close error when a worker had to be killed with
// SIGKILL because it outlived both the Shutdown call and SIGTERM.
var ErrKilled = errors.New("process: worker ignored shutdown and SIGTERM and was killed")

// ErrUnsupportedValue is wrapped by the error of an Execute whose params
// hold a value that cannot be sent (an integer beyond ±(2^53−1), NaN, an
// infinity, a channel, a value that contains itself). Nothing was started
// or sent.
var ErrUnsupportedValue = pbvalue.ErrUnsupported

// StartError is a gRPC worker that could not be started.
type StartError struct {
	// Runtime is "type@version".
	Runtime string
	// PID is the worker's process id, 0 if it never started.
	PID int
	// Err is one of ErrExited, ErrNotReady, ErrInitialize,
	// ErrProtocolMismatch, ErrClosed, or the error that prevented the
	// start; context errors are wrapped alongside.
	Err error
	// Stderr is the tail of the worker's standard error.
	Stderr string
}

// Error implements error.
func (e *StartError) Error() string {
	s := fmt.Sprintf("process: starting a worker of %s", e.Runtime)
	if e.PID != 0 {
		s += fmt.Sprintf(" (pid %d)", e.PID)
	}
	s += ": " + e.Err.Error()
	if e.Stderr != "" {
		s += "; stderr: " + e.Stderr
	}
	return s
}

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// ProtocolError is the detail of ErrProtocolMismatch.
type ProtocolError struct {
	// Want is the protocol asked for, Got the worker's answer.
	Want, Got string
}

// Error implements error.
func (e *ProtocolError) Error() string {
	return fmt.Sprintf("process: worker speaks another protocol: asked for %q, it answered %q", e.Want, e.Got)
}

// Unwrap returns ErrProtocolMismatch.
func (e *ProtocolError) Unwrap() error { return ErrProtocolMismatch }

// CallError is a one-shot call that produced no Response.
type CallError struct {
	// Runtime is "type@version".
	Runtime string
	// Err is ErrExitStatus, ErrOutputTooLarge, ErrBadOutput, or a context
	// error when the call's deadline passed or it was cancelled (the
	// process group was then killed).
	Err error
	// ExitCode is the exit status, -1 when a signal ended the process.
	ExitCode int
	// Stdout is a prefix of what the process wrote to stdout (for
	// ErrBadOutput), Stderr the tail of its standard error.
	Stdout, Stderr string
}

// Error implements error.
func (e *CallError) Error() string {
	s := fmt.Sprintf("process: %s: %v", e.Runtime, e.Err)
	if e.Err == ErrExitStatus {
		s += fmt.Sprintf(" (exit status %d)", e.ExitCode)
	}
	if e.Stdout != "" {
		s += fmt.Sprintf("; stdout begins %q", e.Stdout)
	}
	if e.Stderr != "" {
		s += "; stderr: " + e.Stderr
	}
	return s
}

// Unwrap returns Err.
func (e *CallError) Unwrap() error { return e.Err }
