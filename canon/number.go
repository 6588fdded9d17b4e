package canon

import (
	"bytes"
	"math"
	"strconv"
)

// maxSafe is 2^53−1 in decimal, the largest integer literal the protocol
// accepts (its negation is the smallest).
const maxSafe = "9007199254740991"

// MaxSafeInteger is 2^53−1, the largest magnitude an integer may have.
const MaxSafeInteger = 1<<53 - 1

// safeIntegerToken reports whether a validated integer-shaped token lies in
// ±(2^53−1). Tokens have no leading zeros, so comparing digit strings of
// equal length compares values.
func safeIntegerToken(tok []byte) bool {
	digits := tok
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) != len(maxSafe) {
		return len(digits) < len(maxSafe)
	}
	return string(digits) <= maxSafe
}

// appendNumber appends the canonical form of a validated number token and
// reports an error for unsafe integers and non-finite floats. off is the
// token's offset, for errors.
func appendNumber(dst, tok []byte, isInt bool, off int) ([]byte, error) {
	if !isInt {
		if n := plainDecimal(tok); n > 0 {
			return append(dst, tok[:n]...), nil
		}
	}
	return formatNumber(dst, tok, isInt, off)
}

// formatNumber is appendNumber without the plainDecimal shortcut.
func formatNumber(dst, tok []byte, isInt bool, off int) ([]byte, error) {
	if isInt {
		if !safeIntegerToken(tok) {
			return dst, errAt(ErrUnsafeInteger, off, "integer literal %s; write it as a string, or as a float literal if precision may be lost", truncate(string(tok)))
		}
		if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
			return append(dst, '0'), nil
		}
		return append(dst, tok...), nil
	}
	if out, ok := appendShortFloat(dst, tok); ok {
		return out, nil
	}
	return formatFloat(dst, tok, off)
}

// formatFloat formats a validated float token that the fast path of
// [appendShortFloat] does not decide: exactly, whatever its length (see
// decimal.go), refusing one that overflows.
func formatFloat(dst, tok []byte, off int) ([]byte, error) {
	x, err := floatValue(tok, off)
	if err != nil {
		return dst, err
	}
	return AppendFloat(dst, x)
}

// floatValue returns the float64 of the validated float token tok, which
// starts at offset off, or [ErrNonFinite] when it overflows.
func floatValue(tok []byte, off int) (float64, error) {
	x := parseFloatToken(tok)
	if math.IsInf(x, 0) {
		return 0, errAt(ErrNonFinite, off, "float literal %s overflows float64", truncate(string(tok[:min(len(tok), 100)])))
	}
	return x, nil
}

// verbatimNumber returns n such that tok[:n] is the canonical form of the
// validated number token tok, whose '.' and exponent marker are at the
// token offsets dot and exp (-1 when absent): len(tok) when tok is
// canonical already, less for a float with trailing fraction zeros, 0 when
// [formatNumber] must format (or refuse) it.
func verbatimNumber(tok []byte, isInt bool, dot, exp int) int {
	if !isInt {
		if exp >= 0 || dot < 0 {
			return 0
		}
		return plainFraction(tok, dot)
	}
	if !safeIntegerToken(tok) || len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
		return 0
	}
	return len(tok)
}

// plainDecimal spares the float conversion for float tokens whose
// canonical form is a prefix of the token: it returns the length of that
// prefix, or 0 when the token needs ParseFloat and [AppendFloat]. That is
// the case for a token with no exponent, 1 to 15 significant digits (any
// decimal of at most 15 significant digits is the unique shortest
// round-trip form of its float64), at most 21 integer digits (ES6 switches
// to exponent form at 1e21) and at most 5 zeros between the point and the
// first significant digit (ES6 switches below 1e-6). The prefix drops
// trailing zeros of the fraction, and the point when nothing is left after
// it: "100.0" is "100", "1.50" is "1.5".
func plainDecimal(tok []byte) int {
	if bytes.ContainsAny(tok, "eE") {
		return 0
	}
	dot := bytes.IndexByte(tok, '.')
	if dot < 0 {
		return 0
	}
	return plainFraction(tok, dot)
}

// plainFraction is plainDecimal for a token known to have its point at
// dot and no exponent.
func plainFraction(tok []byte, dot int) int {
	first := 0
	for first < len(tok) && (tok[first] == '0' || tok[first] == '.' || tok[first] == '-') {
		first++
	}
	if first == len(tok) {
		return 0 // a zero, which may be -0.0
	}
	last := len(tok) - 1
	for tok[last] == '0' || tok[last] == '.' {
		last--
	}
	sig := last - first + 1
	if first < dot && dot < last {
		sig--
	}
	switch {
	case sig > 15:
		return 0
	case first < dot && dot-first > 21:
		return 0
	case first > dot && first-dot-1 > 5:
		return 0
	case last > dot:
		return last + 1
	}
	return dot
}

// AppendFloat appends the ECMAScript Number.prototype.toString form of f
// (RFC 8785 §3.2.2.3): shortest round-trip digits, fixed notation for
// 1e-6 ≤ |f| < 1e21, exponent notation otherwise, and 0 for both zeros. It
// refuses NaN and infinities with [ErrNonFinite].
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &Error{Err: ErrNonFinite, Offset: -1, Detail: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// strconv writes at least two exponent digits (1e-07); ES6 writes 1e-7.
		if n := len(dst); dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}
