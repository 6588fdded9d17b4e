package ipc

import (
	"bytes"
	"strconv"

	"github.com/zeoruntime/runtimeipc/canon"
)

// This file decodes request bodies that canon.CheckCanonical has already
// accepted. Canonical bytes have one spelling per document: no whitespace,
// members in a fixed order, strings with only the RFC 8785 escapes and
// numbers in one form. So the envelope and the four payloads can be read
// by matching their literal member names in order, without building a
// canon.Value tree. Each function reports false at anything unexpected;
// the caller then runs the tree-based decoder, which names the exact
// violation. The fast path therefore never decides a refusal, only an
// acceptance that the tree-based path would make identically (the fuzz
// target FuzzDecodeRequest checks both agree).

// cursor reads canonical bytes from the front.
type cursor struct {
	b   []byte
	pos int
	// share makes the strings inside values decoded by anyOf (object
	// keys and string values, the bulk of arguments and data) substrings
	// of s, one copy of b made at the first of them, instead of one
	// allocation each. They then keep that copy alive, which is never more
	// than the frame they came from. Strings read with str, the
	// identifiers a caller may keep on their own (logical_effect_id,
	// host_nonce, …), are always copied alone.
	share bool
	s     string
}

// newCursor returns a cursor over b whose decoded values share one copy of
// b for their strings.
func newCursor(b []byte) cursor { return cursor{b: b, share: true} }

// lit consumes s if the input continues with it.
func (c *cursor) lit(s string) bool {
	if len(c.b)-c.pos < len(s) || string(c.b[c.pos:c.pos+len(s)]) != s {
		return false
	}
	c.pos += len(s)
	return true
}

// litBytes is lit for a byte slice, without converting it to a string.
func (c *cursor) litBytes(b []byte) bool {
	if !bytes.HasPrefix(c.b[c.pos:], b) {
		return false
	}
	c.pos += len(b)
	return true
}

// rawString consumes a string and returns its content between the quotes
// (still escaped) and whether it holds an escape.
func (c *cursor) rawString() (raw []byte, escaped, ok bool) {
	if c.pos >= len(c.b) || c.b[c.pos] != '"' {
		return nil, false, false
	}
	start := c.pos + 1
	i := start
	for {
		j := bytes.IndexByte(c.b[i:], '"')
		if j < 0 {
			return nil, false, false
		}
		i += j
		// A quote preceded by an odd run of backslashes is escaped.
		k := i
		for k > start && c.b[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 0 {
			break
		}
		i++
	}
	c.pos = i + 1
	raw = c.b[start:i]
	return raw, bytes.IndexByte(raw, '\\') >= 0, true
}

// str consumes a string and returns it unescaped, in its own allocation.
func (c *cursor) str() (string, bool) { return c.text(false) }

// text is str, returning a substring of the shared copy when shared is set
// and the cursor shares.
func (c *cursor) text(shared bool) (string, bool) {
	raw, esc, ok := c.rawString()
	if !ok {
		return "", false
	}
	if !esc {
		if shared && c.share {
			if c.s == "" {
				c.s = string(c.b)
			}
			return c.s[c.pos-len(raw)-1 : c.pos-1], true
		}
		return string(raw), true
	}
	// raw sits between the quotes of a token already checked canonical.
	text, err := canon.Unquote(c.b[c.pos-len(raw)-2 : c.pos])
	return text, err == nil
}

// integer consumes an integer token (canonical, so within ±(2^53−1)).
func (c *cursor) integer() (int64, bool) {
	i := c.pos
	if i < len(c.b) && c.b[i] == '-' {
		i++
	}
	d := i
	for i < len(c.b) && '0' <= c.b[i] && c.b[i] <= '9' {
		i++
	}
	if i == d || i < len(c.b) && (c.b[i] == '.' || c.b[i] == 'e' || c.b[i] == 'E') {
		return 0, false
	}
	if i-d > 16 {
		return 0, false // canonical integers have at most 16 digits
	}
	var n int64
	for _, ch := range c.b[d:i] {
		n = n*10 + int64(ch-'0')
	}
	if d > c.pos {
		n = -n
	}
	c.pos = i
	return n, true
}

// object consumes an object value and returns its bytes.
func (c *cursor) object() ([]byte, bool) {
	if c.pos >= len(c.b) || c.b[c.pos] != '{' {
		return nil, false
	}
	start, depth := c.pos, 0
	for c.pos < len(c.b) {
		switch c.b[c.pos] {
		case '"':
			if _, _, ok := c.rawString(); !ok {
				return nil, false
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				c.pos++
				return c.b[start:c.pos], true
			}
		}
		c.pos++
	}
	return nil, false
}

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
	c := cursor{b: body}
	if !c.lit(`{"binding":`) || !c.litBytes(known.raw) {
		return false
	}
	req.Binding = known.b
	var ok bool
	if !c.lit(`,"host_nonce":`) {
		return false
	}
	if req.HostNonce, ok = c.str(); !ok || !c.lit(`,"method":"`) {
		return false
	}
	switch {
	case c.lit(`effect.request"`):
		req.Method = MethodEffect
	case c.lit(`bootstrap"`):
		req.Method = MethodBootstrap
	case c.lit(`invoke.admit"`):
		req.Method = MethodAdmit
	case c.lit(`result.publish"`):
		req.Method = MethodPublish
	default:
		return false
	}
	if !c.lit(`,"payload":`) {
		return false
	}
	if req.payloadRaw, ok = c.object(); !ok || !c.lit(`,"protocol_version":`) {
		return false
	}
	if req.ProtocolVersion, ok = c.integer(); !ok || !c.lit(`,"sequence":`) {
		return false
	}
	if req.Sequence, ok = c.integer(); !ok || !c.lit(`}`) || c.pos != len(body) {
		return false
	}
	n := len(req.payloadRaw)
	req.payloadRaw = req.payloadRaw[:n:n]
	req.lazy = true
	return true
}

