package canon

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrNotCanonical: the input is strict JSON but not in its RFC 8785
// canonical form (CheckCanonical only).
var ErrNotCanonical = errors.New("not canonical JSON")

// CheckCanonical reports whether in is strict JSON already in its RFC 8785
// canonical form, that is whether Canonicalize(in) would succeed and return
// exactly in, using the default limits. It allocates nothing when in is
// canonical. Otherwise the error is an [*Error]: the one Canonicalize
// returns when in is not strict JSON, else one wrapping [ErrNotCanonical]
// whose Offset is the first byte where in and its canonical form differ.
func CheckCanonical(in []byte) error { return Options{}.CheckCanonical(in) }

// CheckCanonical is like the package-level [CheckCanonical] with o's
// limits.
func (o Options) CheckCanonical(in []byte) error {
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	if limit < 0 || len(in) <= limit {
		c := checker{in: in, maxDepth: o.maxDepth()}
		if c.value(0) && c.pos == len(in) {
			return nil
		}
	}
	// The fast pass accepts only what is surely canonical; the full
	// canonicalizer decides the rest and names the exact refusal.
	out, err := o.Canonicalize(in)
	if err != nil {
		return err
	}
	n := min(len(in), len(out))
	off := n
	for i := 0; i < n; i++ {
		if in[i] != out[i] {
			off = i
			break
		}
	}
	if off == len(in) && len(in) == len(out) {
		// Only reachable if the fast pass is more conservative than the
		// canonicalizer (for example an escaped key).
		return nil
	}
	return &Error{Err: ErrNotCanonical, Offset: int64(off),
		Detail: fmt.Sprintf("canonical form has %d bytes, input has %d; first difference at byte %d", len(out), len(in), off)}
}

// checker is a single forward pass over bytes that must already be
// canonical. Each method returns false at the first byte that is not, or
// at any construct it does not decide itself (an escaped object key);
// CheckCanonical then falls back to Canonicalize.
type checker struct {
	in       []byte
	pos      int
	maxDepth int
}

func (c *checker) value(depth int) bool {
	if c.pos >= len(c.in) {
		return false
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object(depth + 1)
	case ch == '[':
		return c.array(depth + 1)
	case ch == '"':
		_, ok := c.str()
		return ok
	case ch == '-' || '0' <= ch && ch <= '9':
		return c.number()
	case ch == 't':
		return c.word("true")
	case ch == 'f':
		return c.word("false")
	case ch == 'n':
		return c.word("null")
	}
	return false
}

func (c *checker) word(w string) bool {
	if len(c.in)-c.pos < len(w) || string(c.in[c.pos:c.pos+len(w)]) != w {
		return false
	}
	c.pos += len(w)
	return true
}

func (c *checker) array(depth int) bool {
	if depth > c.maxDepth {
		return false
	}
	c.pos++ // '['
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return true
	}
	for {
		if !c.value(depth) || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			return true
		default:
			return false
		}
	}
}

func (c *checker) object(depth int) bool {
	if depth > c.maxDepth {
		return false
	}
	c.pos++ // '{'
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		return true
	}
	var prev []byte
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		key, ok := c.str()
		// An escaped key sorts by its decoded text; leave it to the
		// canonicalizer.
		if !ok || key == nil {
			return false
		}
		if prev != nil && compareUTF16(prev, key) >= 0 {
			return false
		}
		prev = key
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		if !c.value(depth) || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			return true
		default:
			return false
		}
	}
}

// str checks a string in canonical form: raw valid UTF-8 except '"', '\\'
// and U+0000..U+001F, which must carry the RFC 8785 escapes. It returns the
// raw content when the string has no escape (nil, true when it has).
func (c *checker) str() ([]byte, bool) {
	in := c.in
	open := c.pos
	i := open + 1
	escaped := false
	for {
		if i = plainPrefix(in, i); i >= len(in) {
			return nil, false
		}
		switch ch := in[i]; {
		case ch == '"':
			c.pos = i + 1
			if escaped {
				return nil, true
			}
			return in[open+1 : i : i], true
		case ch == '\\':
			n := canonicalEscape(in[i:])
			if n == 0 {
				return nil, false
			}
			escaped = true
			i += n
		case ch < 0x20:
			return nil, false
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size <= 1 {
				return nil, false
			}
			i += size
		}
	}
}

// canonicalEscape returns the length of the escape at the start of b when
// it is the one RFC 8785 writes, else 0.
func canonicalEscape(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	switch b[1] {
	case '"', '\\', 'b', 't', 'n', 'f', 'r':
		return 2
	case 'u':
		// Only U+0000..U+001F without a short form, in lowercase hex.
		if len(b) < 6 || b[2] != '0' || b[3] != '0' || (b[4] != '0' && b[4] != '1') {
			return 0
		}
		h := b[5]
		var v byte
		switch {
		case '0' <= h && h <= '9':
			v = h - '0'
		case 'a' <= h && h <= 'f':
			v = h - 'a' + 10
		default:
			return 0
		}
		v += (b[4] - '0') << 4
		switch v {
		case '\b', '\t', '\n', '\f', '\r':
			return 0
		}
		return 6
	}
	return 0
}

// number checks a number token in canonical form: an integer within
// ±(2^53−1) written without leading zeros and never as -0, or a float
// written exactly as AppendFloat writes its value.
func (c *checker) number() bool {
	if end := canonicalNumberEnd(c.in, c.pos); end >= 0 {
		c.pos = end
		return true
	}
	in := c.in
	start := c.pos
	i := start
	if in[i] == '-' {
		i++
	}
	if i >= len(in) {
		return false
	}
	switch {
	case in[i] == '0':
		i++
	case '1' <= in[i] && in[i] <= '9':
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
	default:
		return false
	}
	isInt := true
	if i < len(in) && in[i] == '.' {
		isInt = false
		i++
		d := i
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		isInt = false
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		d := i
		for i < len(in) && '0' <= in[i] && in[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	tok := in[start:i]
	c.pos = i
	if isInt {
		if string(tok) == "-0" {
			return false
		}
		digits := tok
		if digits[0] == '-' {
			digits = digits[1:]
		}
		if len(digits) != len(maxSafe) {
			return len(digits) < len(maxSafe)
		}
		return string(digits) <= maxSafe
	}
	if len(tok) > 32 {
		return false // longer than any ES6 shortest form
	}
	var sb [32]byte
	out, err := AppendFloat(sb[:0], parseFloatToken(tok))
	return err == nil && string(out) == string(tok)
}
