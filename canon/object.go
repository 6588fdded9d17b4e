package canon

import (
	"bytes"
	"errors"
	"hash/maphash"
	"slices"
)

// Objects: the canonicalizer writes an object's members in input order
// while their keys ascend, and reorders them, within a budget, at the
// first key out of order (see the canonicalizer's comment). Duplicate keys
// are refused here too.

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
