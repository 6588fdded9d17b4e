package supervise

import (
	"errors"
	"fmt"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
)

// Errors about how the package is used. Nothing was launched or recorded.
var (
	// ErrInvalidConfig: a Config (or a handler.Config) is unusable; the
	// message lists every problem. It is handler.ErrInvalidConfig.
	ErrInvalidConfig = handler.ErrInvalidConfig
	// ErrInvalidCall: a Call (or the arguments of Cancel, Resolve) is
	// malformed: a missing or over-long identifier, a negative budget.
	ErrInvalidCall = errors.New("supervise: invalid call")
	// ErrOperationMismatch: the operation id is already recorded with
	// another capability, request digest, manifest digest, budget or
	// deadline. Use a new operation id for a new request.
	ErrOperationMismatch = errors.New("supervise: operation id reused with another request")
)

// Errors of a Supervisor's lifetime: its Close and its controller lease.
var (
	// ErrClosed is returned by Invoke once Close has begun. Nothing was
	// launched or recorded.
	ErrClosed = errors.New("supervise: supervisor closed")
	// ErrDrainTimeout is wrapped by Close's error when invocations were
	// still running at its bound: their hosts were stopped, but a ledger
	// write of theirs may still be pending, so the controller's lease was
	// not released (it is left to expire, and then another controller
	// takes the attempts over). The process should exit.
	ErrDrainTimeout = errors.New("supervise: close timed out with invocations still running; lease kept until it expires")
	// ErrLeaseLost is returned by Invoke once this Supervisor's controller
	// lease has expired or could not be renewed in time: the controller is
	// fail-stopped (doc/design.md, "Controllers and leases"). Its hosts are
	// no longer answered allowed, and other controllers may take its
	// attempts over. Close it; the process should exit or start a new
	// Supervisor, which registers under a new controller id.
	ErrLeaseLost = errors.New("supervise: controller lease lost; this controller is fail-stopped")
)

// Causes an *OutcomeError may carry besides its state's sentinel; test
// them with errors.Is, and the typed errors with errors.As.
var (
	// ErrPreflight is wrapped by every *PreflightError: a check made
	// before launch found that the host would refuse the attempt.
	ErrPreflight = errors.New("supervise: preflight check failed")
	// ErrIncoherent is the cause of a protocol_error Outcome whose host
	// result is well-formed but contradicts the ledger: a claimed success
	// with no accepted result, or a definite ending while an effect of the
	// attempt is unknown. The claim is kept as evidence (Outcome.Host) and
	// never becomes the outcome.
	ErrIncoherent = errors.New("supervise: host result contradicts the ledger")
)

// PreflightError says which check refused an attempt before launch and
// why. It comes as the Cause of an *OutcomeError whose State is what the
// host would have answered (unavailable, refused, invalid_request).
type PreflightError struct {
	// Check names the check: "capability", "python_version",
	// "requirements", "arguments", "document".
	Check string
	// Detail says what was found and what to do.
	Detail string
	// Err is the underlying error, if any.
	Err error
}

// Error describes the refusal.
func (e *PreflightError) Error() string {
	msg := fmt.Sprintf("supervise: preflight %s: %s", e.Check, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrPreflight and the underlying error.
func (e *PreflightError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrPreflight}
	}
	return []error{ErrPreflight, e.Err}
}
