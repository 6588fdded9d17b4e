package hostsim

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/internal/wire"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// ReplyDecoder decodes RuntimeReply bodies for a host that knows the
// binding every reply must carry. Decode accepts and refuses exactly what
// ipc.DecodeReply does, with the same errors; it is only faster on the
// common case, a canonical reply carrying the expected binding (what a
// Session writes), which it reads member by member without building a
// canon.Value tree. A ReplyDecoder is immutable after NewReplyDecoder and
// safe for concurrent use; the zero value is not usable.
type ReplyDecoder struct {
	raw []byte             // canonical bytes of b
	b   ipc.AttemptBinding // the binding every reply must carry
	max int
}

// NewReplyDecoder returns a ReplyDecoder for replies of at most max bytes
// (max ≤ 0 means ipc.MaxMessageBytes) expected to carry binding b, which
// must be valid.
func NewReplyDecoder(b ipc.AttemptBinding, max int) (*ReplyDecoder, error) {
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("hostsim: reply decoder binding: %w", err)
	}
	raw, err := canon.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("hostsim: reply decoder binding: %w", err)
	}
	if max <= 0 || max > ipc.MaxMessageBytes {
		max = ipc.MaxMessageBytes
	}
	return &ReplyDecoder{raw: raw, b: b, max: max}, nil
}

// Decode is ipc.DecodeReply(body, max) with the decoder's max. A reply
// whose binding differs from the expected one is still decoded (the caller
// reports the mismatch), only on the slower path.
func (d *ReplyDecoder) Decode(body []byte) (*ipc.Reply, error) {
	if rep, ok := d.decodeFast(body); ok {
		return rep, nil
	}
	return ipc.DecodeReply(body, d.max)
}

// decodeFast decodes a canonical reply with the known binding and reports
// false at anything else, or at anything ipc.DecodeReply would refuse, so that
// every refusal comes from ipc.DecodeReply itself.
func (d *ReplyDecoder) decodeFast(body []byte) (*ipc.Reply, bool) {
	if len(body) > d.max || canon.CheckCanonical(body) != nil {
		return nil, false
	}
	var rep ipc.Reply
	c := wire.NewCursor(body, true)
	if !c.Lit(`{"binding":`) || !c.LitBytes(d.raw) {
		return nil, false
	}
	rep.Binding = d.b
	var ok bool
	var s string
	if c.Lit(`,"data":`) {
		var m map[string]any
		if m, ok = c.ObjectMap(); !ok {
			return nil, false
		}
		rep.Data = m
	} else {
		rep.Data = map[string]any{}
	}
	if !c.Lit(`,"host_nonce":`) {
		return nil, false
	}
	if rep.HostNonce, ok = c.Str(); !ok || !c.Lit(`,"protocol_version":`) {
		return nil, false
	}
	if rep.ProtocolVersion, ok = c.Integer(); !ok || !c.Lit(`,"request_digest":`) {
		return nil, false
	}
	if s, ok = c.Str(); !ok || !c.Lit(`,"sequence":`) {
		return nil, false
	}
	rep.RequestDigest = canon.Digest(s)
	if rep.Sequence, ok = c.Integer(); !ok || !c.Lit(`,"state":`) {
		return nil, false
	}
	if s, ok = c.Str(); !ok || !c.Lit(`}`) || !c.AtEnd() {
		return nil, false
	}
	rep.State = ipc.ReplyState(s)
	// The checks ipc.DecodeReply makes after the shape; the binding was
	// validated by NewReplyDecoder.
	if rep.ProtocolVersion != protocol.Version || rep.Sequence < 1 || !protocol.ValidIdentifier(rep.HostNonce) ||
		rep.RequestDigest.Validate() != nil || !rep.State.Valid() {
		return nil, false
	}
	return &rep, true
}
