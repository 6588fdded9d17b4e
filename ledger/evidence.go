package ledger

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// AttemptEvidence is what the Runtime observed of one attempt, recorded
// once when the attempt ends (RecordAttempt): enough to rebuild, after a
// restart, the attempt's full wire binding (with the operation and the
// fence: SeatID, RuntimeBindingID and PacketID are the fields the ledger
// does not otherwise hold) and to judge its HostResult again. It is
// evidence, not a decision: the ledger checks its shape, not its content.
//
// Backends store it as one document; its encoding/json form round-trips
// every field exactly (byte slices as base64, times at nanosecond
// precision in UTC).
type AttemptEvidence struct {
	// AttemptID and Generation name the attempt. RecordAttempt fills them
	// from the fence; a caller may leave them zero.
	AttemptID  string `json:"attempt_id"`
	Generation int64  `json:"fencing_generation"`
	// SeatID, RuntimeBindingID and PacketID complete the attempt's wire
	// binding. Required identifiers.
	SeatID           string `json:"seat_id"`
	RuntimeBindingID string `json:"runtime_binding_id"`
	PacketID         string `json:"packet_id"`
	// BootstrapID and LaunchDigest are the bootstrap id issued for the
	// attempt and the digest of the launch context sent; both empty when
	// the attempt ended before a bootstrap id was issued.
	BootstrapID  string       `json:"bootstrap_id,omitempty"`
	LaunchDigest canon.Digest `json:"launch_digest,omitempty"`
	// State is the Runtime's verdict on the attempt (a HostResult state
	// name such as "succeeded" or "protocol_error"), and Reason why, for
	// people. State is a required identifier; Reason is at most
	// MaxEvidenceTextBytes of UTF-8.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// Launched reports whether a host process started; the process fields
	// below are zero otherwise.
	Launched bool `json:"launched"`
	// PID is the host's process id; ExitCode its exit status, -1 when a
	// signal ended it; Signal the signal's name, empty when none.
	PID      int    `json:"pid,omitempty"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	// HostResult is the host's stdout as the launcher kept it (the
	// HostResult line), at most MaxEvidenceOutputBytes; StdoutBytes counts
	// all the bytes the host wrote there.
	HostResult  []byte `json:"host_result,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	// StderrTail is the end of the host's stderr, for diagnostics only, at
	// most MaxEvidenceStderrBytes.
	StderrTail []byte `json:"stderr_tail,omitempty"`
	// Session summarizes the IPC session.
	Session SessionEvidence `json:"session"`
	// StartedAt and EndedAt bound the attempt, as the Runtime's clock saw
	// them.
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
}

// SessionEvidence summarizes an attempt's IPC session.
type SessionEvidence struct {
	// SessionID is the session's id (the one a bootstrap was redeemed
	// with); empty when no session ran.
	SessionID string `json:"session_id,omitempty"`
	// HostNonce is the nonce fixed at bootstrap.
	HostNonce string `json:"host_nonce,omitempty"`
	// Frames counts the request frames read.
	Frames int `json:"frames"`
	// Exchanges lists the first MaxEvidenceExchanges requests answered, in
	// order; DroppedExchanges counts the others.
	Exchanges        []ExchangeEvidence `json:"exchanges,omitempty"`
	DroppedExchanges int                `json:"dropped_exchanges,omitempty"`
	// Error says how the session ended when it broke a rule; empty when
	// the host closed it cleanly. At most MaxEvidenceTextBytes.
	Error string `json:"error,omitempty"`
}

// ExchangeEvidence is one answered request.
type ExchangeEvidence struct {
	Sequence      int64        `json:"sequence"`
	Method        string       `json:"method"`
	State         string       `json:"state"`
	RequestDigest canon.Digest `json:"request_digest"`
}

