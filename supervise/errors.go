package supervise

import (
	"errors"
	"fmt"
)

// Errors about how the package is used. Nothing was launched or recorded.
var (
	// ErrInvalidConfig: a Config or HandlerConfig is unusable; the message
	// lists every problem.
	ErrInvalidConfig = errors.New("supervise: invalid config")
	// ErrInvalidCall: a Call (or the arguments of Cancel, Resolve) is
	// malformed: a missing or over-long identifier, a negative budget.
	ErrInvalidCall = errors.New("supervise: invalid call")
	// ErrOperationMismatch: the operation id is already recorded with
	// another capability, request digest, manifest digest, budget or
	// deadline. Use a new operation id for a new request.
	ErrOperationMismatch = errors.New("supervise: operation id reused with another request")
)

// Causes an *OutcomeError may carry besides its state's sentinel; test
// them with errors.Is, and the typed errors with errors.As.
var (
	// ErrPreflight is wrapped by every *PreflightError: a check made
	// before launch found that the host would refuse the attempt.
	ErrPreflight = errors.New("supervise: preflight check failed")
	// ErrDocument is wrapped by every *DocumentError: a value the host's
	// strict parser would refuse, found before it was sent.
	ErrDocument = errors.New("supervise: document the host would refuse")
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

// DocumentError reports a value in an outgoing document that the host's
// strict parser would refuse: sending it would poison the session (a
// reply) or fail the attempt (the request, the context), so it is refused
// locally instead.
type DocumentError struct {
	// Document names the document: "arguments", "provider binding",
	// "effect result".
	Document string
	// Pointer is the RFC 6901 JSON pointer of the offending value.
	Pointer string
	// Detail says what is wrong and how to send it instead.
	Detail string
	// Err is the canon sentinel (canon.ErrUnsafeInteger, ...), if any.
	Err error
}

// Error describes the value and where it is.
func (e *DocumentError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	msg := fmt.Sprintf("supervise: %s at %s: %s", e.Document, ptr, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrDocument and the canon sentinel.
func (e *DocumentError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrDocument}
	}
	return []error{ErrDocument, e.Err}
}
