package zeohost

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// These errors are returned by New, Start, Execute and Close. Each comes
// wrapped with what was wrong and where; test with errors.Is. Their text is
// for people and may change.
var (
	// ErrInvalidConfig: New was given a Config it cannot use; the message
	// lists every problem.
	ErrInvalidConfig = errors.New("zeohost: invalid config")
	// ErrInvalidSpec: Start was given a BackendSpec it cannot run: a bad
	// type, version, protocol, entrypoint or root directory, or a
	// BackendSpec.Config key that is missing, unknown or of the wrong
	// shape. Nothing was started.
	ErrInvalidSpec = errors.New("zeohost: invalid backend spec")
	// ErrSpecConflict: an instance of the same provider binding is live
	// with another entrypoint or root directory. The Supervisor launches
	// one binding from one provider environment; close the live instances
	// first, or start this one with their spec.
	ErrSpecConflict = errors.New("zeohost: provider binding is live in another provider environment")
	// ErrDoctor: the host's doctor command did not confirm the provider
	// binding (Start, Health). It wraps the *discovery.Error, which
	// holds the process evidence.
	ErrDoctor = errors.New("zeohost: the host's doctor did not confirm the provider binding")
	// ErrInvalidParams: Request.Params does not say what to run (see the
	// package documentation, “Requests”). Nothing was launched or
	// recorded; this is the caller's error, not a controlled failure.
	ErrInvalidParams = errors.New("zeohost: invalid request params")
	// ErrClosed: the instance or its Backend was closed. Nothing was
	// launched or recorded.
	ErrClosed = errors.New("zeohost: closed")
	// ErrCloseTimeout is wrapped by Close's error when calls were still
	// running Config.CloseGrace after Close's context ended and they were
	// cancelled: their hosts were stopped, but an outcome may still be
	// being recorded.
	ErrCloseTimeout = errors.New("zeohost: calls still running after close")
)

// CallError is the error of an Execute whose Outcome is not succeeded: a
// controlled failure. It wraps both the contract's
// *capabilityruntime.RuntimeError (errors.Is ErrRuntimeFailure), whose
// Message is Response.Error verbatim (the code), and the Supervisor's
// *supervise.OutcomeError (errors.Is supervise.ErrRefused, ...; errors.As
// gives the whole Outcome).
type CallError struct {
	// Runtime is the contract's form of the failure.
	Runtime *capabilityruntime.RuntimeError
	// Outcome is the Supervisor's verdict, with the Outcome and its cause.
	Outcome *supervise.OutcomeError
}

// Error says which runtime failed, with which code and why.
func (e *CallError) Error() string {
	return fmt.Sprintf("%v: %v", e.Runtime, e.Outcome)
}

// Unwrap returns the *capabilityruntime.RuntimeError and the
// *supervise.OutcomeError.
func (e *CallError) Unwrap() []error { return []error{e.Runtime, e.Outcome} }
