package launch

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// State is the outcome of an invocation as the host reports it in
// HostResult.state (doc/protocol.md, “Host result”).
type State string

// The states of doc/protocol.md, “Host result”. The host never produces
// StateQueued or StateRunning, but they are valid wire values.
const (
	StateSucceeded           State = "succeeded"
	StateInvalidRequest      State = "invalid_request"
	StateFailed              State = "failed"
	StateRefused             State = "refused"
	StateUnavailable         State = "unavailable"
	StateCancelled           State = "cancelled"
	StateTimedOut            State = "timed_out"
	StateQueued              State = "queued"
	StateRunning             State = "running"
	StateWaitingApproval     State = "waiting_approval"
	StateNeedsReconciliation State = "needs_reconciliation"
	StateProtocolError       State = "protocol_error"
)

// exitCodes is the host's EXIT_CODES table (doc/protocol.md, “Exit codes”).
// Read-only.
var exitCodes = map[State]int{
	StateSucceeded:           0,
	StateInvalidRequest:      2,
	StateRefused:             3,
	StateUnavailable:         4,
	StateFailed:              5,
	StateCancelled:           6,
	StateTimedOut:            7,
	StateProtocolError:       8,
	StateQueued:              10,
	StateRunning:             10,
	StateWaitingApproval:     10,
	StateNeedsReconciliation: 10,
}

// ExitCode returns the process exit status the host uses for s, and false
// when s is not a state of the protocol.
func (s State) ExitCode() (int, bool) {
	c, ok := exitCodes[s]
	return c, ok
}

// Valid reports whether s is one of the twelve states of the protocol.
func (s State) Valid() bool {
	_, ok := exitCodes[s]
	return ok
}

// knownExitCode reports whether code is an exit status that some state maps
// to (0, 2–8 or 10). Anything else (1, 127, a signal) can only come from a
// crash or from something that is not the host.
func knownExitCode(code int) bool {
	for _, c := range exitCodes {
		if c == code {
			return true
		}
	}
	return false
}

// EffectDisposition says whether the invocation caused external effects
// (doc/protocol.md, “Host result”).
type EffectDisposition string

// The effect dispositions of doc/protocol.md, “Host result”.
const (
	EffectNone      EffectDisposition = "none"
	EffectConfirmed EffectDisposition = "confirmed"
	EffectUnknown   EffectDisposition = "unknown"
)

// Valid reports whether d is one of the three dispositions.
func (d EffectDisposition) Valid() bool {
	return d == EffectNone || d == EffectConfirmed || d == EffectUnknown
}

// HostResult is the one line the host writes to stdout (doc/protocol.md,
// “Host result”). Its JSON names are the upstream ones, so it decodes with
// encoding/json too; ParseResult decodes it strictly. The zero value is not a
// valid result.
type HostResult struct {
	// ProtocolVersion is always 1.
	ProtocolVersion int `json:"protocol_version"`
	// State is the outcome.
	State State `json:"state"`
	// EffectDisposition says whether external effects happened.
	EffectDisposition EffectDisposition `json:"effect_disposition"`
	// ErrorCode is nil for success and for the states that need none.
	ErrorCode *string `json:"error_code" canon:"optional"`
	// Binding is the attempt the result belongs to; nil (JSON null) only
	// for failures before the host read its context, and always a
	// mismatch for ParseResult.
	Binding *ipc.AttemptBinding `json:"binding"`
	// Data is any JSON value; the host always writes null, since accepted
	// data is published to the Runtime over the channel instead.
	Data any `json:"data" canon:"optional"`
	// ArtifactRefs are the references the Runtime returned on publication,
	// in order; empty unless the state is succeeded.
	ArtifactRefs []string `json:"artifact_refs" canon:"optional"`
}

// Validate checks the model rules the host's own HostResult model enforces:
// protocol version 1, known state and disposition, identifier lengths, a
// well-formed binding when present, and the three coherence rules of
// doc/protocol.md, “Host result”. Errors wrap ErrInvalidResult.
func (r *HostResult) Validate() error {
	var errs []error
	if r.ProtocolVersion != ipc.ProtocolVersion {
		errs = append(errs, fmt.Errorf("protocol_version is %d, want 1", r.ProtocolVersion))
	}
	if !r.State.Valid() {
		errs = append(errs, fmt.Errorf("state %q is not a protocol state", r.State))
	}
	if !r.EffectDisposition.Valid() {
		errs = append(errs, fmt.Errorf("effect_disposition %q is not none, confirmed or unknown", r.EffectDisposition))
	}
	if r.ErrorCode != nil {
		if err := protocol.CheckIdentifier("error_code", *r.ErrorCode); err != nil {
			errs = append(errs, err)
		}
	}
	for i, ref := range r.ArtifactRefs {
		if err := protocol.CheckIdentifier(fmt.Sprintf("artifact_refs[%d]", i), ref); err != nil {
			errs = append(errs, err)
		}
	}
	if r.Binding != nil {
		if err := r.Binding.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("binding: %w", err))
		}
	}
	switch r.State {
	case StateSucceeded:
		if r.ErrorCode != nil {
			errs = append(errs, errors.New("succeeded carries an error_code"))
		}
		if r.EffectDisposition == EffectUnknown {
			errs = append(errs, errors.New("succeeded with effect_disposition unknown"))
		}
	case StateFailed, StateRefused, StateProtocolError, StateUnavailable, StateTimedOut, StateInvalidRequest:
		if r.ErrorCode == nil {
			errs = append(errs, fmt.Errorf("%s without an error_code", r.State))
		}
	}
	if r.EffectDisposition == EffectUnknown && r.State != StateNeedsReconciliation && r.State != StateProtocolError {
		errs = append(errs, fmt.Errorf("effect_disposition unknown with state %s", r.State))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidResult, errors.Join(errs...))
}

