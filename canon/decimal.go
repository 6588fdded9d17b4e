package canon

import (
	"math"
	"math/big"
)

// Exact reading of float tokens.
//
// A float token may carry any number of digits, up to the size limit, and
// its float64 must be the one Python's float() gives: the nearest to the
// token's exact value, ties to the even mantissa, and an overflow (a value
// at or past the point halfway between the largest float64 and 2^1024)
// refused as non-finite. strconv.ParseFloat keeps only 800 digits and
// clamps the exponent, so past that it misreads a token ("1" followed by
// 801 zeros and "e-801" reads as 0.1); it is not used here.
//
// The first 19 significant digits d of the token bound its value V:
// d × 10^q ≤ V < (d+1) × 10^q. The 128-bit product of [binarySignificand]
// rounds both bounds, subnormals included. When both round to the same
// float64, clearly (not within 2^−32 of a unit of a halfway point), so
// does V, since rounding is monotone; that is nearly every token. Else V
// lies within a hundredth of a unit of two neighbouring float64s a < b or
// between them (the bounds differ by a part in 10^18), and V rounds to a
// below the point h halfway between them, to b above it. [exactRound]
// compares V with h in integer arithmetic. Every such h has a finite
// decimal expansion of at most 768 significant digits, so the comparison
// needs only the token's first maxExactDigits digits and whether any later
// digit is nonzero: both h and those digits are multiples of the place of
// the last digit kept, so the kept digits fall below h exactly when the
// whole value does, and equal h only if nothing nonzero follows them.

// maxExactDigits is how many leading significant digits of a token the
// exact comparison reads; see above. It exceeds 768, the most significant
// digits a point halfway between two float64s can have, with a margin for
// the point positions of h and the token to differ.
const maxExactDigits = 800

// Past these point positions every value overflows or rounds to zero:
// 10^309 ≤ V exceeds the largest float64 (about 1.8 × 10^308), and
// V < 10^−324 is less than half the smallest subnormal (about 4.9 × 10^−324).
const (
	maxPointPos = 310
	minPointPos = -324
)

// floatDecimal is a validated float token read for rounding. Its value,
// sign apart, is 0.D × 10^pos, where D is the digit string from the
// token's first nonzero digit to the end of its mantissa, point left out.
type floatDecimal struct {
	neg   bool
	d     uint64 // the first k digits of D
	k     int    // at most maxSigDigits; 0 when the token's value is zero
	pos   int    // the point position, clamped far beyond ±10^8
	more  bool   // a nonzero digit of D follows the k in d
	first int    // the offset in the token of D's first digit
	end   int    // the offset in the token of the end of its mantissa
}

// readDecimal reads the validated float token tok. Its cost is linear in
// the token's length.
func readDecimal(tok []byte) floatDecimal {
	var f floatDecimal
	i := 0
	if tok[0] == '-' {
		f.neg = true
		i++
	}
	point := false
	for ; i < len(tok) && tok[i] != 'e' && tok[i] != 'E'; i++ {
		c := tok[i]
		switch {
		case c == '.':
			point = true
		case f.k == 0 && c == '0': // before the first nonzero digit
			if point {
				f.pos--
			}
		default:
			if f.k == 0 {
				f.first = i
			}
			if !point {
				f.pos++
			}
			switch {
			case f.k < maxSigDigits:
				f.d, f.k = f.d*10+uint64(c-'0'), f.k+1
			case c != '0':
				f.more = true
			}
		}
	}
	f.end = i
	if i < len(tok) {
		i++
		neg := tok[i] == '-'
		if tok[i] == '-' || tok[i] == '+' {
			i++
		}
		// Clamped: with at most a few million digits in the mantissa, an
		// exponent past 10^8 leaves the value zero or infinite whatever
		// its exact size, and the sum stays inside a 32-bit int.
		exp := 0
		for ; i < len(tok); i++ {
			if exp < 1e8 {
				exp = exp*10 + int(tok[i]-'0')
			}
		}
		if neg {
			exp = -exp
		}
		f.pos += exp
	}
	return f
}

// parseFloatToken returns the float64 nearest to the value of the
// validated float token tok, ties to the even mantissa, as Python's float()
// does: ±Inf when the value overflows, a signed zero when it underflows.
func parseFloatToken(tok []byte) float64 {
	f := readDecimal(tok)
	x := f.round(tok)
	if f.neg {
		x = -x
	}
	return x
}

// round returns the float64 nearest to f's magnitude; tok is the token f
// was read from.
func (f *floatDecimal) round(tok []byte) float64 {
	switch {
	case f.k == 0 || f.pos < minPointPos:
		return 0
	case f.pos > maxPointPos:
		return math.Inf(1)
	}
	x, m, e, ok := f.product()
	if ok {
		return x
	}
	a, b := floatFrom(m, e), floatFrom(m+1, e)
	if math.IsInf(a, 1) {
		return a
	}
	return exactRound(tok, f, a, b)
}

