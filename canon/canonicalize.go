package canon

import (
	"bytes"
)

// Default limits. They match the protocol: no document may exceed 1 MiB,
// and nesting stays well inside what the Python host can parse.
const (
	// DefaultMaxBytes is the largest input accepted by default (1 MiB,
	// the protocol's frame limit); longer input is [ErrTooLarge].
	DefaultMaxBytes = 1 << 20
	// DefaultMaxDepth is the deepest nesting of arrays and objects
	// accepted by default; deeper input is [ErrTooDeep].
	DefaultMaxDepth = 512
	// DepthLimit is the deepest nesting the package handles at all, so
	// that neither an option nor a value can exhaust a goroutine's stack
	// (each level costs up to a few KiB of it): a larger
	// [Options.MaxDepth] counts as DepthLimit, and [Marshal],
	// [Value.AppendCanonical] and [Value.Decode] refuse a Go value nested
	// deeper (a cyclic one is infinitely deep) with [ErrTooDeep].
	DepthLimit = 10000
)

// Options sets the limits for parsing. The zero value uses
// [DefaultMaxBytes] and [DefaultMaxDepth]. Options is a plain value; it is
// safe to use from several goroutines at once.
type Options struct {
	// MaxBytes is the largest input accepted. Zero means DefaultMaxBytes;
	// a negative value means no limit.
	MaxBytes int
	// MaxDepth is the deepest nesting of arrays and objects accepted (a
	// scalar has depth 0, [] has depth 1). Zero means DefaultMaxDepth; a
	// negative value refuses every array and object; a value above
	// [DepthLimit] means DepthLimit.
	MaxDepth int
}

