package hostsim

import "errors"

// ErrExchange is what every failed Runtime exchange wraps, as the upstream
// host raises "Runtime exchange failed; no automatic retry". The specific
// cause is joined to it.
var ErrExchange = errors.New("hostsim: Runtime exchange failed; no automatic retry")

// Causes of a failed exchange. Each is returned joined with ErrExchange.
var (
	// ErrBroken: an earlier exchange failed; the channel does no more I/O.
	ErrBroken = errors.New("hostsim: channel is broken")
	// ErrBootstrapUsed: bootstrap was already attempted on this channel.
	ErrBootstrapUsed = errors.New("hostsim: bootstrap already attempted")
	// ErrSessionUnavailable: a method other than bootstrap was called
	// before an allowed bootstrap reply ("Runtime session unavailable").
	ErrSessionUnavailable = errors.New("hostsim: Runtime session unavailable")
	// ErrDeadline: the attempt deadline had elapsed before the call.
	ErrDeadline = errors.New("hostsim: attempt deadline elapsed")
	// ErrRequestTooLarge: the canonical request exceeds max_message_bytes;
	// it was not sent.
	ErrRequestTooLarge = errors.New("hostsim: Runtime request too large")
	// ErrReplyTooLarge: the reply header announced 0 or more than
	// max_message_bytes ("Runtime reply too large").
	ErrReplyTooLarge = errors.New("hostsim: Runtime reply too large")
	// ErrDisconnected: the Runtime closed the socket before a whole reply.
	ErrDisconnected = errors.New("hostsim: Runtime disconnected")
	// ErrTimeout: the exchange did not finish within min(rpc timeout,
	// time left before the attempt deadline).
	ErrTimeout = errors.New("hostsim: Runtime exchange timed out")
	// ErrLateReply: the reply was complete at or after the attempt deadline.
	ErrLateReply = errors.New("hostsim: late Runtime reply")
	// ErrReply: the reply is not a strict RuntimeReply.
	ErrReply = errors.New("hostsim: invalid Runtime reply")
	// ErrCorrelation: the reply's sequence, host_nonce, binding or
	// request_digest differs from the request's.
	ErrCorrelation = errors.New("hostsim: Runtime reply does not match the request")
)

// Local refusals of the effect port (doc/protocol.md, “Effect port”).
// Nothing is sent.
var (
	// ErrChangedInput: a logical effect id reused with a different
	// fingerprint ("logical effect ID reused with changed input").
	ErrChangedInput = errors.New("hostsim: logical effect ID reused with changed input")
	// ErrBudget: a new logical effect id beyond total_dispatch_budget
	// ("managed effect budget exhausted").
	ErrBudget = errors.New("hostsim: managed effect budget exhausted")
	// ErrEffectsBlocked: an earlier effect is pending or unknown.
	ErrEffectsBlocked = errors.New("hostsim: effect port blocked by a pending or unknown effect")
	// ErrInvalidEffect: the EffectRequest breaks its model.
	ErrInvalidEffect = errors.New("hostsim: invalid effect request")
	// ErrReceipt: an allowed effect reply whose data does not bind the
	// receipt to the request; the effect stays unknown.
	ErrReceipt = errors.New("hostsim: effect receipt does not bind the request")
	// ErrNotAllowed: the Runtime answered the effect with a state other
	// than allowed; see *NotAllowedError.
	ErrNotAllowed = errors.New("hostsim: effect not allowed by the Runtime")
)
