package ipc

import (
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/wire"
)

// This file decodes request bodies that canon.CheckCanonical has already
// accepted. Canonical bytes have one spelling per document: no whitespace,
// members in a fixed order, strings with only the RFC 8785 escapes and
// numbers in one form. So the envelope and the four payloads can be read
// by matching their literal member names in order, without building a
// canon.Value tree (with internal/wire's Cursor). Each function reports false at anything unexpected;
// the caller then runs the tree-based decoder, which names the exact
// violation. The fast path therefore never decides a refusal, only an
// acceptance that the tree-based path would make identically (the fuzz
// target FuzzDecodeRequest checks both agree).

// knownBinding is a binding with its canonical bytes: a request whose
// binding is exactly these bytes carries this binding.
type knownBinding struct {
	raw []byte
	b   AttemptBinding
}

// decodeEnvelopeFast reads the envelope of a canonical body. Only a
// request whose binding is the known one is decoded here; any other
// binding is left to the tree-based decoder, which the Session then
// refuses anyway.
func decodeEnvelopeFast(body []byte, req *Request, known *knownBinding) bool {
	if known == nil {
		return false
	}
	c := wire.NewCursor(body, false)
	if !c.Lit(`{"binding":`) || !c.LitBytes(known.raw) {
		return false
	}
	req.Binding = known.b
	var ok bool
	if !c.Lit(`,"host_nonce":`) {
		return false
	}
	if req.HostNonce, ok = c.Str(); !ok || !c.Lit(`,"method":"`) {
		return false
	}
	switch {
	case c.Lit(`effect.request"`):
		req.Method = MethodEffect
	case c.Lit(`bootstrap"`):
		req.Method = MethodBootstrap
	case c.Lit(`invoke.admit"`):
		req.Method = MethodAdmit
	case c.Lit(`result.publish"`):
		req.Method = MethodPublish
	default:
		return false
	}
	if !c.Lit(`,"payload":`) {
		return false
	}
	if req.payloadRaw, ok = c.Object(); !ok || !c.Lit(`,"protocol_version":`) {
		return false
	}
	if req.ProtocolVersion, ok = c.Integer(); !ok || !c.Lit(`,"sequence":`) {
		return false
	}
	if req.Sequence, ok = c.Integer(); !ok || !c.Lit(`}`) || !c.AtEnd() {
		return false
	}
	n := len(req.payloadRaw)
	req.payloadRaw = req.payloadRaw[:n:n]
	req.lazy = true
	return true
}

func bootstrapFast(raw []byte) (p BootstrapPayload, ok bool) {
	c := wire.NewCursor(raw, false)
	var s string
	if !c.Lit(`{"bootstrap_id":`) {
		return p, false
	}
	if p.BootstrapID, ok = c.Str(); !ok || !c.Lit(`,"launch_digest":`) {
		return p, false
	}
	if s, ok = c.Str(); !ok || !c.Lit(`,"pid":`) {
		return p, false
	}
	p.LaunchDigest = canon.Digest(s)
	pid, ok := c.Integer()
	if !ok || !c.Lit(`}`) || !c.AtEnd() || int64(int(pid)) != pid {
		return p, false
	}
	p.PID = int(pid)
	return p, true
}

func admitFast(raw []byte) (p AdmitPayload, ok bool) {
	c := wire.NewCursor(raw, true)
	if !c.Lit(`{"arguments":`) {
		return p, false
	}
	if p.Arguments, ok = c.ObjectMap(); !ok || !c.Lit(`}`) || !c.AtEnd() {
		return p, false
	}
	return p, true
}

func effectFast(raw []byte) (p EffectRequest, ok bool) {
	c := wire.NewCursor(raw, true)
	var s string
	if !c.Lit(`{"arguments":`) {
		return p, false
	}
	if p.Arguments, ok = c.ObjectMap(); !ok || !c.Lit(`,"connection_ref":`) {
		return p, false
	}
	if p.ConnectionRef, ok = c.Str(); !ok || !c.Lit(`,"connector_revision":`) {
		return p, false
	}
	if s, ok = c.Str(); !ok || !c.Lit(`,"logical_effect_id":`) {
		return p, false
	}
	p.ConnectorRevision = canon.Digest(s)
	if p.LogicalEffectID, ok = c.Str(); !ok || !c.Lit(`,"operation":`) {
		return p, false
	}
	if p.Operation, ok = c.Str(); !ok || !c.Lit(`}`) || !c.AtEnd() {
		return p, false
	}
	return p, true
}

// publishFast also returns the data's canonical bytes.
func publishFast(raw []byte) (p PublishPayload, data []byte, ok bool) {
	c := wire.NewCursor(raw, true)
	var s string
	if !c.Lit(`{"data":`) {
		return p, nil, false
	}
	start := c.Pos()
	if p.Data, ok = c.ObjectMap(); !ok {
		return p, nil, false
	}
	end := c.Pos()
	data = raw[start:end:end]
	if !c.Lit(`,"data_digest":`) {
		return p, nil, false
	}
	if s, ok = c.Str(); !ok || !c.Lit(`}`) || !c.AtEnd() {
		return p, nil, false
	}
	p.DataDigest = canon.Digest(s)
	return p, data, true
}
