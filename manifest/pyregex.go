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
func pyRegexp(pattern string) (jsonschema.Regexp, error) {
	re, err := translatePyRegex(pattern)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(re)
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
