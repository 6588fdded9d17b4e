package launch

import (
	"errors"
	"fmt"
	"os"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// The package's sentinel errors, grouped by when they occur. Test for them
// with errors.Is: the errors returned wrap them, with the details.
var (
	// These say which check of ParseResult failed. Each *ResultError wraps
	// ErrBadResult and exactly one of them.

	// ErrBadResult is wrapped by every *ResultError: what the host left
	// behind (its stdout and exit status) does not prove an outcome. It is
	// a verdict on the host's report, not the operation's outcome: a
	// Supervisor decides that from the ledger (supervise.ErrProtocol, the
	// outcome protocol_error, is the usual one, but a result the ledger
	// accepted, a cancellation or the deadline decide first). The Runtime
	// must not redispatch; it keeps the evidence and asks its ledger what
	// happened to the operation (doc/protocol.md, “Result check”;
	// doc/design.md, “No retries on the wire”).
	ErrBadResult = errors.New("launch: host result is a protocol failure")
	// ErrSignaled: the host was terminated by a signal (killed at the
	// deadline, crashed, or killed by someone else).
	ErrSignaled = errors.New("launch: host terminated by a signal")
	// ErrUnknownExitCode: the exit status is not one any state maps to
	// (0, 2–8, 10), for example 1 from an uncaught exception or 127 from a
	// missing interpreter.
	ErrUnknownExitCode = errors.New("launch: host exit status is not a protocol exit code")
	// ErrResultTooLarge: stdout is longer than MaxResultBytes.
	ErrResultTooLarge = errors.New("launch: host stdout exceeds 1 MiB")
	// ErrNoResult: stdout is empty.
	ErrNoResult = errors.New("launch: host wrote no result")
	// ErrNotOneLine: stdout holds more than one line.
	ErrNotOneLine = errors.New("launch: host stdout is not exactly one line")
	// ErrMalformedResult: stdout is not strict JSON.
	ErrMalformedResult = errors.New("launch: host stdout is not strict JSON")
	// ErrInvalidResult: the JSON is not a valid HostResult (unknown or
	// missing keys, wrong types, an unknown state, a coherence rule broken).
	ErrInvalidResult = errors.New("launch: host stdout is not a valid HostResult")
	// ErrBindingMismatch: the result's binding is null or differs from the
	// attempt that was launched.
	ErrBindingMismatch = errors.New("launch: host result binding does not match the attempt")
	// ErrExitMismatch: the exit status disagrees with the state's exit code.
	ErrExitMismatch = errors.New("launch: host exit status disagrees with the result state")
	// ErrSessionMismatch: the host's result is not coherent with what the
	// Runtime's own session saw (the rules of launch/coherence.go): a success whose
	// result.publish the session never allowed, a waiting_approval,
	// cancelled, refused or needs_reconciliation that no reply (and no
	// ending of the host's own) explains, and so on. The Runtime's
	// evidence wins; the claim is a protocol failure.
	ErrSessionMismatch = errors.New("launch: host result disagrees with the IPC session")
	// ErrExitUnknown: the exit status of a host launched warm is not
	// known, because the zygote server that forked it (its parent, which
	// alone can reap it) was lost before reporting it, or reported one
	// the host's pidfd contradicts. The host was killed; nothing it
	// printed is taken for its result.
	ErrExitUnknown = errors.New("launch: host exit status unknown: its zygote server was lost")

	// These refuse a Launcher or a launch before the host runs.

	// ErrInvalidContext: the LaunchContext breaks a rule of the host's model.
	ErrInvalidContext = errors.New("launch: invalid launch context")
	// ErrInvalidConfig: the launcher Config is unusable.
	ErrInvalidConfig = errors.New("launch: invalid launcher config")
	// ErrEnvironmentMismatch: the EnvironmentVerifier found that the
	// provider environment is not the one the binding names.
	ErrEnvironmentMismatch = errors.New("launch: provider environment does not match its digest")
	// ErrUnsupported: this platform cannot launch a host (doc/design.md,
	// “Platforms”).
	ErrUnsupported = errors.New("launch: unsupported platform")
	// ErrContainmentUnavailable is wrapped by every refusal to launch a
	// host whose containment (Config.Containment) cannot be applied: a
	// layer the kernel lacks (Landlock, user or network namespaces,
	// seccomp), a program that did not call contain.Init, or a containment init
	// that failed before the host ran. The message names what is missing
	// and the switch that turns that layer off. A host is never launched
	// without a layer it was configured to get (doc/design.md,
	// “Containment”).
	ErrContainmentUnavailable = errors.New("launch: host containment unavailable")
	// ErrCgroupUnavailable is wrapped by New's refusal when
	// Containment.Cgroup is Required and no usable delegated cgroup v2
	// exists (the message says why). It is the same error as
	// process.ErrCgroupUnavailable.
	ErrCgroupUnavailable = cgroup.ErrUnavailable
	// ErrCgroupLimitUnavailable is wrapped by New's refusal when a limit of
	// Containment.Cgroup cannot be set: no cgroup at all, or a parent that
	// does not enable the limit's controller for its children (the message
	// names the file, the controller and the parent).
	// Containment.Cgroup.BestEffortLimits drops such a limit instead. It is the same
	// error as process.ErrCgroupLimitUnavailable.
	ErrCgroupLimitUnavailable = cgroup.ErrLimitUnavailable

	// These are about warm launches.

	// ErrZygoteClosed: Invoke was called after Close.
	ErrZygoteClosed = errors.New("launch: zygote is closed")
	// ErrZygoteStart: a zygote's server could not be started (its
	// interpreter failed, a preload import failed, or it could not fork).
	ErrZygoteStart = errors.New("launch: zygote server did not start")
)

// ResultError is a protocol failure found in a host's stdout and exit status.
// It carries both sides of the disagreement. Its Error text is for people and
// may change; test with errors.Is against the sentinels and ErrBadResult, or
// errors.As for the fields.
type ResultError struct {
	// Err is the sentinel naming the failed check.
	Err error
	// ExitCode is the exit status seen; -1 when the host was terminated by
	// a signal.
	ExitCode int
	// Signal is the terminating signal when the launcher observed one; nil
	// from ParseResult, which only sees the exit code.
	Signal os.Signal
	// WantExitCode is the exit status the envelope's state requires, or -1
	// when no envelope parsed.
	WantExitCode int
	// Result is the envelope when it decoded, even if it then failed a
	// check; nil otherwise.
	Result *HostResult
	// Want is the binding of the attempt that was launched.
	Want ipc.AttemptBinding
	// Stdout is the head of stdout (at most 4 KiB), for diagnostics.
	Stdout []byte
	// StdoutLen is the number of stdout bytes examined (at most
	// MaxResultBytes+1: the launcher stops keeping bytes after that).
	StdoutLen int
	// Cause is the underlying decoding or validation error, if any.
	Cause error
}

// Error describes the failure with both sides.
func (e *ResultError) Error() string {
	msg := e.Err.Error()
	switch {
	case e.Err == ErrExitUnknown:
		msg += " (exit status unknown"
	case e.Signal != nil:
		msg += fmt.Sprintf(" (signal %v", e.Signal)
	case e.ExitCode < 0:
		msg += " (exit by signal"
	default:
		msg += fmt.Sprintf(" (exit status %d", e.ExitCode)
	}
	if e.Result != nil {
		msg += fmt.Sprintf(", state %s", e.Result.State)
		if e.WantExitCode >= 0 {
			msg += fmt.Sprintf(" requires exit status %d", e.WantExitCode)
		}
	}
	msg += fmt.Sprintf(", %d stdout bytes)", e.StdoutLen)
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg + "; do not redispatch: ask the ledger for the operation's outcome"
}

// Unwrap returns the sentinel and the cause.
func (e *ResultError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// Is reports true for ErrBadResult, so that every ResultError matches it.
func (e *ResultError) Is(target error) bool { return target == ErrBadResult }
