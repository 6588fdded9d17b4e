package canon

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner holds the input and a cursor. Its methods validate one token each
// under the protocol's strict rules and leave the cursor after it.
type scanner struct {
	in       []byte
	pos      int
	maxDepth int
	// Set by number for the token it returns: the offsets of its '.' and
	// of its exponent marker, -1 when absent.
	numDot, numExp int
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (s *scanner) skipSpace() {
	for s.pos < len(s.in) && isSpace(s.in[s.pos]) {
		s.pos++
	}
}

// describe names the byte at off for error details.
func (s *scanner) describe(off int) string {
	if off >= len(s.in) {
		return "end of input"
	}
	c := s.in[off]
	if c >= 0x20 && c < 0x7f {
		return "'" + string(c) + "'"
	}
	return "byte 0x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}

// literal consumes one of true, false, null, or reports the non-finite
// spellings Python would otherwise have accepted.
func (s *scanner) literal(word string) error {
	if len(s.in)-s.pos >= len(word) && string(s.in[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return nil
	}
	return errAt(ErrSyntax, s.pos, "invalid literal, want %q", word)
}

// nonFinite reports whether the cursor is at NaN, Infinity or -Infinity,
// which Python's json accepts by default and the protocol refuses.
func (s *scanner) nonFinite() error {
	rest := s.in[s.pos:]
	for _, w := range [...]string{"NaN", "Infinity", "-Infinity"} {
		if len(rest) >= len(w) && string(rest[:len(w)]) == w {
			return errAt(ErrNonFinite, s.pos, "%s is not JSON", w)
		}
	}
	return nil
}

// number validates an RFC 8259 number token at the cursor and returns its
// bounds and whether it has integer shape (no fraction, no exponent).
func (s *scanner) number() (start, end int, isInt bool, err error) {
	in := s.in
	start = s.pos
	i := start
	if i < len(in) && in[i] == '-' {
		i++
	}
	switch {
	case i < len(in) && in[i] == '0':
		i++
	case i < len(in) && isDigit(in[i]):
		for i < len(in) && isDigit(in[i]) {
			i++
		}
	default:
		if e := s.nonFinite(); e != nil {
			return 0, 0, false, e
		}
		return 0, 0, false, errAt(ErrSyntax, i, "invalid number: want a digit, found %s", s.describe(i))
	}
	isInt = true
	s.numDot, s.numExp = -1, -1
	if i < len(in) && in[i] == '.' {
		s.numDot = i
		i++
		if i >= len(in) || !isDigit(in[i]) {
			return 0, 0, false, errAt(ErrSyntax, i, "invalid number: want a digit after '.', found %s", s.describe(i))
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		isInt = false
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		s.numExp = i
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || !isDigit(in[i]) {
			return 0, 0, false, errAt(ErrSyntax, i, "invalid number: want an exponent digit, found %s", s.describe(i))
		}
		for i < len(in) && isDigit(in[i]) {
			i++
		}
		isInt = false
	}
	s.pos = i
	return start, i, isInt, nil
}

// str validates the string token at the cursor (which must be '"') and
// returns the bounds of its content, between the quotes, and whether the
// content holds escapes. Without escapes the content is already both the
// decoded text and its canonical form.
func (s *scanner) str() (start, end int, escaped bool, err error) {
	in := s.in
	open := s.pos
	i := open + 1
	for {
		if i = plainPrefix(in, i); i >= len(in) {
			return 0, 0, false, errAt(ErrSyntax, open, "unterminated string")
		}
		switch c := in[i]; {
		case c == '"':
			s.pos = i + 1
			return open + 1, i, escaped, nil
		case c == '\\':
			escaped = true
			n, err := s.escape(i)
			if err != nil {
				return 0, 0, false, err
			}
			i += n
		case c < 0x20:
			return 0, 0, false, errAt(ErrSyntax, i, "raw control character U+%04X in string; escape it", c)
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size <= 1 {
				return 0, 0, false, errAt(ErrInvalidUTF8, i, "byte 0x%02x does not start a valid UTF-8 sequence", c)
			}
			i += size
		}
	}
}

// plainASCII8 reports whether the eight bytes packed in w are all printable
// ASCII other than '"' and '\\', so that a string scan can step over them.
// In each byte lane, subtracting 0x20 sets the high bit for a control
// character, subtracting 1 from b^'"' or b^'\\' sets it for a quote or a
// backslash, and the lane's own high bit marks a non-ASCII byte. A lane
// that wraps may borrow from the next one and flag it too, which only
// matters when some lane is flagged already.
func plainASCII8(w uint64) bool { return specialLanes(w) == 0 }

// specialLanes returns the high bits of the byte lanes plainASCII8 flags.
// The lowest one set is exact: the lanes below it borrowed nothing, so it
// marks the first byte of w that is not plain, and a scan can step to it.
func specialLanes(w uint64) uint64 {
	return ((w - 0x20*ones) | ((w ^ '"'*ones) - ones) | ((w ^ '\\'*ones) - ones) | w) & highs
}

// plainPrefix returns the offset of the first byte at or after in[i] that
// is not plain (printable ASCII other than '"' and '\\'), or len(in): the
// end of what a string scan can step over. It goes eight bytes at a time,
// to the first that needs a closer look, and byte by byte only in the last
// seven bytes of the input.
func plainPrefix(in []byte, i int) int {
	for ; i+8 <= len(in); i += 8 {
		if f := specialLanes(binary.LittleEndian.Uint64(in[i:])); f != 0 {
			return i + bits.TrailingZeros64(f)>>3
		}
	}
	for ; i < len(in); i++ {
		if c := in[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return i
}

// plainStringEnd returns the offset of the closing quote of the string
// content that starts at in[i] when that content is plain, so already both
// decoded and canonical. It returns -1 for any other content, which
// [scanner.str] then reads.
func plainStringEnd(in []byte, i int) int {
	if i = plainPrefix(in, i); i < len(in) && in[i] == '"' {
		return i
	}
	return -1
}

// escape validates the escape sequence at off and returns its length,
// including a following low surrogate escape when off names a high one.
func (s *scanner) escape(off int) (int, error) {
	in := s.in
	if off+1 >= len(in) {
		return 0, errAt(ErrSyntax, off, "unterminated escape")
	}
	switch in[off+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		return 0, errAt(ErrSyntax, off, "invalid escape \\%c", in[off+1])
	}
	r, ok := hex4(in, off+2)
	if !ok {
		return 0, errAt(ErrSyntax, off, "invalid \\u escape: want four hex digits")
	}
	switch {
	case 0xDC00 <= r && r <= 0xDFFF:
		return 0, errAt(ErrLoneSurrogate, off, "low surrogate \\u%04x without a preceding high surrogate", r)
	case 0xD800 <= r && r <= 0xDBFF:
		if off+7 < len(in) && in[off+6] == '\\' && in[off+7] == 'u' {
			if lo, ok := hex4(in, off+8); ok && 0xDC00 <= lo && lo <= 0xDFFF {
				return 12, nil
			}
		}
		return 0, errAt(ErrLoneSurrogate, off, "high surrogate \\u%04x not followed by a low surrogate escape", r)
	}
	return 6, nil
}

func hex4(in []byte, off int) (rune, bool) {
	if off+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[off : off+4] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// unescape appends the decoded text of string content that [scanner.str]
// has already validated.
func unescape(dst, content []byte) []byte {
	for i := 0; i < len(content); {
		c := content[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch e := content[i+1]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(content, i+2)
			if utf16.IsSurrogate(r) {
				lo, _ := hex4(content, i+8)
				r = utf16.DecodeRune(r, lo)
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			i += 6
			continue
		default: // '"', '\\', '/'
			dst = append(dst, e)
		}
		i += 2
	}
	return dst
}

// appendQuoted appends the RFC 8785 form of valid UTF-8 text: only '"',
// '\\' and U+0000..U+001F are escaped, using the short forms where JSON has
// them and lowercase \u00xx otherwise.
func appendQuoted[T ~string | ~[]byte](dst []byte, text T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(text); {
		// Step over eight plain ASCII bytes at a time; a word with anything
		// else (an escape, or UTF-8, which is copied as is) goes byte by
		// byte.
		end := len(text)
		if i+8 <= end {
			if plainASCII8(load64(text, i)) {
				i += 8
				continue
			}
			end = i + 8
		}
		for ; i < end; i++ {
			c := text[i]
			if c >= 0x20 && c != '"' && c != '\\' {
				continue
			}
			dst = append(dst, text[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			}
			start = i + 1
		}
	}
	dst = append(dst, text[start:]...)
	return append(dst, '"')
}

// load64 reads the eight bytes of s at i as a little-endian word (the
// compiler merges the byte loads into one).
func load64[T ~string | ~[]byte](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// AppendString appends s as an RFC 8785 string token: quoted, with only
// '"', '\\' and U+0000..U+001F escaped. It refuses a string that is not
// valid UTF-8 with [ErrInvalidUTF8], since no JSON text can carry it.
func AppendString(dst []byte, s string) ([]byte, error) {
	if err := checkText(s, ""); err != nil {
		return dst, err
	}
	return appendQuoted(dst, s), nil
}

// Unquote decodes one JSON string token (quotes included) under the strict
// rules and returns its text. Only the token may be given: anything after
// the closing quote is [ErrSyntax].
func Unquote(token []byte) (string, error) {
	s := scanner{in: token}
	if len(token) == 0 || token[0] != '"' {
		return "", errAt(ErrSyntax, 0, "want a string token, found %s", s.describe(0))
	}
	start, end, escaped, err := s.str()
	if err != nil {
		return "", err
	}
	if s.pos != len(token) {
		return "", errAt(ErrSyntax, s.pos, "trailing data after the string token")
	}
	if !escaped {
		return string(token[start:end]), nil
	}
	return string(unescape(nil, token[start:end])), nil
}