// Validate reports whether e is well formed; errors wrap ErrInvalid.
func (e AttemptEvidence) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"seat_id", e.SeatID}, {"runtime_binding_id", e.RuntimeBindingID}, {"packet_id", e.PacketID}, {"state", e.State},
	} {
		if err := check.ID(f.name, f.v); err != nil {
			return err
		}
	}
	if e.AttemptID != "" {
		if err := check.ID("attempt_id", e.AttemptID); err != nil {
			return err
		}
	}
	if e.Generation < 0 {
		return fmt.Errorf("%w: evidence generation %d is negative", ErrInvalid, e.Generation)
	}
	if (e.BootstrapID == "") != (e.LaunchDigest == "") {
		return fmt.Errorf("%w: evidence names a bootstrap id without a launch digest, or the reverse", ErrInvalid)
	}
	if e.BootstrapID != "" {
		if err := check.ID("bootstrap_id", e.BootstrapID); err != nil {
			return err
		}
		if err := check.Digest("launch_digest", e.LaunchDigest); err != nil {
			return err
		}
	}
	if err := text("reason", e.Reason); err != nil {
		return err
	}
	if err := text("session error", e.Session.Error); err != nil {
		return err
	}
	if len(e.Signal) > 64 || !utf8.ValidString(e.Signal) {
		return fmt.Errorf("%w: signal name is not UTF-8 of at most 64 bytes", ErrInvalid)
	}
	if !e.Launched && (e.PID != 0 || e.ExitCode != 0 || e.Signal != "" || len(e.HostResult) != 0 || e.StdoutBytes != 0 || len(e.StderrTail) != 0) {
		return fmt.Errorf("%w: evidence of an attempt that was not launched has process fields", ErrInvalid)
	}
	if e.PID < 0 || e.StdoutBytes < 0 || e.Session.Frames < 0 || e.Session.DroppedExchanges < 0 {
		return fmt.Errorf("%w: negative pid or count in evidence", ErrInvalid)
	}
	if len(e.HostResult) > MaxEvidenceOutputBytes || int64(len(e.HostResult)) > max(e.StdoutBytes, 0) {
		return fmt.Errorf("%w: host result of %d bytes (stdout %d bytes), want at most %d and at most stdout", ErrInvalid, len(e.HostResult), e.StdoutBytes, MaxEvidenceOutputBytes)
	}
	if len(e.StderrTail) > MaxEvidenceStderrBytes {
		return fmt.Errorf("%w: stderr tail of %d bytes, want at most %d", ErrInvalid, len(e.StderrTail), MaxEvidenceStderrBytes)
	}
	s := e.Session
	if s.SessionID != "" {
		if err := check.ID("session_id", s.SessionID); err != nil {
			return err
		}
	}
	if len(s.HostNonce) > protocol.MaxIdentifierRunes || !utf8.ValidString(s.HostNonce) {
		return fmt.Errorf("%w: host nonce is not UTF-8 of at most %d bytes", ErrInvalid, protocol.MaxIdentifierRunes)
	}
	if len(s.Exchanges) > MaxEvidenceExchanges {
		return fmt.Errorf("%w: %d exchanges, want at most %d (count the rest in DroppedExchanges)", ErrInvalid, len(s.Exchanges), MaxEvidenceExchanges)
	}
	for i, x := range s.Exchanges {
		if x.Sequence < 1 || len(x.Method) > 64 || len(x.State) > 64 || !utf8.ValidString(x.Method) || !utf8.ValidString(x.State) {
			return fmt.Errorf("%w: exchange %d: sequence %d, method and state must be UTF-8 of at most 64 bytes", ErrInvalid, i, x.Sequence)
		}
		if x.RequestDigest != "" {
			if err := check.Digest(fmt.Sprintf("exchange %d request_digest", i), x.RequestDigest); err != nil {
				return err
			}
		}
	}
	if e.EndedAt.Before(e.StartedAt) {
		return fmt.Errorf("%w: evidence ends (%s) before it starts (%s)", ErrInvalid, e.EndedAt, e.StartedAt)
	}
	return nil
}

func text(what, s string) error {
	if len(s) > MaxEvidenceTextBytes || !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not UTF-8 of at most %d bytes", ErrInvalid, what, MaxEvidenceTextBytes)
	}
	return nil
}

// OperationRef names an operation: its scope and id.
type OperationRef struct {
	Scope       Scope  `json:"scope"`
	OperationID string `json:"operation_id"`
}

// OperationQuery selects a page of ListOperations.
type OperationQuery struct {
	// Scope, when not the zero Scope, restricts the list to one
	// organization and project. Both fields are then required.
	Scope Scope
	// State, when set, keeps only operations in that state.
	State OperationState
	// Orphaned, when true, keeps only open operations whose current
	// attempt's controller holds no live lease (expired, released, or no
	// controller at all): the ones a takeover may fence off.
	Orphaned bool
	// After, when not zero, starts the page after that operation in list
	// order: pass the last operation of the previous page.
	After OperationRef
	// Limit is the page size, 1..MaxListLimit; zero means
	// DefaultListLimit.
	Limit int
}

// Validate reports whether q is well formed; errors wrap ErrInvalid.
func (q OperationQuery) Validate() error {
	if q.Scope != (Scope{}) {
		if err := q.Scope.Validate(); err != nil {
			return err
		}
	}
	switch q.State {
	case "", OperationOpen, OperationCompleted, OperationCancelled:
	default:
		return fmt.Errorf("%w: operation state %q, want %q, %q or %q", ErrInvalid, truncate(string(q.State)), OperationOpen, OperationCompleted, OperationCancelled)
	}
	if q.After != (OperationRef{}) {
		if err := q.After.Scope.Validate(); err != nil {
			return err
		}
		if err := check.ID("after operation_id", q.After.OperationID); err != nil {
			return err
		}
	}
	if q.Limit < 0 || q.Limit > MaxListLimit {
		return fmt.Errorf("%w: limit %d, want 0..%d", ErrInvalid, q.Limit, MaxListLimit)
	}
	return nil
}
