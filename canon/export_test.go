package canon

import "strconv"

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
