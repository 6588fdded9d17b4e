package ipc

import (
	"context"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Call describes the request a Handler is asked to decide. RequestDigest is
// the digest of the exact request body, which the reply will carry.
// SessionID is the ID of the Session asking, which a Handler redeems the
// bootstrap id with (ledger.Redemption.SessionID).
type Call struct {
	Sequence      int64
	Method        Method
	RequestDigest canon.Digest
	HostNonce     string
	Binding       AttemptBinding
	SessionID     string
}

// BootstrapRequest is a bootstrap whose payload the Session has already
// checked against ChildPID, BootstrapID and LaunchDigest.
type BootstrapRequest struct {
	Call
	Payload BootstrapPayload
}

// AdmitRequest is an invoke.admit whose arguments the Session has already
// checked against the binding's request_digest.
type AdmitRequest struct {
	Call
	Payload AdmitPayload
}

// EffectCall is an effect.request carrying a valid EffectRequest and its
// digest (the fingerprint to store and to echo).
type EffectCall struct {
	Call
	Effect       EffectRequest
	EffectDigest canon.Digest
}

// PublishRequest is a result.publish whose data_digest the Session has
// already checked against data.
type PublishRequest struct {
	Call
	Payload PublishPayload
}

// Decision is a Handler's answer to bootstrap or invoke.admit. Data is sent
// as the reply's data (nil means {}); the host ignores it for these methods.
type Decision struct {
	State ReplyState
	Data  map[string]any
}

// EffectDecision is a Handler's answer to effect.request. When State is
// StateAllowed, ReceiptID and AuthorizationID must be non-empty, and the
// Session sends the five mandatory keys plus Result under "result" when
// non-nil; Data is then ignored. For any other state Data is sent as the
// reply's data (nil means {}). Answer refused, cancelled or waiting_approval
// only when the effect was certainly not consumed.
type EffectDecision struct {
	State           ReplyState
	ReceiptID       string
	AuthorizationID string
	Result          map[string]any
	Data            map[string]any
}

// PublishDecision is a Handler's answer to result.publish. When State is
// StateAllowed, ArtifactRefs must be non-empty, each ref 1..256 code points;
// the Session echoes the data_digest. For any other state Data is sent as
// the reply's data (nil means {}).
type PublishDecision struct {
	State        ReplyState
	ArtifactRefs []string
	Data         map[string]any
}

// Handler decides each request of a Session, one method per protocol
// method. The Session calls it from Serve's goroutine, one call at a time,
// with a context that expires at the end of the exchange (min of RPCTimeout
// and the attempt deadline) or when Serve's context is cancelled.
//
// A Handler returns an error when it cannot decide (its ledger is down, the
// context expired, ...). The Session then never claims the request was not
// consumed: it answers needs_reconciliation, and Serve returns a
// *ViolationError with Err ErrHandler and the error as Cause. The same happens
// when a decision is unusable (an unknown state, an allowed effect without
// receipt or authorization id, an allowed publish without artifact refs,
// data that does not marshal or does not fit MaxMessageBytes).
type Handler interface {
	Bootstrap(ctx context.Context, req BootstrapRequest) (Decision, error)
	Admit(ctx context.Context, req AdmitRequest) (Decision, error)
	Effect(ctx context.Context, req EffectCall) (EffectDecision, error)
	Publish(ctx context.Context, req PublishRequest) (PublishDecision, error)
}
