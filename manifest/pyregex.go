package manifest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// pyRegexp is the regular-expression engine for "pattern" and
// "patternProperties": upstream validates with Python's jsonschema, which
// runs re.search on str patterns. Go's RE2 differs in a few places that a
// pydantic-generated pattern commonly uses, so they are translated first:
//
//   - \d is any Unicode decimal digit (\p{Nd}), \D its complement;
//   - \w is Unicode letters, numbers and '_' ([\p{L}\p{N}_]), \W its
//     complement; inside brackets, where RE2 cannot take the complement of
//     a union, \W and \S are refused rather than narrowed to ASCII;
//   - \s is Unicode whitespace (adds \v, U+001C..U+001F, U+0085 and \p{Z});
//   - $ (outside brackets) also matches before one final "\n", and \Z is
//     the end of the text.
//
// Constructs RE2 lacks (look-around, back-references, possessive or atomic
// groups) do not compile, so a schema using them is refused; \b stays ASCII.
// One exception: pydantic writes look-aheads into every Decimal schema,
// "^(?!^[-+.]*$)" first and, with max_digits, "(?=[\d.]{1,N}0*$)" in an
// alternative of a group whose other alternative always matches; a
// leading "^(?!X)" is run as a separate check, and that tail as the
// always-true match it is (see lookaheadRegexp).
func pyRegexp(pattern string) (jsonschema.Regexp, error) {
	if rest, neg, ok := leadingNegativeLookahead(pattern); ok {
		negRE, err := compilePy("^(?:" + neg + ")")
		if err != nil {
			return nil, err
		}
		l := &lookaheadRegexp{src: pattern, neg: negRE}
		if !decimalTail.MatchString(rest) {
			if l.rest, err = compilePy("^" + rest); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	return compilePy(pattern)
}

func compilePy(pattern string) (*regexp.Regexp, error) {
	re, err := translatePyRegex(pattern)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(re)
}

// lookaheadRegexp runs "^(?!neg)rest" as re.search would: the text must
// not match neg at its start, and must match rest there (a nil rest always
// matches).
type lookaheadRegexp struct {
	src  string
	neg  *regexp.Regexp
	rest *regexp.Regexp
}

func (l *lookaheadRegexp) String() string { return l.src }

func (l *lookaheadRegexp) MatchString(s string) bool {
	return !l.neg.MatchString(s) && (l.rest == nil || l.rest.MatchString(s))
}

// decimalTail is the rest of pydantic's Decimal pattern when max_digits is
// set: "[+-]?0*(?:\d{0,I}|(?=[\d.]{1,N}0*$)...0*$)". Its first
// alternative, unanchored and possibly empty, matches at the start of any
// text, so the tail always matches and its look-ahead never decides.
var decimalTail = regexp.MustCompile(`^\[\+-\]\?0\*\(\?:\\d\{0,\d+\}\|\(\?=\[\\d\.\]\{1,\d+\}0\*\$\)(?:\\d\{0,\d+\}\\\.\\d\{0,\d+\}|\\d\*\\\.\\d\*)0\*\$\)$`)

// leadingNegativeLookahead splits "^(?!neg)rest" when neg holds no group
// of its own (a character class may hold parentheses).
func leadingNegativeLookahead(p string) (rest, neg string, ok bool) {
	if !strings.HasPrefix(p, "^(?!") {
		return "", "", false
	}
	inClass := false
	for i := 4; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			if i+1 < len(p) && p[i+1] == ']' {
				i++
			}
		case c == '(':
			return "", "", false
		case c == ')':
			return p[i+1:], p[4:i], true
		}
	}
	return "", "", false
}

func translatePyRegex(p string) (string, error) {
	var b strings.Builder
	inClass := false
	classStart := -1 // index just after '[' or "[^"
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			e := p[i+1]
			i++
			switch e {
			case 'd':
				b.WriteString(`\p{Nd}`)
			case 'D':
				b.WriteString(`\P{Nd}`)
			case 'w':
				if inClass {
					b.WriteString(`\p{L}\p{N}_`)
				} else {
					b.WriteString(`[\p{L}\p{N}_]`)
				}
			case 'W':
				if inClass {
					return "", fmt.Errorf("pattern %q: \\W inside brackets has no exact RE2 form (Python's is Unicode-aware); write the class another way", p)
				} else {
					b.WriteString(`[^\p{L}\p{N}_]`)
				}
			case 's':
				if inClass {
					b.WriteString(`\s\v\x{1c}-\x{1f}\x{85}\p{Z}`)
				} else {
					b.WriteString(`[\s\v\x{1c}-\x{1f}\x{85}\p{Z}]`)
				}
			case 'S':
				if inClass {
					return "", fmt.Errorf("pattern %q: \\S inside brackets has no exact RE2 form (Python's is Unicode-aware); write the class another way", p)
				} else {
					b.WriteString(`[^\s\v\x{1c}-\x{1f}\x{85}\p{Z}]`)
				}
			case 'Z':
				b.WriteString(`\z`)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case inClass:
			// A ']' right after '[' or "[^" is a literal, in both dialects.
			if c == ']' && b.Len() != classStart {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			classStart = b.Len()
		case c == '$':
			b.WriteString(`(?:\n?\z)`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
