package hostsim

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// HostResult states (doc/protocol.md, “Host result”). The host never
// produces queued or running.
const (
	StateSucceeded           = "succeeded"
	StateInvalidRequest      = "invalid_request"
	StateFailed              = "failed"
	StateRefused             = "refused"
	StateUnavailable         = "unavailable"
	StateCancelled           = "cancelled"
	StateTimedOut            = "timed_out"
	StateQueued              = "queued"
	StateRunning             = "running"
	StateWaitingApproval     = "waiting_approval"
	StateNeedsReconciliation = "needs_reconciliation"
	StateProtocolError       = "protocol_error"
)

// Effect dispositions of a HostResult.
const (
	DispositionNone      = "none"
	DispositionConfirmed = "confirmed"
	DispositionUnknown   = "unknown"
)

// Error codes the host itself emits.
const (
	CodeInvalidRequest   = "ZEO_HOST_INVALID_REQUEST"
	CodeProtocol         = "ZEO_HOST_PROTOCOL"
	CodeScope            = "ZEO_HOST_SCOPE"
	CodeDeadline         = "ZEO_HOST_DEADLINE"
	CodeRefused          = "ZEO_HOST_REFUSED"
	CodeRequestBinding   = "ZEO_HOST_REQUEST_BINDING"
	CodeOrganization     = "ZEO_HOST_ORGANIZATION"
	CodeRequirements     = "ZEO_HOST_REQUIREMENTS"
	CodeCapabilityFailed = "ZEO_HOST_CAPABILITY_FAILED"
)

// ExitCode returns EXIT_CODES[state] (doc/protocol.md, “Exit codes”), or -1
// for a string that is not a HostResult state.
func ExitCode(state string) int {
	switch state {
	case StateSucceeded:
		return 0
	case StateInvalidRequest:
		return 2
	case StateRefused:
		return 3
	case StateUnavailable:
		return 4
	case StateFailed:
		return 5
	case StateCancelled:
		return 6
	case StateTimedOut:
		return 7
	case StateProtocolError:
		return 8
	case StateQueued, StateRunning, StateWaitingApproval, StateNeedsReconciliation:
		return 10
	}
	return -1
}

// Result is the HostResult the host writes as its one stdout line. It is
// hostsim's own type (launch parses the line into launch.HostResult); its
// canonical JSON is byte for byte what the upstream host writes.
type Result struct {
	ArtifactRefs      []string            `json:"artifact_refs"`
	Binding           *ipc.AttemptBinding `json:"binding"`
	Data              any                 `json:"data"`
	EffectDisposition string              `json:"effect_disposition"`
	ErrorCode         *string             `json:"error_code"`
	ProtocolVersion   int                 `json:"protocol_version"`
	State             string              `json:"state"`
}

// ExitCode returns the process exit status for r.State.
func (r Result) ExitCode() int { return ExitCode(r.State) }

// Validate applies the HostResult model's coherence rules: a known state;
// succeeded has no error code and no unknown effect; failed, refused,
// protocol_error, unavailable, timed_out and invalid_request carry a
// non-empty code; an unknown disposition only with needs_reconciliation or
// protocol_error; every ref and the code 1..256 code points.
func (r Result) Validate() error {
	if ExitCode(r.State) < 0 {
		return fmt.Errorf("hostsim: unknown state %q", r.State)
	}
	switch r.EffectDisposition {
	case DispositionNone, DispositionConfirmed, DispositionUnknown:
	default:
		return fmt.Errorf("hostsim: unknown effect_disposition %q", r.EffectDisposition)
	}
	if r.ErrorCode != nil && !ipc.ValidIdentifier(*r.ErrorCode) {
		return fmt.Errorf("hostsim: error_code is not an Identifier")
	}
	for i, ref := range r.ArtifactRefs {
		if !ipc.ValidIdentifier(ref) {
			return fmt.Errorf("hostsim: artifact_refs[%d] is not an Identifier", i)
		}
	}
	switch r.State {
	case StateSucceeded:
		if r.ErrorCode != nil || r.EffectDisposition == DispositionUnknown {
			return fmt.Errorf("hostsim: succeeded with an error code or an unknown effect")
		}
	case StateFailed, StateRefused, StateProtocolError, StateUnavailable, StateTimedOut, StateInvalidRequest:
		if r.ErrorCode == nil {
			return fmt.Errorf("hostsim: %s without error_code", r.State)
		}
	}
	if r.EffectDisposition == DispositionUnknown && r.State != StateNeedsReconciliation && r.State != StateProtocolError {
		return fmt.Errorf("hostsim: unknown effect with state %s", r.State)
	}
	return nil
}

// Line returns the canonical JSON of r followed by "\n", as written on the
// host's saved stdout.
func (r Result) Line() ([]byte, error) {
	if r.ArtifactRefs == nil {
		r.ArtifactRefs = []string{}
	}
	b, err := canon.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func code(s string) *string { return &s }

// ProtocolErrorResult is the envelope of an early failure before a binding
// is known: protocol_error, unknown disposition, binding null, exit 8.
func ProtocolErrorResult() Result {
	return Result{ArtifactRefs: []string{}, EffectDisposition: DispositionUnknown, ErrorCode: code(CodeProtocol),
		ProtocolVersion: 1, State: StateProtocolError}
}
