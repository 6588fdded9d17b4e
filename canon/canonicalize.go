package canon

import (
	"bytes"
	"errors"
	"hash/maphash"
	"slices"
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
	// negative value refuses every array and object.
	MaxDepth int
}

func (o Options) maxDepth() int {
	switch {
	case o.MaxDepth == 0:
		return DefaultMaxDepth
	case o.MaxDepth < 0:
		return 0
	}
	return o.MaxDepth
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

// errRearrangedTooMuch stops the one-pass canonicalizer when rearranging
// objects has moved more bytes than its budget; it never leaves the package.
var errRearrangedTooMuch = errors.New("canon: rearranged too much")

// smallObject is the member count up to which duplicate keys of an
// unsorted object are found by a linear scan rather than a set.
const smallObject = 16

func (c *canonicalizer) object(out []byte, depth int) ([]byte, error) {
	if err := c.enter(depth); err != nil {
		return out, err
	}
	open := c.at(out, c.pos)
	c.pos++
	// Separators and whitespace are tested for in the order canonical
	// input makes likely: the byte expected first, whitespace only when
	// it is not there.
	if c.pos < len(c.in) && c.in[c.pos] != '"' {
		if c.spaceAhead() {
			out = c.dropSpace(out)
		}
		if c.pos < len(c.in) && c.in[c.pos] == '}' {
			c.pos++
			return out, nil
		}
	}
	base, keysBase := len(c.members), len(c.keys)
	sorted := true
	var prev keyRef
	var seen keySet // keys, once an unsorted object is large
	for n := 0; ; n++ {
		if sorted {
			// Members that need nothing written are read in one loop on
			// locals, as canonicalRun reads numbers; the steps below take
			// the member it stops at.
			var after []byte
			if n > 0 {
				after = c.key(out, prev)
			}
			if next, ks, ke, count, closed := plainMembers(c.in, c.pos, after, n == 0); count > 0 {
				c.pos, n = next, n+count
				prev = keyRef{off: ks, n: ke - ks, where: keyInInput}
				if closed {
					break
				}
			}
		}
		if c.pos < len(c.in) && c.in[c.pos] != '"' && c.spaceAhead() {
			out = c.dropSpace(out)
		}
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return out, errAt(ErrSyntax, c.pos, "want a string key, found %s", c.describe(c.pos))
		}
		keyOff := c.pos
		start, end, escaped, err := c.str()
		if err != nil {
			return out, err
		}
		var mStart int
		var k keyRef
		if escaped {
			out = append(out, c.in[c.mark:keyOff]...)
			mStart = len(out)
			off := len(c.keys)
			c.keys = unescape(c.keys, c.in[start:end])
			k = keyRef{off: off, n: len(c.keys) - off, where: keyInKeys}
			out = appendQuoted(out, c.keys[off:])
			c.mark = c.pos
		} else {
			mStart = c.at(out, keyOff)
			k = keyRef{off: start, n: end - start, where: keyInInput}
		}
		if n > 0 {
			if sorted {
				switch cmp := compareUTF16(c.key(out, prev), c.key(out, k)); {
				case cmp == 0:
					return out, c.duplicate(out, keyOff, k)
				case cmp > 0:
					sorted = false
					if c.budget -= mStart - open; c.budget < 0 {
						return out, errRearrangedTooMuch
					}
					out = c.flush(out)
					c.recover(out, open+1, mStart-1)
				}
			}
			if !sorted {
				if err := c.unique(out, base, k, keyOff, &seen); err != nil {
					return out, err
				}
			}
		}
		if c.pos < len(c.in) && c.in[c.pos] != ':' && c.spaceAhead() {
			out = c.dropSpace(out)
		}
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return out, errAt(ErrSyntax, c.pos, "want ':' after object key, found %s", c.describe(c.pos))
		}
		c.pos++
		if out, err = c.value(out, depth); err != nil {
			return out, err
		}
		if !sorted {
			c.members = append(c.members, member{key: k, inOff: keyOff, start: mStart, end: c.at(out, c.pos)})
		}
		prev = k
		var more bool
		if out, more, err = c.next(out, '}'); err != nil {
			return out, err
		}
		if !more {
			break
		}
	}
	if !sorted {
		// Everything up to the closing brace must be in out to be moved.
		c.pos--
		out = c.flush(out)
		c.pos++
		var err error
		if out, err = c.reorder(out, open, c.members[base:]); err != nil {
			return out, err
		}
	}
	c.members, c.keys = c.members[:base], c.keys[:keysBase]
	return out, nil
}

