package canon

import (
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
	if isInt {
		if !safeIntegerToken(tok) {
			return dst, errAt(ErrUnsafeInteger, off, "integer literal %s; write it as a string, or as a float literal if precision may be lost", truncate(string(tok)))
		}
		if len(tok) == 2 && tok[0] == '-' && tok[1] == '0' {
			return append(dst, '0'), nil
		}
		return append(dst, tok...), nil
	}
	if plainDecimal(tok) {
		return append(dst, tok...), nil
	}
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return dst, errAt(ErrNonFinite, off, "float literal %s overflows float64", truncate(string(tok)))
	}
	return AppendFloat(dst, f)
}

// plainDecimal reports whether a float token is already in its ES6 form, so
// that formatting can be skipped: no exponent, no trailing zero in the
// fraction, at most 15 significant digits (any decimal of at most 15
// significant digits is the shortest round-trip form of its float64), and a
// magnitude of at least 1e-6 (below that ES6 switches to exponent form).
func plainDecimal(tok []byte) bool {
	sig, fracZeros, seenDot := 0, 0, false
	for _, c := range tok {
		switch {
		case c == '-':
		case c == '.':
			seenDot = true
		case c == 'e' || c == 'E':
			return false
		case sig > 0 || c != '0':
			sig++
		case seenDot:
			fracZeros++
		}
	}
	return seenDot && sig > 0 && sig <= 15 && fracZeros <= 5 && tok[len(tok)-1] != '0'
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
