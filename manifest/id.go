package manifest

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// CapabilityID is upstream's CapabilityId: the immutable identity of a
// capability. On input it may also be given as its canonical string
// (see [ParseCapabilityID]); on output it is always the object form.
type CapabilityID struct {
	// Namespace is one or more dot-separated lowercase segments.
	Namespace string `json:"namespace"`
	// Name is one lowercase segment.
	Name string `json:"name"`
	// Version is a SemVer 2.0 version.
	Version string `json:"version"`
}

// String returns the canonical form namespace + "." + name + "@" + version.
func (id CapabilityID) String() string {
	return id.Namespace + "." + id.Name + "@" + id.Version
}

// ParseCapabilityID parses the canonical string form the way upstream
// expands a string id: the version is everything after the last '@', the
// name the last '.'-separated segment before it, and the namespace every
// segment before that. The result is then checked with
// [CapabilityID.Validate].
func ParseCapabilityID(s string) (CapabilityID, error) {
	id, ok := splitCapabilityID(s)
	if !ok {
		return CapabilityID{}, &ValidationError{Err: ErrInvalidManifest, CapabilityID: jsonval.Truncate(s, 80), Rule: "capability_id.format",
			Detail: fmt.Sprintf("%q is not of the form namespace.name@version", s)}
	}
	if err := id.validate(jsonval.Truncate(s, 80), ""); err != nil {
		return CapabilityID{}, err
	}
	return id, nil
}

func splitCapabilityID(s string) (CapabilityID, bool) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return CapabilityID{}, false
	}
	nsName, version := s[:at], s[at+1:]
	dot := strings.LastIndexByte(nsName, '.')
	if dot < 0 {
		return CapabilityID{}, false
	}
	return CapabilityID{Namespace: nsName[:dot], Name: nsName[dot+1:], Version: version}, true
}

// The CapabilityId patterns, as upstream writes them for Python's re. Two
// dialect adjustments make Go agree with Python on every string:
//   - Python's '$' (without MULTILINE) matches at the end or just before a
//     final "\n"; Go's '$' is the end of text. pyMatch emulates Python.
//   - Python's '\d' on str patterns is any Unicode decimal digit (category
//     Nd); Go's '\d' is ASCII. The version pattern uses \p{Nd}.
var (
	namespaceRE = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$`)
	nameRE      = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	versionRE   = regexp.MustCompile(`^(0|[1-9]\p{Nd}*)\.(0|[1-9]\p{Nd}*)\.(0|[1-9]\p{Nd}*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$`)
)

// pyMatch reports whether Python's re.match(pattern, s) would succeed for a
// pattern anchored with ^…$: a match of the whole string, or of the string
// without one final "\n".
func pyMatch(re *regexp.Regexp, s string) bool {
	if re.MatchString(s) {
		return true
	}
	return strings.HasSuffix(s, "\n") && re.MatchString(s[:len(s)-1])
}

// Validate applies upstream's CapabilityId validators: each part non-empty
// and matching its pattern under Python re.match semantics (so "echo\n" is
// a valid name, exactly as upstream accepts it).
func (id CapabilityID) Validate() error {
	return id.validate("", "")
}

func (id CapabilityID) validate(capID, ptr string) error {
	parts := []struct {
		key, val string
		re       *regexp.Regexp
	}{{"namespace", id.Namespace, namespaceRE}, {"name", id.Name, nameRE}, {"version", id.Version, versionRE}}
	for _, p := range parts {
		if p.val == "" {
			return &ValidationError{Err: ErrInvalidManifest, CapabilityID: capID, Pointer: ptrKey(ptr, p.key),
				Rule: "capability_id." + p.key + ".min_length", Detail: "must be a non-empty string"}
		}
		if !pyMatch(p.re, p.val) {
			return &ValidationError{Err: ErrInvalidManifest, CapabilityID: capID, Pointer: ptrKey(ptr, p.key),
				Rule: "capability_id." + p.key + ".pattern", Detail: fmt.Sprintf("%q does not match %s", p.val, p.re)}
		}
	}
	return nil
}

// validFactory reports whether s matches upstream's factory pattern
// ^[a-zA-Z_]\w*(?:\.[a-zA-Z_]\w*)*:[a-zA-Z_]\w*$ as pydantic-core's Rust regex
// runs it: '$' is the end of text (a trailing "\n" is refused) and '\w' is
// Unicode-aware (see isRustWord). Go's regexp '\w' is ASCII-only, so the
// check is written by hand.
func validFactory(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 0 {
		return false
	}
	module, attr := s[:colon], s[colon+1:]
	for seg := range strings.SplitSeq(module, ".") {
		if !validFactorySegment(seg) {
			return false
		}
	}
	return validFactorySegment(attr)
}

// validFactorySegment checks [a-zA-Z_]\w*.
func validFactorySegment(seg string) bool {
	if seg == "" {
		return false
	}
	c := seg[0]
	if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		return false
	}
	for _, r := range seg[1:] {
		if !isRustWord(r) {
			return false
		}
	}
	return true
}

// isRustWord reports whether r is in Rust regex's Unicode '\w' (UTS #18
// word characters): Alphabetic, Mark, Decimal_Number, Connector_Punctuation
// or Join_Control. Alphabetic is Letter + Nl + Other_Alphabetic. Go's
// Unicode tables may be a different Unicode version from the host's Rust
// regex; only code points assigned in between can differ.
func isRustWord(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Other_Alphabetic, r) || unicode.Is(unicode.Join_Control, r)
}
