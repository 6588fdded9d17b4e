// Package wire holds the byte-level helpers that both ends of the runtime
// host protocol use inside this module: a Cursor that reads canonical JSON
// by matching literal member names in order (the fast decoders of ipc's
// Session and of the simulated host's replies), and the framing of a body
// built after room for its header (see doc/protocol.md, “Frames”). Nothing
// here checks limits or names violations: callers do that, and fall back
// to their strict decoders whenever a Cursor reports false.
package wire

import (
	"bytes"
	"strconv"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Cursor reads canonical bytes from the front. Each method consumes one
// token or literal and reports false at anything unexpected, leaving the
// position where it failed; callers then fall back to a decoder that names
// the violation.
type Cursor struct {
	b   []byte
	pos int
	// share makes the strings inside values decoded by ObjectMap (object
	// keys and string values, the bulk of arguments and data) substrings
	// of s, one copy of b made at the first of them, instead of one
	// allocation each. They then keep that copy alive, which is never more
	// than the frame they came from. Strings read with str, the
	// identifiers a caller may keep on their own (logical_effect_id,
	// host_nonce, …), are always copied alone.
	share bool
	s     string
}

// NewCursor returns a Cursor over b. With share set, the strings inside
// the values ObjectMap decodes (object keys and string values) share one
// copy of b; strings read with Str are always copied alone.
func NewCursor(b []byte, share bool) Cursor { return Cursor{b: b, share: share} }

// Lit consumes s if the input continues with it.
func (c *Cursor) Lit(s string) bool {
	if len(c.b)-c.pos < len(s) || string(c.b[c.pos:c.pos+len(s)]) != s {
		return false
	}
	c.pos += len(s)
	return true
}

// LitBytes is Lit for a byte slice, without converting it to a string.
func (c *Cursor) LitBytes(b []byte) bool {
	if !bytes.HasPrefix(c.b[c.pos:], b) {
		return false
	}
	c.pos += len(b)
	return true
}

// rawString consumes a string and returns its content between the quotes
// (still escaped) and whether it holds an escape.
func (c *Cursor) rawString() (raw []byte, escaped, ok bool) {
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

// Str consumes a string and returns it unescaped, in its own allocation.
func (c *Cursor) Str() (string, bool) { return c.text(false) }

// text is Str, returning a substring of the shared copy when shared is set
// and the cursor shares.
func (c *Cursor) text(shared bool) (string, bool) {
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

// Integer consumes an integer token (canonical, so within ±(2^53−1)).
func (c *Cursor) Integer() (int64, bool) {
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

// Object consumes an object value and returns its bytes.
func (c *Cursor) Object() ([]byte, bool) {
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

// anyOf decodes canonical JSON into its natural Go form, exactly as
// canon.Value.Interface does: nil, bool, int64, float64, string, []any,
// map[string]any.
func (c *Cursor) anyOf() (any, bool) {
	if c.pos >= len(c.b) {
		return nil, false
	}
	switch ch := c.b[c.pos]; {
	case ch == '{':
		c.pos++
		m := map[string]any{}
		if c.Lit("}") {
			return m, true
		}
		for {
			k, ok := c.text(true)
			if !ok || !c.Lit(":") {
				return nil, false
			}
			v, ok := c.anyOf()
			if !ok {
				return nil, false
			}
			m[k] = v
			if c.Lit("}") {
				return m, true
			}
			if !c.Lit(",") {
				return nil, false
			}
		}
	case ch == '[':
		c.pos++
		s := []any{}
		if c.Lit("]") {
			return s, true
		}
		for {
			v, ok := c.anyOf()
			if !ok {
				return nil, false
			}
			s = append(s, v)
			if c.Lit("]") {
				return s, true
			}
			if !c.Lit(",") {
				return nil, false
			}
		}
	case ch == '"':
		return c.text(true)
	case ch == 't':
		return true, c.Lit("true")
	case ch == 'f':
		return false, c.Lit("false")
	case ch == 'n':
		return nil, c.Lit("null")
	}
	if n, ok := c.Integer(); ok {
		return n, true
	}
	start := c.pos
	for c.pos < len(c.b) && bytes.IndexByte([]byte("-+.eE0123456789"), c.b[c.pos]) >= 0 {
		c.pos++
	}
	f, err := strconv.ParseFloat(string(c.b[start:c.pos]), 64)
	return f, err == nil && c.pos > start
}

// ObjectMap decodes an object member value as a map.
func (c *Cursor) ObjectMap() (map[string]any, bool) {
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

// Pos returns the offset of the next unread byte.
func (c *Cursor) Pos() int { return c.pos }

// AtEnd reports whether every byte was consumed.
func (c *Cursor) AtEnd() bool { return c.pos == len(c.b) }
