package canon

import "math/bits"

// canonicalLen decides, for the number token at the start of w, the
// question the one-pass paths ask of nearly every number: is it already
// canonical, so that it is copied as it is? It returns the token's length
// when it is, and 0 when it is not or when the answer needs more work
// (a number that is not canonical, malformed, or unusual); the caller then
// reads the token with [readNumber] and formats it or refuses it.
//
// A canonical number is short (at most 25 bytes) and has one of three
// spellings: a safe integer, -?(0|[1-9]\d*); a fixed-notation float,
// -?(0|[1-9]\d*)\.\d*[1-9] for 10^−6 ≤ |x| < 10^21; an exponent float,
// -?[1-9](\.\d*[1-9])?e[+-][1-9]\d{0,2} otherwise. So canonicalLen does not
// follow the grammar byte by byte as readWindow does: it finds every
// non-digit of the first 32 bytes at once, as a bit mask, and checks
// that the few it needs (sign, point, exponent marker and sign, and the
// byte that ends the token) are where one of the spellings puts them.
// That takes about half the instructions, and its loads do not wait for
// one another. A float with 16 or 17 significant digits is then checked
// to be the shortest form of its float64, as in [canonicalDigits].
//
// It returns 0 when the byte after the token could continue a number
// ('.', 'e', 'E', '+', '-'), leaving such input to the full path.
func canonicalLen(w *[numWindow]byte) int {
	neg := b2u(w[0] == '-')
	s := int(neg)
	// Bit j of nd is set when w[j], j < 32, is not an ASCII digit; the
	// sign is not one to look at.
	nd := uint32(laneMask(nonDigitFlags(wordAt(w, 0)))|
		laneMask(nonDigitFlags(wordAt(w, 8)))<<8|
		laneMask(nonDigitFlags(wordAt(w, 16)))<<16|
		laneMask(nonDigitFlags(wordAt(w, 24)))<<24) &^ uint32(neg)
	p1 := bits.TrailingZeros32(nd)
	intDigits := p1 - s
	lead := w[s]
	if intDigits <= 0 || intDigits > 17 || lead == '0' && intDigits > 1 {
		return 0 // no digit before the first non-digit, too many, or a leading zero
	}
	c1 := w[p1&63]
	if c1 != '.' && c1 != 'e' {
		// An integer: a safe one other than -0 is written as it is.
		if numberByte(c1) || intDigits > 16 || lead == '0' && neg != 0 ||
			intDigits == 16 && aboveMaxSafe(w, s) {
			return 0
		}
		return p1
	}
	// A float. frac is its number of fraction digits, pe the offset of
	// its exponent marker (or of the byte after the token, without one).
	nd &= nd - 1
	pe, frac := p1, 0
	if c1 == '.' {
		pe = bits.TrailingZeros32(nd)
		nd &= nd - 1
		frac = pe - p1 - 1
		if frac == 0 || w[(pe-1)&63] == '0' {
			return 0 // no fraction digit, or a trailing zero
		}
	}
	var d uint64
	var k, q int
	if w[pe&63] != 'e' {
		if numberByte(w[pe&63]) {
			return 0
		}
		// Fixed notation.
		if lead != '0' {
			k, q = intDigits+frac, -frac
			if k > 17 {
				return 0
			}
			switch {
			case k < 16:
			case intDigits <= 8:
				// The common case, written out: then the fraction has
				// at least eight digits.
				d = (digitLanes(wordAt(w, s), intDigits)*1e8+digitLanes(wordAt(w, p1+1), 8))*pow10u64[frac-8] +
					digitLanes(wordAt(w, p1+9), frac-8)
			default:
				d = runValue(w, s, intDigits)*pow10u64[frac] + runValue(w, p1+1, frac)
			}
		} else {
			// 0.000ddd: at most five zeros after the point keep the value
			// at or above 10^−6.
			zeros := nonZeroDigit(wordAt(w, p1+1))
			k, q = frac-zeros, -frac
			if zeros > 5 || k > 17 {
				return 0
			}
			if k >= 16 {
				d = runValue(w, p1+1+zeros, k)
			}
		}
		if k >= 16 && !shortestDigits(d, k, q) {
			return 0
		}
		return pe
	}
	// Exponent notation: one digit before the point, then e, a sign and
	// one to three digits without a leading zero.
	ps := bits.TrailingZeros32(nd)
	nd &= nd - 1
	pEnd := bits.TrailingZeros32(nd)
	expDigits := pEnd - ps - 1
	sign := w[ps&63]
	if intDigits != 1 || lead == '0' || ps != pe+1 || sign != '+' && sign != '-' ||
		expDigits < 1 || expDigits > 3 || w[(ps+1)&63] == '0' || numberByte(w[pEnd&63]) {
		return 0
	}
	exp := int(digitLanes(wordAt(w, ps+1), expDigits))
	if sign == '-' {
		exp = -exp
	}
	k, q = 1+frac, exp-frac
	// ES6 uses exponent notation for a point position pos = exp+1 that is
	// at most −6 or above 21.
	if pos := exp + 1; pos > -6 && pos <= 21 || k > 17 {
		return 0
	}
	if k <= 15 {
		if !canonicalDigits(0, k, q) {
			return 0
		}
		return pEnd
	}
	// 15 or 16 fraction digits.
	d = (uint64(lead-'0')*1e8+digitLanes(wordAt(w, p1+1), 8))*pow10u64[frac-8] + digitLanes(wordAt(w, p1+9), frac-8)
	if !shortestDigits(d, k, q) {
		return 0
	}
	return pEnd
}

// numberByte reports whether c, found after a number token, could have
// continued a number: the grammar then ends the token there, but whether
// that byte is trailing data or a malformed number is for the full path.
func numberByte(c byte) bool {
	// Bits 0 ('+'), 2 ('-'), 3 ('.'), 26 ('E') and 58 ('e') of the
	// offsets from '+'.
	const set = 1<<0 | 1<<2 | 1<<3 | 1<<26 | 1<<58
	o := c - '+'
	return o < 64 && set>>o&1 != 0
}

// nonDigitFlags sets the high bit of each byte of x that is not an ASCII
// digit, and no other bit. See [nonDigit].
func nonDigitFlags(x uint64) uint64 {
	v := x ^ '0'*ones
	return (v | (v&^highs + 0x76*ones)) & highs
}

// laneMask gathers the high bits of the eight bytes of f, whose other
// bits are clear, into the eight low bits of the result: bit i for byte
// i. The multiplication moves the bit of byte i, at 8i+7, to 56+i; no two
// of its partial products share a bit, so nothing carries.
func laneMask(f uint64) uint64 {
	return (f >> 7) * 0x0102040810204080 >> 56
}

// nonZeroDigit returns the index of the first byte of x that is not '0',
// 8 when all are.
func nonZeroDigit(x uint64) int {
	v := x ^ '0'*ones
	// A lane is nonzero when its low seven bits plus 0x7F carry into its
	// high bit, or its high bit is set.
	f := ((v&^highs + 0x7F*ones) | v) & highs
	return bits.TrailingZeros64(f) >> 3
}