// anyOf decodes canonical JSON into its natural Go form, exactly as
// canon.Value.Interface does: nil, bool, int64, float64, string, []any,
// map[string]any.
func (c *cursor) anyOf() (any, bool) {
	if c.pos >= len(c.b) {
		return nil, false
	}
	switch ch := c.b[c.pos]; {
	case ch == '{':
		c.pos++
		m := map[string]any{}
		if c.lit("}") {
			return m, true
		}
		for {
			k, ok := c.text(true)
			if !ok || !c.lit(":") {
				return nil, false
			}
			v, ok := c.anyOf()
			if !ok {
				return nil, false
			}
			m[k] = v
			if c.lit("}") {
				return m, true
			}
			if !c.lit(",") {
				return nil, false
			}
		}
	case ch == '[':
		c.pos++
		s := []any{}
		if c.lit("]") {
			return s, true
		}
		for {
			v, ok := c.anyOf()
			if !ok {
				return nil, false
			}
			s = append(s, v)
			if c.lit("]") {
				return s, true
			}
			if !c.lit(",") {
				return nil, false
			}
		}
	case ch == '"':
		return c.text(true)
	case ch == 't':
		return true, c.lit("true")
	case ch == 'f':
		return false, c.lit("false")
	case ch == 'n':
		return nil, c.lit("null")
	}
	if n, ok := c.integer(); ok {
		return n, true
	}
	start := c.pos
	for c.pos < len(c.b) && bytes.IndexByte([]byte("-+.eE0123456789"), c.b[c.pos]) >= 0 {
		c.pos++
	}
	f, err := strconv.ParseFloat(string(c.b[start:c.pos]), 64)
	return f, err == nil && c.pos > start
}

// objectMap decodes an object member value as a map.
func (c *cursor) objectMap() (map[string]any, bool) {
	if c.pos >= len(c.b) || c.b[c.pos] != '{' {
		return nil, false
	}
	v, ok := c.anyOf()
	if !ok {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

func bootstrapFast(raw []byte) (p BootstrapPayload, ok bool) {
	c := cursor{b: raw}
	var s string
	if !c.lit(`{"bootstrap_id":`) {
		return p, false
	}
	if p.BootstrapID, ok = c.str(); !ok || !c.lit(`,"launch_digest":`) {
		return p, false
	}
	if s, ok = c.str(); !ok || !c.lit(`,"pid":`) {
		return p, false
	}
	p.LaunchDigest = canon.Digest(s)
	pid, ok := c.integer()
	if !ok || !c.lit(`}`) || c.pos != len(raw) || int64(int(pid)) != pid {
		return p, false
	}
	p.PID = int(pid)
	return p, true
}

func admitFast(raw []byte) (p AdmitPayload, ok bool) {
	c := newCursor(raw)
	if !c.lit(`{"arguments":`) {
		return p, false
	}
	if p.Arguments, ok = c.objectMap(); !ok || !c.lit(`}`) || c.pos != len(raw) {
		return p, false
	}
	return p, true
}

func effectFast(raw []byte) (p EffectRequest, ok bool) {
	c := newCursor(raw)
	var s string
	if !c.lit(`{"arguments":`) {
		return p, false
	}
	if p.Arguments, ok = c.objectMap(); !ok || !c.lit(`,"connection_ref":`) {
		return p, false
	}
	if p.ConnectionRef, ok = c.str(); !ok || !c.lit(`,"connector_revision":`) {
		return p, false
	}
	if s, ok = c.str(); !ok || !c.lit(`,"logical_effect_id":`) {
		return p, false
	}
	p.ConnectorRevision = canon.Digest(s)
	if p.LogicalEffectID, ok = c.str(); !ok || !c.lit(`,"operation":`) {
		return p, false
	}
	if p.Operation, ok = c.str(); !ok || !c.lit(`}`) || c.pos != len(raw) {
		return p, false
	}
	return p, true
}

// publishFast also returns the data's canonical bytes.
func publishFast(raw []byte) (p PublishPayload, data []byte, ok bool) {
	c := newCursor(raw)
	var s string
	if !c.lit(`{"data":`) {
		return p, nil, false
	}
	start := c.pos
	if p.Data, ok = c.objectMap(); !ok {
		return p, nil, false
	}
	data = raw[start:c.pos:c.pos]
	if !c.lit(`,"data_digest":`) {
		return p, nil, false
	}
	if s, ok = c.str(); !ok || !c.lit(`}`) || c.pos != len(raw) {
		return p, nil, false
	}
	p.DataDigest = canon.Digest(s)
	return p, data, true
}