// plainMembers reads, from in[i], the members of a sorted object that
// need nothing written: a key of plain string content (see
// [plainStringEnd]) that comes after the key after (any key when first),
// a colon, and a value that is a plain string, a canonical number or a
// literal, with no whitespace, each followed by ',' or, for the last, by
// '}'. It returns how many it read, the offset after the separator of the
// last one, the bounds of that member's key content, and whether the
// separator was '}'; with count 0 it read nothing. The member it stops at
// may be anything, valid or not: the general steps read it.
//
// Keys are compared as bytes: with plain (ASCII) content on one side,
// byte order is UTF-16 order whatever the other key holds.
func plainMembers(in []byte, i int, after []byte, first bool) (next, ks, ke, count int, closed bool) {
	for i < len(in) && in[i] == '"' {
		s := i + 1
		e := plainStringEnd(in, s)
		if e < 0 || !first && bytes.Compare(after, in[s:e]) >= 0 {
			break
		}
		j := e + 1
		if j+1 >= len(in) || in[j] != ':' {
			break
		}
		j++
		switch v := in[j]; v {
		case '"':
			if j = plainStringEnd(in, j+1); j < 0 {
				return
			}
			j++
		case 't':
			if len(in)-j < 4 || string(in[j:j+4]) != "true" {
				return
			}
			j += 4
		case 'f':
			if len(in)-j < 5 || string(in[j:j+5]) != "false" {
				return
			}
			j += 5
		case 'n':
			if len(in)-j < 4 || string(in[j:j+4]) != "null" {
				return
			}
			j += 4
		default:
			if !numberStart(v) {
				return
			}
			if j = canonicalNumberEnd(in, j); j < 0 {
				return
			}
		}
		if j >= len(in) || in[j] != ',' && in[j] != '}' {
			break
		}
		count++
		next, ks, ke = j+1, s, e
		if in[j] == '}' {
			closed = true
			break
		}
		i, after, first = j+1, in[s:e], false
	}
	return
}

func (c *canonicalizer) duplicate(out []byte, keyOff int, k keyRef) error {
	return errAt(ErrDuplicateKey, keyOff, "key %q appears more than once in the object", truncate(string(c.key(out, k))))
}

// unique refuses k if an earlier member of the unsorted object that starts
// at members[base] has the same key. Small objects are scanned; from
// smallObject members on, the object keeps the hash set seen of its keys.
func (c *canonicalizer) unique(out []byte, base int, k keyRef, keyOff int, seen *keySet) error {
	ms := c.members[base:]
	key := c.key(out, k)
	if len(ms) < smallObject {
		for i := range ms {
			if bytes.Equal(c.key(out, ms[i].key), key) {
				return c.duplicate(out, keyOff, k)
			}
		}
		return nil
	}
	if 2*(len(ms)+1) > len(seen.slots) {
		seen.grow(c, out, ms)
	}
	mask := uint64(len(seen.slots) - 1)
	for i := maphash.Bytes(seen.seed, key) & mask; ; i = (i + 1) & mask {
		j := seen.slots[i]
		if j == 0 {
			// The member being read gets index len(ms) once its value is
			// done, before the next lookup.
			seen.slots[i] = len(ms) + 1
			return nil
		}
		if bytes.Equal(c.key(out, ms[j-1].key), key) {
			return c.duplicate(out, keyOff, k)
		}
	}
}

// keySet is an open-addressing hash set of the members of one large
// unsorted object: each slot holds a member index plus one, or 0 when
// empty. It keeps no copy of the keys, so it allocates only its slots.
type keySet struct {
	seed  maphash.Seed
	slots []int
}

// grow resizes the set to at least four slots per member of ms, which it
// then holds.
func (s *keySet) grow(c *canonicalizer, out []byte, ms []member) {
	if s.slots == nil {
		s.seed = maphash.MakeSeed() // per object: keys from the peer cannot aim at collisions
	}
	n := 64
	for n < 4*(len(ms)+1) {
		n *= 2
	}
	s.slots = make([]int, n)
	mask := uint64(n - 1)
	for j := range ms {
		i := maphash.Bytes(s.seed, c.key(out, ms[j].key)) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = j + 1
	}
}

// recover records the members already written, in canonical form, to
// out[from:to]: `"key":value` separated by commas.
func (c *canonicalizer) recover(out []byte, from, to int) {
	for i := from; i < to; {
		ks := i + 1
		j, escaped := ks, false
		for out[j] != '"' {
			if out[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		k := keyRef{off: ks, n: j - ks}
		if escaped {
			off := len(c.keys)
			c.keys = unescape(c.keys, out[ks:j])
			k = keyRef{off: off, n: len(c.keys) - off, where: keyInKeys}
		}
		end := skipCanonical(out, j+2, to)
		c.members = append(c.members, member{key: k, inOff: -1, start: i, end: end})
		i = end + 1
	}
}

// skipCanonical returns the end of the canonical value that starts at
// b[i], which ends at or before limit.
func skipCanonical(b []byte, i, limit int) int {
	depth := 0
	for j := i; j < limit; j++ {
		switch b[j] {
		case '"':
			j++
			for b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if depth == 0 {
				return j + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1
			}
		case ',':
			if depth == 0 {
				return j
			}
		}
	}
	return limit
}

// reorder sorts the members of the object that starts at out[open] and
// rewrites its body in key order. Keys are already known to be unique.
func (c *canonicalizer) reorder(out []byte, open int, ms []member) ([]byte, error) {
	slices.SortFunc(ms, func(a, b member) int { return compareUTF16(c.key(out, a.key), c.key(out, b.key)) })
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(c.key(out, ms[i-1].key), c.key(out, ms[i].key)) {
			// unique has already refused this; kept as a guard.
			return out, c.duplicate(out, max(ms[i-1].inOff, ms[i].inOff), ms[i].key)
		}
	}
	body := open + 1
	if c.budget -= len(out) - body; c.budget < 0 {
		return out, errRearrangedTooMuch
	}
	c.scratch = append(c.scratch[:0], out[body:]...)
	out = out[:body]
	for i, m := range ms {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.scratch[m.start-body:m.end-body]...)
	}
	// The closing brace, at the cursor's left, is output too.
	out = append(out, '}')
	c.mark = c.pos
	return out, nil
}