// ParseResult checks what a host process left behind — its stdout bytes and
// exit status — against the attempt the Runtime launched, as the upstream
// consumer check does (doc/protocol.md, “Result check”), and returns the
// HostResult.
//
// exitCode is the process exit status; a negative value means the process
// was terminated by a signal, as [os.ProcessState.ExitCode] reports it.
//
// Every disagreement is a protocol failure, returned as a *ResultError that
// wraps ErrBadResult and exactly one of the specific sentinels below, and
// carries both sides (the exit status seen, the one the state requires, the
// envelope when it parsed, the expected binding, the head of stdout). It is
// never resolved toward the exit code: a zero exit does not bless an invalid
// envelope, and a valid envelope does not excuse a wrong exit status. The
// checks, in the order that decides which sentinel is reported:
//
//   - terminated by a signal: ErrSignaled;
//   - an exit status no state maps to: ErrUnknownExitCode;
//   - stdout longer than MaxResultBytes: ErrResultTooLarge;
//   - empty stdout: ErrNoResult;
//   - more than one line (a newline anywhere but the end): ErrNotOneLine;
//   - not strict JSON (doc/protocol.md, “Strict JSON”): ErrMalformedResult;
//   - not a valid HostResult, coherence rules included: ErrInvalidResult;
//   - binding null or different in any field from want: ErrBindingMismatch;
//   - exit status other than the state's: ErrExitMismatch.
//
// ParseResult does not retain stdout. It is safe to call concurrently.
func ParseResult(stdout []byte, exitCode int, want ipc.AttemptBinding) (HostResult, error) {
	return parseResult(stdout, exitCode, want)
}

// decodedResult returns stdout's HostResult when it is one strict line that
// decodes, whatever it says, and nil otherwise.
func decodedResult(stdout []byte) *HostResult {
	line := bytes.TrimSuffix(stdout, []byte("\n"))
	if len(line) == 0 || len(stdout) > MaxResultBytes || bytes.ContainsAny(line, "\n\r") {
		return nil
	}
	var r HostResult
	if err := (canon.Options{MaxBytes: MaxResultBytes}).Unmarshal(line, &r); err != nil {
		return nil
	}
	return &r
}

func parseResult(stdout []byte, exitCode int, want ipc.AttemptBinding) (HostResult, error) {
	fail := func(sentinel error, r *HostResult, cause error) (HostResult, error) {
		e := &ResultError{
			Err:          sentinel,
			ExitCode:     exitCode,
			WantExitCode: -1,
			Want:         want,
			Stdout:       head(stdout),
			StdoutLen:    len(stdout),
			Cause:        cause,
		}
		if r != nil {
			rc := *r
			e.Result = &rc
			if c, ok := r.State.ExitCode(); ok {
				e.WantExitCode = c
			}
		}
		return HostResult{}, e
	}
	// Stdout is evidence on every exit status (doc/protocol.md,
	// “Runtime duties”): a host killed or crashing after writing its line
	// still said what it saw.
	if exitCode < 0 {
		return fail(ErrSignaled, decodedResult(stdout), nil)
	}
	if !knownExitCode(exitCode) {
		return fail(ErrUnknownExitCode, decodedResult(stdout), nil)
	}
	if len(stdout) > MaxResultBytes {
		return fail(ErrResultTooLarge, nil, nil)
	}
	if len(stdout) == 0 {
		return fail(ErrNoResult, nil, nil)
	}
	line := stdout
	if line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	if i := bytes.IndexAny(line, "\n\r"); i >= 0 {
		return fail(ErrNotOneLine, nil, fmt.Errorf("line break at byte %d", i))
	}
	v, err := canon.Options{MaxBytes: MaxResultBytes}.Parse(line)
	if err != nil {
		return fail(ErrMalformedResult, nil, err)
	}
	var r HostResult
	if err := v.Decode(&r); err != nil {
		return fail(ErrInvalidResult, nil, err)
	}
	if r.ArtifactRefs == nil {
		r.ArtifactRefs = []string{} // the model's default, materialized
	}
	if err := r.Validate(); err != nil {
		return fail(ErrInvalidResult, &r, err)
	}
	if r.Binding == nil {
		return fail(ErrBindingMismatch, &r, errors.New("binding is null"))
	}
	if *r.Binding != want {
		return fail(ErrBindingMismatch, &r, errors.New(want.Diff(*r.Binding)))
	}
	wantExit, _ := r.State.ExitCode()
	if wantExit != exitCode {
		return fail(ErrExitMismatch, &r, nil)
	}
	return r, nil
}

// stdoutEvidenceBytes bounds the stdout kept in a ResultError.
const stdoutEvidenceBytes = 4 << 10

func head(b []byte) []byte {
	if len(b) > stdoutEvidenceBytes {
		b = b[:stdoutEvidenceBytes]
	}
	return bytes.Clone(b)
}
