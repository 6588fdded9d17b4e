package canon

import (
	"reflect"
	"strconv"
)

// Hooks for the black-box tests in package canon_test.

// PlainDecimal exposes the float fast path's test: the length of the
// token's prefix that is its canonical form, or 0.
func PlainDecimal(tok []byte) int { return plainDecimal(tok) }

// CanonicalNumber returns the canonical form of a number token as
// Canonicalize writes it (fast path included).
func CanonicalNumber(tok []byte, isInt bool) ([]byte, error) {
	return appendNumber(nil, tok, isInt, 0)
}

// SlowFloat formats a float token the slow way, always through ParseFloat
// and AppendFloat.
func SlowFloat(tok []byte) ([]byte, error) {
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return nil, err
	}
	return AppendFloat(nil, f)
}

// Verdicts of FastNumber.
const (
	FastDeclined    = iota // the fast path leaves the token to strconv
	FastVerbatim           // the token is canonical as it is
	FastReformatted        // the fast path writes the canonical form itself
)

// FastNumber runs only the fast paths of the float formatter on a number
// token: the check that copies a canonical token as it is, then the
// formatter that rewrites a token whose digits are already shortest. Its
// output is meaningful unless the verdict is FastDeclined.
func FastNumber(tok []byte) ([]byte, int) {
	if canonicalNumberEnd(tok, 0) == len(tok) {
		return tok, FastVerbatim
	}
	if out, ok := appendShortFloat(nil, tok); ok {
		return out, FastReformatted
	}
	return nil, FastDeclined
}

// ReferenceFloat formats a validated float token only through
// strconv.ParseFloat and AppendFloat, with Canonicalize's refusals: the
// reference the fast paths must agree with.
func ReferenceFloat(tok []byte) ([]byte, error) { return strconvFloat(nil, tok, 0) }

// ReflectMarshal is Marshal without the plain-value fast path: every value
// goes through reflection.
func ReflectMarshal(v any) ([]byte, error) { return appendValue(nil, reflect.ValueOf(v), "") }
