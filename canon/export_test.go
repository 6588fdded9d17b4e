package canon

import (
	"math"
	"math/big"
	"reflect"
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

// Verdicts of FastNumber.
const (
	FastDeclined    = iota // the fast path leaves the token to the exact reader
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

// ReferenceFloat formats a validated float token by exact rational
// arithmetic (math/big.Rat) and AppendFloat, with Canonicalize's refusal
// of a float that overflows: the reference every path must agree with.
func ReferenceFloat(tok []byte) ([]byte, error) { return referenceFloat(tok) }

func referenceFloat(tok []byte) ([]byte, error) {
	r, ok := new(big.Rat).SetString(string(tok))
	if !ok {
		return nil, &Error{Err: ErrSyntax, Offset: 0, Detail: "big.Rat refuses " + truncate(string(tok))}
	}
	f, _ := r.Float64()
	if math.IsInf(f, 0) {
		return nil, &Error{Err: ErrNonFinite, Offset: 0, Detail: "overflows"}
	}
	if f == 0 && tok[0] == '-' {
		f = math.Copysign(0, -1)
	}
	return AppendFloat(nil, f)
}

// ReflectMarshal is Marshal without the plain-value fast path: every value
// goes through reflection.
func ReflectMarshal(v any) ([]byte, error) { return appendValue(nil, reflect.ValueOf(v), "", 0, 0) }
