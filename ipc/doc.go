// Package ipc is the Runtime end of the ZEO runtime host protocol, version 1:
// the frame codec, the wire envelopes and the Session that answers the
// host's requests over the socket the child holds as FD 4
// (see doc/protocol.md, “Frames”, “Session order”, “Request envelope”,
// “Reply envelope”, “Methods” and “Runtime duties”).
//
// An embedder of package supervise never calls it: the Supervisor serves
// every attempt's socket. A controller of your own starts here:
// [NewSession] over the child's socket and [Session.Serve] with a
// [Handler] (package supervise/handler gives the ledger-backed one).
//
// # Frames
//
// Both directions carry frames: a 4-byte big-endian length, then that many
// bytes of UTF-8 JSON. A length of zero or above the limit
// (SessionConfig.MaxMessageBytes, at most MaxMessageBytes = 1 MiB) is
// refused before any body byte is allocated (ReadFrame, WriteFrame; a
// Session writes each reply, header and body, in one write).
// The host sends one canonical request at a time and waits for exactly one
// reply; the Runtime never writes unsolicited bytes.
//
// # Exchange
//
//	host (child, FD 4)                                  Runtime (Session)
//	  │ bootstrap        seq 1 {bootstrap_id, launch_digest, pid} │
//	  │ ─────────────────────────────────────────────────────────▶ │ pid == child, id and digest == launched
//	  │ ◀───────────────────────────────── reply allowed / ...     │
//	  │ invoke.admit     seq 2 {arguments}                         │
//	  │ ─────────────────────────────────────────────────────────▶ │ digest(capability_id, arguments) == binding.request_digest
//	  │ ◀─────────────────────────────────────────────────── reply │
//	  │ effect.request   seq 3.. EffectRequest (0..n times)        │
//	  │ ─────────────────────────────────────────────────────────▶ │ Handler.Effect: receipt, or needs_reconciliation
//	  │ ◀────── reply {logical_effect_id, effect_request_digest,   │
//	  │          receipt_id, authorization_id, "confirmed"[, result]}
//	  │ result.publish   last {data, data_digest}                  │
//	  │ ─────────────────────────────────────────────────────────▶ │ digest(data) == data_digest
//	  │ ◀─────────────────────── reply {data_digest, artifact_refs} │
//	  │ close (EOF), then HostResult on stdout, exit code          │
//
// Every reply carries protocol_version 1, the request's sequence and
// host_nonce, the attempt's binding, request_digest = the digest of the exact
// request body (doc/protocol.md, “What is hashed”), a state (allowed,
// refused, cancelled, waiting_approval, needs_reconciliation) and data. The
// Session writes replies as canonical JSON.
//
// # What a Session checks
//
// Each request body must be strict JSON in its own canonical form, with
// protocol_version 1, a sequence that starts at 1 and rises by exactly one,
// bootstrap first and only once, the nonce fixed at bootstrap, and a binding
// equal to the expected AttemptBinding field by field. Bootstrap must name
// the child's pid, the launched bootstrap_id and the Runtime's launch digest;
// invoke.admit's arguments must digest to the binding's request_digest;
// effect.request must carry a valid EffectRequest; result.publish's data must
// digest to its data_digest. No request may follow a reply that was not
// allowed. On a *net.UnixConn on Linux, the Session turns SO_PASSCRED on and
// every byte it reads must come with the child's pid in SCM_CREDENTIALS
// (doc/design.md, “Peer identity”): a frame written by a grandchild that
// inherited the socket, or by anyone else, is refused.
//
// # What poisons a session
//
// Any broken rule, any I/O error, a frame over the limit, EOF inside a frame,
// an exchange that outlives min(RPCTimeout, attempt deadline), or a Handler
// that cannot decide ends the session: Serve reads nothing further, closes
// the connection and returns a *ViolationError whose Err names the rule
// (ErrSequence, ErrNonce, ErrBinding, ErrNotCanonical, ErrDigest,
// ErrPeerCredentials, ErrTimeout, ErrFrameTooLarge, ErrBootstrapOrder, ...).
// There is never a retry on the wire (doc/design.md,
// “No retries on the wire”): recovery is a new attempt with a new fence.
//
// The Session never tells the host that a request was not consumed
// (refused, cancelled, waiting_approval) unless the Handler said so: when
// the Handler fails or returns an unusable decision, the host is answered
// needs_reconciliation. An allowed effect reply always carries the five keys
// the host requires.
//
// # Work after the reply
//
// A Handler may hand work that its reply does not need to AfterReply: the
// Session runs it once the reply is written (or the exchange ended
// without one), before it reads the next request, so that it overlaps the
// host's own work on the reply instead of delaying it. Package supervise
// ends its telemetry spans there.
package ipc
