package ipc

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of the frame codec. ReadFrame and WriteFrame return them wrapped in
// a *FrameSizeError, so both errors.Is and errors.As work.
var (
	// ErrEmptyFrame: a frame header announced a body of zero bytes. The
	// protocol never sends an empty body.
	ErrEmptyFrame = errors.New("ipc: empty frame")
	// ErrFrameTooLarge: a frame header announced, or a writer offered, a
	// body longer than the message limit.
	ErrFrameTooLarge = errors.New("ipc: frame too large")
)

// Errors of request decoding (DecodeRequest) and reply decoding
// (DecodeReply). They are also the Err of a *ViolationError when a Session
// meets them.
var (
	// ErrMalformed: the body is not strict JSON, or not the strict shape of
	// the envelope or payload (unknown, missing or mistyped members).
	ErrMalformed = errors.New("ipc: malformed message")
	// ErrNotCanonical: the request body is strict JSON but not its own RFC
	// 8785 canonical form; the host only ever sends canonical bytes.
	ErrNotCanonical = errors.New("ipc: request body is not canonical")
	// ErrProtocolVersion: protocol_version is not the JSON integer 1.
	ErrProtocolVersion = errors.New("ipc: unsupported protocol_version")
	// ErrMethod: the method is not one of the four protocol methods.
	ErrMethod = errors.New("ipc: unknown method")
	// ErrPayload: the payload breaks a rule of its method (for example an
	// EffectRequest identifier longer than 256 code points or a malformed
	// digest).
	ErrPayload = errors.New("ipc: invalid payload")
)

// Rules a Session enforces across requests. Each is the Err of the
// *ViolationError that poisons the session when broken.
var (
	// ErrSequence: the request's sequence is not exactly one more than the
	// previous one (the first must be 1).
	ErrSequence = errors.New("ipc: unexpected sequence")
	// ErrNonce: host_nonce differs from the one fixed at bootstrap, or is
	// not 64 lowercase hex digits.
	ErrNonce = errors.New("ipc: host_nonce mismatch")
	// ErrBinding: the request's binding differs from the expected
	// AttemptBinding in at least one field.
	ErrBinding = errors.New("ipc: binding mismatch")
	// ErrBootstrapOrder: the first request is not bootstrap, or a second
	// bootstrap arrived.
	ErrBootstrapOrder = errors.New("ipc: bootstrap must come first and once")
	// ErrOrder: a request came that the protocol does not allow at this
	// point: invoke.admit twice or not after an allowed bootstrap, an
	// effect.request or result.publish before an allowed invoke.admit or
	// after result.publish, or any request after a reply that was not
	// allowed (the host ends the invocation on those).
	ErrOrder = errors.New("ipc: request out of order")
	// ErrBootstrap: the bootstrap payload names another pid, bootstrap_id or
	// launch_digest than the Runtime expects.
	ErrBootstrap = errors.New("ipc: bootstrap payload mismatch")
	// ErrDigest: a digest carried by the host does not match what it covers
	// (the admitted arguments against the binding's request_digest, or a
	// published data_digest against its data).
	ErrDigest = errors.New("ipc: digest mismatch")
	// ErrPeerCredentials: bytes of a frame arrived from a process other
	// than the child (SCM_CREDENTIALS), with no credentials, or with
	// ancillary data the protocol never carries.
	ErrPeerCredentials = errors.New("ipc: frame from a foreign process")
	// ErrTruncated: the peer closed the connection in the middle of a frame.
	ErrTruncated = errors.New("ipc: connection closed mid-frame")
	// ErrTimeout: an exchange (read request, decide, write reply) did not
	// finish within min(RPCTimeout, attempt deadline).
	ErrTimeout = errors.New("ipc: exchange timed out")
	// ErrDeadline: the attempt deadline elapsed while waiting for a request,
	// or a request started at or after it.
	ErrDeadline = errors.New("ipc: attempt deadline elapsed")
	// ErrHandler: the Handler failed or returned a decision the Session may
	// not send; the host was answered needs_reconciliation where possible.
	ErrHandler = errors.New("ipc: handler could not decide")
	// ErrIO: reading or writing the connection failed for another reason.
	ErrIO = errors.New("ipc: connection failure")
	// ErrStopped: the context given to Serve was cancelled.
	ErrStopped = errors.New("ipc: session stopped")
)

// Errors about the Session itself rather than the peer.
var (
	// ErrConfig: the SessionConfig given to NewSession is invalid; Serve
	// returns it before touching the connection.
	ErrConfig = errors.New("ipc: invalid session config")
	// ErrPoisoned: Serve was called again on a Session that already served
	// (a Session serves one attempt, once).
	ErrPoisoned = errors.New("ipc: session already used")
)

// FrameSizeError reports a frame whose length is zero or over the limit. It
// is returned before any body byte is read or allocated. Err is
// ErrEmptyFrame or ErrFrameTooLarge.
type FrameSizeError struct {
	Length uint64 // the announced or offered body length
	Max    int    // the limit in force
	Err    error  // ErrEmptyFrame or ErrFrameTooLarge
}

// Error describes the refusal. The text is not part of the contract; use
// errors.Is and errors.As.
func (e *FrameSizeError) Error() string {
	if e.Length == 0 {
		return "ipc: frame length is 0; a frame body must not be empty"
	}
	return fmt.Sprintf("ipc: frame length %d exceeds the limit of %d bytes", e.Length, e.Max)
}

// Unwrap returns the sentinel.
func (e *FrameSizeError) Unwrap() error { return e.Err }

// ViolationError says which rule a Session saw broken, on which request. A
// Session that returns one is poisoned: it reads nothing further and the
// attempt must not continue on this connection (no retry on the wire;
// recovery is a new attempt, see doc/design.md). Err is one of the
// package's sentinel errors, naming the rule; Cause, when set, is the
// underlying error (a *canon.Error, an I/O error wrapping
// os.ErrDeadlineExceeded, the handler's error, ...). The fields follow the
// module's convention (canon.Error, manifest.ValidationError,
// launch.ResultError): Err the sentinel, Cause the cause. errors.Is
// matches both.
type ViolationError struct {
	Err      error  // the sentinel naming the broken rule
	Sequence int64  // sequence of the request concerned; 0 when unknown
	Method   Method // method of the request concerned; "" when unknown
	Detail   string // what exactly was found
	Cause    error  // underlying cause, may be nil
}

// Error describes the violation. The text is not part of the contract; use
// errors.Is and errors.As.
func (e *ViolationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.Sequence > 0 || e.Method != "" {
		fmt.Fprintf(&b, " (request")
		if e.Sequence > 0 {
			fmt.Fprintf(&b, " sequence %d", e.Sequence)
		}
		if e.Method != "" {
			fmt.Fprintf(&b, " method %s", e.Method)
		}
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns Err and, when set, Cause.
func (e *ViolationError) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Cause}
}