// product returns the float64 nearest to f's nonzero magnitude, whose
// point position lies within [minPointPos, maxPointPos], when the 128-bit
// products of its digits d and of d+1 decide it. When they do not, the
// magnitude lies within a hundredth of a unit of m·2^e and (m+1)·2^e or
// between them (d and d+1 differ by a part in 10^18), and rounds to one of
// the two.
func (f *floatDecimal) product() (x float64, m uint64, e int, ok bool) {
	q := f.pos - f.k
	x, m, e, ok = nearestFloat(f.d, q)
	if ok && f.more {
		y, _, _, yok := nearestFloat(f.d+1, q)
		ok = yok && y == x
	}
	return x, m, e, ok
}

// nearestFloat returns the float64 x nearest to d × 10^q, for d ≠ 0 and q
// in [pow10Min, pow10Max], from the 128-bit product of
// [binarySignificand], and whether that product decides it. It does not
// when d × 10^q lies within 2^−32 of a unit of the point halfway between
// two float64s; m·2^e is then the lower of the two (m ≤ 2^53, and 2^e the
// spacing of the float64s there, never below 2^−1074). x is +Inf when
// d × 10^q rounds past the largest float64.
func nearestFloat(d uint64, q int) (x float64, m uint64, e int, ok bool) {
	m, frac, e := binarySignificand(d, q)
	// Below 2^−1022 the spacing stays 2^−1074: s more bits of m go to the
	// fraction. Past 63 the value is far below 2^−1075, half the smallest
	// subnormal, and rounds to zero.
	switch s := -1074 - e; {
	case s >= 64:
		m, frac, e = 0, 0, -1074
	case s > 0:
		m, frac, e = m>>s, m<<(64-s)|frac>>s, -1074
	}
	return floatFrom(m+frac>>63, e), m, e, !nearHalf(frac)
}

// floatFrom returns r·2^e for r ≤ 2^53 and e ≥ −1074 where r·2^e is a
// float64 (r < 2^52 only for e = −1074, a subnormal), or +Inf past the
// largest float64: math.Ldexp's answer, from the bits.
func floatFrom(r uint64, e int) float64 {
	if r < 1<<52 {
		return math.Float64frombits(r) // a subnormal: e is −1074
	}
	if r == 1<<53 {
		r, e = 1<<52, e+1
	}
	be := e + 1075
	if be >= 2047 {
		return math.Inf(1)
	}
	return math.Float64frombits(uint64(be)<<52 | r&(1<<52-1))
}

// exactRound decides between the neighbouring float64s a < b that the
// token tok, read as f, lies between, by comparing the token's value V
// with the point h = (a+b)/2 exactly: a below h, b above it, and at h the
// one whose mantissa is even. See the comment at the top of this file.
func exactRound(tok []byte, f *floatDecimal, a, b float64) float64 {
	digits := make([]byte, 0, maxExactDigits)
	sticky := false
	for i := f.first; i < f.end; i++ {
		c := tok[i]
		switch {
		case c == '.':
		case len(digits) < maxExactDigits:
			digits = append(digits, c)
		case c != '0':
			sticky = true
		}
		if sticky {
			break
		}
	}
	// a = m·2^e, so h = (2m+1)·2^(e−1), and the kept digits D are worth
	// D·10^qd. Compare 2·D·10^qd = D·5^qd·2^(1+qd) with (2m+1)·2^e,
	// moving the powers of five and two to one side each.
	bits := math.Float64bits(a)
	m, be := bits&(1<<52-1), int(bits>>52)
	if be == 0 {
		be = 1 // subnormal: no implicit bit, the smallest exponent
	} else {
		m |= 1 << 52
	}
	e := be - 1075
	qd := f.pos - len(digits)
	var v, h, p big.Int
	v.SetString(string(digits), 10)
	h.SetUint64(2*m + 1)
	if qd >= 0 {
		v.Mul(&v, p.Exp(p.SetUint64(5), big.NewInt(int64(qd)), nil))
	} else {
		h.Mul(&h, p.Exp(p.SetUint64(5), big.NewInt(int64(-qd)), nil))
	}
	if s := 1 + qd - e; s >= 0 {
		v.Lsh(&v, uint(s))
	} else {
		h.Lsh(&h, uint(-s))
	}
	c := v.Cmp(&h)
	if c == 0 && sticky {
		c = 1
	}
	if c < 0 || c == 0 && m&1 == 0 {
		return a
	}
	return b
}
