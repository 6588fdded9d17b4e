package ipc

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
)

// ReplyDecoder decodes RuntimeReply bodies for a host that knows the
// binding every reply must carry. Decode accepts and refuses exactly what
// DecodeReply does, with the same errors; it is only faster on the common
// case, a canonical reply carrying the expected binding (what a Session
// writes), which it reads member by member without building a canon.Value
// tree. A ReplyDecoder is immutable after NewReplyDecoder and safe for
// concurrent use; the zero value is not usable.
type ReplyDecoder struct {
	known knownBinding
	max   int
}

// NewReplyDecoder returns a ReplyDecoder for replies of at most max bytes
// (max ≤ 0 means MaxMessageBytes) expected to carry binding b, which must
// be valid.
func NewReplyDecoder(b AttemptBinding, max int) (*ReplyDecoder, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("ipc: reply decoder binding: %w", err)
	}
	raw, err := canon.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("ipc: reply decoder binding: %w", err)
	}
	return &ReplyDecoder{known: knownBinding{raw: raw, b: b}, max: effectiveMax(max)}, nil
}

// Decode is DecodeReply(body, max) with the decoder's max. A reply whose
// binding differs from the expected one is still decoded (the caller
// reports the mismatch), only on the slower path.
func (d *ReplyDecoder) Decode(body []byte) (*Reply, error) {
	if rep, ok := d.decodeFast(body); ok {
		return rep, nil
	}
	return DecodeReply(body, d.max)
}

// decodeFast decodes a canonical reply with the known binding and reports
// false at anything else, or at anything DecodeReply would refuse, so that
// every refusal comes from DecodeReply itself.
func (d *ReplyDecoder) decodeFast(body []byte) (*Reply, bool) {
	if len(body) > d.max || canon.CheckCanonical(body) != nil {
		return nil, false
	}
	var rep Reply
	c := newCursor(body)
	if !c.lit(`{"binding":`) || !c.litBytes(d.known.raw) {
		return nil, false
	}
	rep.Binding = d.known.b
	var ok bool
	var s string
	if c.lit(`,"data":`) {
		var m map[string]any
		if m, ok = c.objectMap(); !ok {
			return nil, false
		}
		rep.Data = m
	} else {
		rep.Data = map[string]any{}
	}
	if !c.lit(`,"host_nonce":`) {
		return nil, false
	}
	if rep.HostNonce, ok = c.str(); !ok || !c.lit(`,"protocol_version":`) {
		return nil, false
	}
	if rep.ProtocolVersion, ok = c.integer(); !ok || !c.lit(`,"request_digest":`) {
		return nil, false
	}
	if s, ok = c.str(); !ok || !c.lit(`,"sequence":`) {
		return nil, false
	}
	rep.RequestDigest = canon.Digest(s)
	if rep.Sequence, ok = c.integer(); !ok || !c.lit(`,"state":`) {
		return nil, false
	}
	if s, ok = c.str(); !ok || !c.lit(`}`) || c.pos != len(body) {
		return nil, false
	}
	rep.State = ReplyState(s)
	// The checks DecodeReply makes after the shape; the binding was
	// validated by NewReplyDecoder.
	if rep.ProtocolVersion != ProtocolVersion || rep.Sequence < 1 || !ValidIdentifier(rep.HostNonce) ||
		rep.RequestDigest.Validate() != nil || !rep.State.Valid() {
		return nil, false
	}
	return &rep, true
}