func (o Options) maxDepth() int {
	switch {
	case o.MaxDepth == 0:
		return DefaultMaxDepth
	case o.MaxDepth < 0:
		return 0
	}
	return min(o.MaxDepth, DepthLimit)
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// start checks the whole-input rules and returns a scanner past leading
// whitespace.
func (o Options) start(in []byte) (scanner, error) {
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	if limit > 0 && len(in) > limit {
		return scanner{}, errAt(ErrTooLarge, limit, "input is %d bytes, limit is %d", len(in), limit)
	}
	if bytes.HasPrefix(in, bom) {
		return scanner{}, errAt(ErrSyntax, 0, "unexpected UTF-8 byte order mark; send JSON without a BOM")
	}
	s := scanner{in: in, maxDepth: o.maxDepth()}
	s.skipSpace()
	if s.pos == len(in) {
		return scanner{}, errAt(ErrSyntax, s.pos, "empty input: want one JSON value")
	}
	return s, nil
}

// finish refuses anything but whitespace after the value.
func (s *scanner) finish() error {
	s.skipSpace()
	if s.pos != len(s.in) {
		return errAt(ErrSyntax, s.pos, "trailing data after the JSON value, starting with %s", s.describe(s.pos))
	}
	return nil
}

// Canonicalize checks that in is strict JSON (see the package comment) and
// returns its RFC 8785 canonical bytes, using the default limits. The
// result is a fresh slice; in is not modified or retained. On error the
// result is nil and the error an [*Error].
func Canonicalize(in []byte) ([]byte, error) { return Options{}.Canonicalize(in) }

// DigestJSON returns the digest of the canonical form of the JSON bytes in,
// refusing what [Canonicalize] refuses.
func DigestJSON(in []byte) (Digest, error) { return Options{}.DigestJSON(in) }

// DigestJSON is like the package-level [DigestJSON] with o's limits.
func (o Options) DigestJSON(in []byte) (Digest, error) {
	out, err := o.Canonicalize(in)
	if err != nil {
		return "", err
	}
	return Sum(out), nil
}

// Canonicalize is like the package-level [Canonicalize] with o's limits.
func (o Options) Canonicalize(in []byte) ([]byte, error) {
	s, err := o.start(in)
	if err != nil {
		return nil, err
	}
	c := canonicalizer{scanner: s, mark: s.pos, budget: 2*len(in) + 4096}
	out, err := c.value(make([]byte, 0, len(in)), 0)
	if err == errRearrangedTooMuch {
		// Nested objects that each need rearranging cost O(depth × size)
		// here; the tree path costs O(size log size) on any shape.
		v, err := o.Parse(in)
		if err != nil {
			return nil, err
		}
		if out, err = v.AppendCanonical(out[:0]); err != nil {
			return nil, err
		}
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out = c.flush(out)
	if err := c.finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// canonicalizer writes canonical bytes while it scans, in one pass.
//
// Input that is already canonical is not copied token by token: the bytes
// from mark to the cursor are pending output, identical to the input, and
// are copied in one piece when something different must be written
// (whitespace dropped, a string re-escaped, a number reformatted, an object
// rearranged) or at the end. So a position in the output is len(out) plus
// the pending bytes before it ([canonicalizer.at]).
//
// Object members are written in input order. As long as an object's keys
// arrive in strictly ascending order nothing is recorded (the common case:
// the peer sends canonical bytes); at the first key out of order the members
// written so far are recovered by reading them back from out, and from then
// on every member is recorded so that the object can be rearranged, through
// scratch, when it closes. Reading back and rearranging both draw on a
// budget of bytes proportional to the input: nested objects that each need
// rearranging would otherwise cost O(depth × size).
//
// The output slice travels through the methods as an argument and a result
// rather than living in the struct: stores of a slice header through a
// pointer need GC write barriers, which cost measurably here.
type canonicalizer struct {
	scanner
	mark    int      // in[mark:pos] is output not yet copied to out
	members []member // a stack shared by all open objects
	keys    []byte   // decoded escaped keys, a stack like members
	scratch []byte
	budget  int // bytes recover and reorder may still touch before the tree path takes over
}

// member is an object member already written: its decoded key, the offset
// of the key in the input (-1 when it was recovered from out), and the span
// of `"key":value` in the output.
type member struct {
	key        keyRef
	inOff      int
	start, end int
}

// keyRef locates a decoded key: in the input or in out, between its
// quotes, when it needs no escape, else in keys. Offsets stay valid while
// out and keys grow.
type keyRef struct {
	off, n int
	where  uint8
}

const (
	keyInOut uint8 = iota
	keyInInput
	keyInKeys
)

func (c *canonicalizer) key(out []byte, k keyRef) []byte {
	switch k.where {
	case keyInInput:
		return c.in[k.off : k.off+k.n]
	case keyInKeys:
		return c.keys[k.off : k.off+k.n]
	}
	return out[k.off : k.off+k.n]
}

// at returns the output position that input position pos (at or after
// mark) will have.
func (c *canonicalizer) at(out []byte, pos int) int { return len(out) + pos - c.mark }

// flush copies the pending output, up to the cursor, to out.
func (c *canonicalizer) flush(out []byte) []byte {
	out = append(out, c.in[c.mark:c.pos]...)
	c.mark = c.pos
	return out
}

// replace writes b in place of the input token that ends at the cursor and
// starts at start.
func (c *canonicalizer) replace(out []byte, start int, b []byte) []byte {
	out = append(out, c.in[c.mark:start]...)
	out = append(out, b...)
	c.mark = c.pos
	return out
}

// spaceAhead reports whether the cursor may be at whitespace, which
// dropSpace then keeps out of the output. The test is inlined at each call
// site; canonical input has no whitespace.
func (c *canonicalizer) spaceAhead() bool { return c.pos < len(c.in) && c.in[c.pos] <= ' ' }

func (c *canonicalizer) dropSpace(out []byte) []byte {
	if isSpace(c.in[c.pos]) {
		out = c.flush(out)
		c.skipSpace()
		c.mark = c.pos
	}
	return out
}

func (c *canonicalizer) value(out []byte, depth int) ([]byte, error) {
	if c.pos >= len(c.in) {
		return out, errAt(ErrSyntax, c.pos, "unexpected end of input: want a value")
	}
	switch ch := c.in[c.pos]; ch {
	case ' ', '\t', '\n', '\r':
		// Whitespace before a value: rare in canonical input, so it is
		// dropped here rather than tested for at every separator.
		out = c.dropSpace(out)
		return c.value(out, depth)
	case '{':
		return c.object(out, depth+1)
	case '[':
		return c.array(out, depth+1)
	case '"':
		start, end, escaped, err := c.str()
		if err != nil || !escaped {
			return out, err
		}
		out = append(out, c.in[c.mark:start-1]...)
		c.scratch = unescape(c.scratch[:0], c.in[start:end])
		out = appendQuoted(out, c.scratch)
		c.mark = c.pos
		return out, nil
	case 't':
		return out, c.literal("true")
	case 'f':
		return out, c.literal("false")
	case 'n':
		return out, c.literal("null")
	default:
		if out, ok := c.fastNumber(out); ok {
			return out, nil
		}
		start, end, isInt, err := c.number()
		if err != nil {
			if ch != '-' && !isDigit(ch) && err.(*Error).Err == ErrSyntax {
				return out, errAt(ErrSyntax, c.pos, "want a value, found %s", c.describe(c.pos))
			}
			return out, err
		}
		tok := c.in[start:end]
		dot, exp := c.numDot-start, c.numExp-start
		if c.numDot < 0 {
			dot = -1
		}
		if c.numExp < 0 {
			exp = -1
		}
		switch n := verbatimNumber(tok, isInt, dot, exp); {
		case n == len(tok):
			return out, nil
		case n > 0:
			return c.replace(out, start, tok[:n]), nil
		}
		out = append(out, c.in[c.mark:start]...)
		c.mark = c.pos
		return formatNumber(out, tok, isInt, start)
	}
}

// canonicalRun returns the offset just past the run of canonical numbers,
// each followed by a comma, that starts at in[i]: i itself when in[i]
// does not start one. It works on locals, so that nothing but the offset
// is carried from one number to the next.
func canonicalRun(in []byte, i int) int {
	for len(in)-i >= numWindow {
		n := canonicalLen((*[numWindow]byte)(in[i : i+numWindow]))
		if n == 0 || in[i+n] != ',' {
			return i
		}
		i += n + 1
	}
	return i
}

// fastNumber writes the number token at the cursor when the float fast
// path decides it (see shortest.go): a token already canonical stays in
// the pending output; a float whose digits, less trailing zeros, are
// already its shortest ones is rewritten in ES6 notation. It reports false,
// having consumed nothing, for every other token, which the full path
// formats or refuses.
func (c *canonicalizer) fastNumber(out []byte) ([]byte, bool) {
	start := c.pos
	if end := canonicalNumberEnd(c.in, start); end >= 0 {
		c.pos = end
		return out, true
	}
	var end, k, q int
	var d uint64
	var flags uint
	if len(c.in)-start >= numWindow {
		end, d, k, q, flags = readWindow((*[numWindow]byte)(c.in[start:start+numWindow]), false)
		end += start
	} else {
		end, d, k, q, flags = readNumber(c.in, start, false)
	}
	switch {
	case flags&numOK == 0:
		return out, false
	case flags&numInt != 0:
		if flags&numSpelled == 0 {
			return out, false
		}
	case flags&numSpelled == 0 || !canonicalDigits(d, k, q):
		if flags&numExp == 0 {
			// In fixed notation, trailing fraction zeros (and then the
			// point) are all that may be wrong: what is left has at most
			// 15 significant digits, so it is the shortest form.
			n := end
			for c.in[n-1] == '0' {
				n--
			}
			sig := k - (end - n)
			if c.in[n-1] == '.' {
				n--
			}
			if pos := k + q; sig <= 15 && pos > -6 && pos <= 21 {
				out = append(out, c.in[c.mark:n]...)
				c.mark, c.pos = end, end
				return out, true
			}
		}
		if k < 16 {
			_, d, k, q, _ = readNumber(c.in, start, true)
		}
		o, ok := appendShortest(append(out, c.in[c.mark:start]...), flags&numNeg != 0, d, k, q)
		if !ok {
			return out, false // out's length is unchanged
		}
		out, c.mark = o, end
	}
	c.pos = end
	return out, true
}

func (s *scanner) enter(depth int) error {
	if depth > s.maxDepth {
		return errAt(ErrTooDeep, s.pos, "nesting depth %d exceeds the limit %d", depth, s.maxDepth)
	}
	return nil
}

// next consumes whitespace and then either a ',' (more follows) or the
// closing byte (done).
func (s *scanner) next(closing byte) (more bool, err error) {
	s.skipSpace()
	if s.pos < len(s.in) {
		switch s.in[s.pos] {
		case ',':
			s.pos++
			s.skipSpace()
			return true, nil
		case closing:
			s.pos++
			return false, nil
		}
	}
	return false, errAt(ErrSyntax, s.pos, "want ',' or '%c', found %s", closing, s.describe(s.pos))
}

// next is [scanner.next] that keeps whitespace out of the output. It
// leaves whitespace after a ',' to the element that follows, which tests
// for it only when it does not find the byte it expects.
func (c *canonicalizer) next(out []byte, closing byte) ([]byte, bool, error) {
	if c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ',':
			c.pos++
			return out, true, nil
		case closing:
			c.pos++
			return out, false, nil
		case ' ', '\t', '\n', '\r':
			out = c.dropSpace(out)
			return c.next(out, closing)
		}
	}
	return out, false, errAt(ErrSyntax, c.pos, "want ',' or '%c', found %s", closing, c.describe(c.pos))
}

func (c *canonicalizer) array(out []byte, depth int) ([]byte, error) {
	if err := c.enter(depth); err != nil {
		return out, err
	}
	c.pos++
	if c.spaceAhead() {
		out = c.dropSpace(out)
	}
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		return out, nil
	}
	for {
		// An array of numbers is read here, without the general value and
		// separator steps: first a run of canonical numbers, each with its
		// comma; then a number and its comma at a time; the general steps
		// take any other element, or refuse it.
		if c.pos < len(c.in) && numberStart(c.in[c.pos]) {
			// After the run, the cursor is past a comma, at an element,
			// unless the run is empty: that element stays at the cursor.
			c.pos = canonicalRun(c.in, c.pos)
		}
		if c.pos < len(c.in) && numberStart(c.in[c.pos]) {
			var ok bool
			if out, ok = c.fastNumber(out); ok && c.pos < len(c.in) && c.in[c.pos] == ',' {
				c.pos++
				continue
			}
			if ok {
				var more bool
				var err error
				if out, more, err = c.next(out, ']'); err != nil || !more {
					return out, err
				}
				continue
			}
		}
		var err error
		if out, err = c.value(out, depth); err != nil {
			return out, err
		}
		var more bool
		if out, more, err = c.next(out, ']'); err != nil || !more {
			return out, err
		}
	}
}
