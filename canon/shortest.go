package canon

import (
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
)

//go:generate go run gen_pow10.go

// The float fast path.
//
// Most float tokens a peer sends are already canonical: it formatted them
// with a shortest round-trip algorithm, as RFC 8785 requires. Parsing such a
// token with strconv.ParseFloat and formatting it again with [AppendFloat]
// costs a few hundred nanoseconds; deciding that the token is canonical
// costs one 64×128-bit multiplication. A token is canonical when
//
//  1. its spelling is the one ES6 uses for its decimal point position n
//     (fixed notation for −6 < n ≤ 21, else d.ddde±x with no leading zero
//     in the exponent), with no trailing zero digit;
//  2. its significant digits d (k of them, value d × 10^q) are the shortest
//     that round to the float64 x nearest the token's value: no decimal
//     of k−1 digits lies in x's rounding interval;
//  3. and, among k-digit decimals, d × 10^q is the one closest to x.
//
// The multiplication by the 128-bit power 10^q (pow10Table, generated with
// math/big) gives x and where d × 10^q lies between x and its neighbours,
// in units of 10^q, to far better than 2^−32. Whenever a quantity is
// within 2^−32 of a boundary (halfway between two floats, an edge of the
// rounding interval, a tie between two k-digit decimals) or anything is
// unusual (a subnormal, an overflow, more than 17 digits), the fast path
// declines and the exact reader of decimal.go decides, so the fast path
// only ever answers where the answer is clear by a wide margin.
//
// Decimals of at most 15 significant digits need no multiplication: in
// the normal range each is the unique shortest form of its float64. A
// token whose digits, less trailing zeros, pass the test but whose
// spelling differs (1.50, 1E+30, 1e-07) is rewritten from those digits
// ([appendES6]), again without strconv.

// Flags of a number token read by readNumber.
const (
	numOK      = 1 << iota // the token was read; the other results are valid
	numNeg                 // it starts with '-'
	numInt                 // it has integer shape: no fraction, no exponent
	numSpelled             // see readNumber
	numExp                 // it has an exponent
)

// maxSigDigits bounds the significant digits readNumber reads: 19 always
// fit in a uint64.
const maxSigDigits = 19

// numWindow is how many bytes from a token's start readNumber and
// canonicalLen look at: every word they load starts below offset 64 (see
// [readWindow]), so they load words at offsets masked to 0..63
// ([wordAt]), and the compiler drops the bounds checks. The longest token
// readNumber reads is 51 bytes; every canonical number is much shorter
// (at most 25 bytes).
const numWindow = 64 + 8

// maxLeadingZeros bounds the zeros readNumber skips after "0." (a
// canonical float has at most five).
const maxLeadingZeros = 20

// readNumber reads the RFC 8259 number token at in[i] with the grammar of
// [scanner.number] and returns its end, its number of significant digits
// k and, for a float, its value, sign apart, as d × 10^q. It computes d
// only when value is true or k ≥ 16: a shorter float needs no arithmetic
// to be found canonical (see [shortestDigits]), and d is 0 for an integer
// shape. Without numOK in flags the token is not read: it is malformed
// (the scanner then says why), it has more than maxSigDigits significant
// digits, more than maxLeadingZeros zeros after "0.", or more than seven
// exponent digits, or it is a float equal to zero. With numOK, the token
// ends at end, exactly where scanner.number ends it, and numSpelled says
// that it is spelled exactly as ES6 writes its value: for an integer
// shape, a safe integer other than -0; for a float, the notation of its
// magnitude (fixed for 10^−6 ≤ |d × 10^q| < 10^21, else one digit before
// the point, a lowercase e, a sign and no leading zero in the exponent)
// with no trailing zero digit. Whether d × 10^q is the shortest form of
// its float64 is not decided here.
//
// It runs on every number of a document, so it finds digit runs eight
// bytes at a time and avoids branches that depend on the digits (the
// sign, the lengths of runs), which a processor would mispredict.
func readNumber(in []byte, i int, value bool) (end int, d uint64, k, q int, flags uint) {
	if len(in)-i >= numWindow {
		end, d, k, q, flags = readWindow((*[numWindow]byte)(in[i:i+numWindow]), value)
		return i + end, d, k, q, flags
	}
	// Near the end of the input: a copy padded with NUL bytes, which end
	// a token just as the end of the input does.
	var w [numWindow]byte
	copy(w[:], in[i:])
	end, d, k, q, flags = readWindow(&w, value)
	return i + end, d, k, q, flags
}

// readWindow is readNumber on the window w that starts at the token.
// Every word it loads and every byte it reads starts below offset 64, as
// [wordAt] requires: the sign takes one byte, the integer part at most
// maxSigDigits (reading it looks at 24 bytes from offset 1), the zeros
// after "0." at most maxLeadingZeros, the fraction at most maxSigDigits
// less the integer digits (reading it looks at 24 bytes from offset 23 at
// most), the exponent marker and sign two bytes, and the exponent at most
// seven digits (reading it looks at 8 bytes from offset 44 at most).
func readWindow(w *[numWindow]byte, value bool) (end int, d uint64, k, q int, flags uint) {
	neg := b2u(w[0] == '-')
	flags = neg * numNeg
	i := int(neg)
	intStart := i
	// The first word after the sign is selected, not loaded from an
	// offset that waits for the sign test. The selection is arithmetic:
	// written as an if, the compiler sinks the second load into a branch,
	// which a random sign mispredicts half the time.
	x := selectWord(wordAt(w, 0), wordAt(w, 1), neg)
	switch c := byte(x); {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		// The run of digits, eight bytes at a time: the second and third
		// words are read only when the first is all digits, and the
		// third counts only if the second is. Written out here and for
		// the fraction, as a call would spill registers. The length is
		// exact up to 23, and 24 for any longer run.
		k = nonDigit(x)
		if k == 8 {
			n2 := nonDigit(wordAt(w, i+8))
			n3 := nonDigit(wordAt(w, i+16))
			k += n2 + n3&-(n2>>3)
		}
		if k > maxSigDigits {
			return
		}
		i += k
	default:
		return
	}
	intDigits := k
	if c := w[i&63]; c != '.' && c != 'e' && c != 'E' {
		flags |= numOK | numInt
		// -0 and integers beyond ±(2^53−1) are not written as they are.
		if k == 0 && neg == 0 || k > 0 && k < 16 || k == 16 && !aboveMaxSafe(w, intStart) {
			flags |= numSpelled
		}
		return i, 0, k, 0, flags
	}
	frac, fracStart := 0, i
	if w[i&63] == '.' {
		i++
		j := i
		if k == 0 {
			for w[i&63] == '0' {
				if i++; i-j > maxLeadingZeros {
					return
				}
			}
		}
		fracStart = i
		// The run of digits, as above.
		m := nonDigit(wordAt(w, i))
		if m == 8 {
			n2 := nonDigit(wordAt(w, i+8))
			n3 := nonDigit(wordAt(w, i+16))
			m += n2 + n3&-(n2>>3)
		}
		if k+m > maxSigDigits {
			return
		}
		if i += m; i == j {
			return
		}
		k += m
		frac = i - j
	}
	if k == 0 {
		return // zero
	}
	// The last digit is not a zero.
	spelled := w[(i-1)&63] != '0'
	exp := 0
	hasExp := w[i&63] == 'e' || w[i&63] == 'E'
	if hasExp {
		spelled = spelled && w[i&63] == 'e' && intDigits == 1
		i++
		// ES6 writes an explicit sign and no leading zero. The word of
		// digits is selected, as at the start.
		x0, x1 := wordAt(w, i), wordAt(w, i+1)
		minus, plus := b2u(byte(x0) == '-'), b2u(byte(x0) == '+')
		spelled = spelled && minus|plus != 0
		x := selectWord(x0, x1, minus|plus)
		i += int(minus | plus)
		m := nonDigit(x)
		if m == 0 || m == 8 {
			return
		}
		spelled = spelled && byte(x) != '0'
		i += m
		v := int(digitLanes(x, m))
		exp = (v ^ -int(minus)) + int(minus) // v, negated when minus
	}
	q = exp - frac
	// The point position: 10^(pos−1) ≤ d × 10^q < 10^pos.
	pos := k + q
	if hasExp {
		spelled = spelled && (pos <= -6 || pos > 21)
	} else {
		spelled = spelled && pos > -6 && pos <= 21
	}
	flags |= numOK | b2u(spelled)*numSpelled | b2u(hasExp)*numExp
	if value || k >= 16 {
		// Most often the integer part has at most 8 digits and the
		// fraction at most 16: read them here, without a call.
		if m := k - intDigits; intDigits <= 8 && m <= 16 {
			dInt := digitLanes(wordAt(w, intStart), intDigits)
			lo := min(m, 8)
			dFrac := digitLanes(wordAt(w, fracStart), lo)
			dFrac = dFrac*pow10u64[m-lo] + digitLanes(wordAt(w, fracStart+8), m-lo)
			d = dInt*pow10u64[m] + dFrac
		} else {
			d = runValue(w, intStart, intDigits)*pow10u64[m] + runValue(w, fracStart, m)
		}
	}
	return i, d, k, q, flags
}

// selectWord returns x0 when c is 0 and x1 when c is 1, without a branch.
func selectWord(x0, x1 uint64, c uint) uint64 {
	return x0 ^ (x0^x1)&-uint64(c)
}

// wordAt returns the eight bytes of w from offset i, which is below 64, as
// a little-endian word. The mask lets the compiler drop the bounds checks.
func wordAt(w *[numWindow]byte, i int) uint64 {
	i &= 63
	return binary.LittleEndian.Uint64(w[i : i+8])
}

// b2u is 1 for true and 0 for false, without a branch.
func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// pow10u64[i] is 10^i.
var pow10u64 = [...]uint64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// aboveMaxSafe reports whether the 16 digits at w[i:] spell a number
// above 2^53−1, comparing them as text, eight bytes at a time.
func aboveMaxSafe(w *[numWindow]byte, i int) bool {
	const hi, lo = 0x3930303731393932, 0x3534373430393931 // "90071992", "54740991"
	a, b := binary.BigEndian.Uint64(w[i:]), binary.BigEndian.Uint64(w[i+8:])
	return a > hi || a == hi && b > lo
}

// runValue returns the value of the n ≤ maxSigDigits digits at w[i:].
func runValue(w *[numWindow]byte, i, n int) uint64 {
	if n <= 8 {
		return digitLanes(binary.LittleEndian.Uint64(w[i:]), n)
	}
	v := digitLanes(binary.LittleEndian.Uint64(w[i:]), 8)
	if n <= 16 {
		return v*pow10u64[n-8] + digitLanes(binary.LittleEndian.Uint64(w[i+8:]), n-8)
	}
	v = v*1e8 + digitLanes(binary.LittleEndian.Uint64(w[i+8:]), 8)
	return v*pow10u64[n-16] + digitLanes(binary.LittleEndian.Uint64(w[i+16:]), n-16)
}

// The eight bytes of a word are packed little-endian: the first byte in
// the low bits.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// nonDigit returns the index of the first byte of x that is not an ASCII
// digit, 8 when all are.
func nonDigit(x uint64) int {
	// In x ^ '0', a lane is not a digit when it is ≥ 10: its high bit is
	// set, or adding 0x76 to its low seven bits (no carry out of the
	// lane) sets it.
	v := x ^ '0'*ones
	flag := (v | (v&^highs + 0x76*ones)) & highs
	return bits.TrailingZeros64(flag) >> 3
}

// digitLanes returns the value of the first m ≤ 8 bytes of x, which are
// ASCII digits.
func digitLanes(x uint64, m int) uint64 {
	// Move the m digits to the top lanes, zeros before them, so that the
	// eight lanes read as an eight-digit number with leading zeros; then
	// combine pairs, quads and halves.
	v := (x ^ '0'*ones) << (64 - 8*uint(m)) // Go defines a shift by 64 as 0.
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+1000000<<32) + (v>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return v & 0xFFFFFFFF
}

// canonicalNumberEnd returns the end of the number token at in[i] when the
// token is well formed and already in canonical form, so that it is copied
// as it is; else -1, and the full path formats or refuses it.
func canonicalNumberEnd(in []byte, i int) int {
	var n int
	if len(in)-i >= numWindow {
		n = canonicalLen((*[numWindow]byte)(in[i : i+numWindow]))
	} else {
		// Near the end of the input: a copy padded with NUL bytes, which end
		// a token just as the end of the input does.
		var w [numWindow]byte
		copy(w[:], in[i:])
		n = canonicalLen(&w)
	}
	if n == 0 {
		return -1
	}
	return i + n
}

// numberStart reports whether c may start a number: '-' or a digit.
func numberStart(c byte) bool {
	// Bits 0 ('-') and 3 to 12 ('0' to '9') of the offsets from '-'.
	const starts = 0b1_1111_1111_1001
	o := c - '-'
	return o < 13 && starts>>o&1 != 0
}

// appendShortFloat appends the canonical form of the validated float token
// tok when readNumber reads it and its significant digits, less trailing
// zeros, are those of its float's canonical form, in whatever notation the
// token uses; otherwise it reports false and appends nothing.
func appendShortFloat(dst, tok []byte) ([]byte, bool) {
	end, d, k, q, flags := readNumber(tok, 0, true)
	if flags&numOK == 0 || flags&numInt != 0 || end != len(tok) {
		return dst, false
	}
	return appendShortest(dst, flags&numNeg != 0, d, k, q)
}

// appendShortest appends the ES6 form of ∓d × 10^q (d has k digits, maybe
// with trailing zeros) if its digits, trailing zeros dropped, are the
// shortest form of their float64; otherwise it reports false and appends
// nothing.
func appendShortest(dst []byte, neg bool, d uint64, k, q int) ([]byte, bool) {
	for d%10 == 0 {
		d /= 10
		k--
		q++
	}
	if !shortestDigits(d, k, q) {
		return dst, false
	}
	return appendES6(dst, neg, d, k, k+q), true
}

// canonicalDigits is shortestDigits with its test for short decimals
// inlined at the call.
func canonicalDigits(d uint64, k, q int) bool {
	if k <= 15 {
		return uint(k+q+306) <= 306+308 // −306 ≤ k+q ≤ 308, as in shortestDigits
	}
	return shortestDigits(d, k, q)
}

// shortestDigits reports whether the decimal d × 10^q, where d has k
// significant digits and no trailing zero (d is not read when k ≤ 15),
// is the canonical digit string
// of its float64 x: x is normal and finite, no decimal with fewer digits
// rounds to x, and d × 10^q is the k-digit decimal closest to x. False
// means "not decided": it is only ever a reason to read the token exactly.
func shortestDigits(d uint64, k, q int) bool {
	if k <= 15 {
		// Every decimal of at most 15 significant digits in the normal
		// range is the unique shortest round-trip form of its float64
		// (10^15 < 2^52), so there is nothing to compute.
		pos := k + q
		return pos >= -306 && pos <= 308
	}
	if k > 17 || q < pow10Min || q > pow10Max {
		return false // never shortest, or out of the float64 range
	}
	m, frac, e := binarySignificand(d, q)
	// Round to nearest; decline when the value is too close to halfway
	// between two floats to tell which is nearer.
	if nearHalf(frac) {
		return false
	}
	// rho is where d × 10^q lies relative to x = m·2^e, in units of 2^e:
	// d × 10^q = (m + rho)·2^e with |rho| < 1/2. frac read as a signed
	// number is rho after rounding to the nearer float.
	m += frac >> 63
	rho := float64(int64(frac)) * 0x1p-64
	if m == 1<<53 {
		// Rounded up to a power of two: renormalize, the unit doubling.
		m, e, rho = 1<<52, e+1, rho/2
	}
	be := e + 1075 // the biased exponent of x
	if be < 1 || be > 2046 {
		return false // subnormal, or beyond the largest float64
	}
	// x's lower neighbour is as far as its upper one, except at a power of
	// two, where it is half as far; but below the smallest normal (be 1)
	// lies the largest subnormal, as far as the upper neighbour.
	lower := 1.0
	if m == 1<<52 && be > 1 {
		lower = 0.5
	}
	// In units of 10^q, x's rounding interval is [x − lower·h, x + h]
	// with h = 2^(e−1)/10^q = d/(2(m+rho)) ≈ d/(2m), and x = d + eps with
	// eps = −2·rho·h. The multiples of 10 below and above d are d−r and
	// d+10−r, r = d mod 10 (1..9); a decimal of fewer digits in the
	// interval would be one of them. So d × 10^q is canonical when
	//   |eps| < 1/2              (no k-digit decimal is closer to x),
	//   eps − lower·h > −r       (d−r lies below the interval),
	//   eps + h < 10 − r         (d+10−r lies above it),
	// which, multiplied by 2m > 0, are the tests below, each with a margin
	// of 2^−32 against the rounding of float64 arithmetic (relative error
	// under 2^−50 on quantities below 20).
	const mu = 0x1p-32
	fd, fm := float64(int64(d)), float64(int64(m))
	r := float64(int64(d % 10))
	return 2*math.Abs(rho)*fd < (1-2*mu)*fm &&
		(r-mu)*2*fm > (lower+2*rho)*fd &&
		(10-r-mu)*2*fm > (1-2*rho)*fd
}

// binarySignificand returns the binary form of the nonzero decimal
// d × 10^q, q in [pow10Min, pow10Max]: d × 10^q = (m + f + ε)·2^e with m
// in [2^52, 2^53) its 53 leading bits, frac = f·2^64 the 64 bits after
// them, and |ε| < 2^−63. So m is the mantissa of the float64 nearest to
// d × 10^q before rounding, when that float is normal, and frac says how
// to round it.
func binarySignificand(d uint64, q int) (m, frac uint64, e int) {
	// Let D = d·2^lz in [2^63, 2^64) and 10^q = (T+τ)·2^β, 0 ≤ τ < 1. Then
	// d × 10^q = V·2^(β−lz) with V = D·(T+τ) in [P, P+2^64), P = D·T.
	t := &pow10Table[q-pow10Min]
	lz := bits.LeadingZeros64(d)
	dn := d << lz
	hiLo, _ := bits.Mul64(dn, t[1])
	hiHi, loHi := bits.Mul64(dn, t[0])
	p1, carry := bits.Add64(loHi, hiLo, 0)
	p2 := hiHi + carry
	// W = P>>64 = p2:p1 is V>>64 to within 2 units. Its top bit is 127
	// or 126; the 53 bits from there are m, and the next 64 are frac.
	// The top bit decides by a shift, not a branch: it is as likely set as
	// not, and a mispredicted branch that waits for the multiplication
	// costs more than the rest of shortestDigits.
	top := uint(p2 >> 63)
	return p2 >> (10 + top), p2<<(54-top) | p1>>(10+top), 138 + int(top) + (q*217706)>>16 - 127 - lz
}

// nearHalf reports whether the fraction frac/2^64 of a unit is within
// 2^−32 of one half, too close for the product of [binarySignificand]
// to tell which way it rounds.
func nearHalf(frac uint64) bool {
	const margin = 1 << 32
	return frac-(1<<63-margin) <= 2*margin
}

// appendES6 appends the ES6 Number::toString form of the nonzero decimal
// whose k significant digits are d and whose point position is pos
// (10^(pos−1) ≤ d × 10^(pos−k) < 10^pos), negated when neg.
func appendES6(dst []byte, neg bool, d uint64, k, pos int) []byte {
	var buf [maxSigDigits]byte
	for i := k - 1; i >= 0; i-- {
		buf[i] = byte('0' + d%10)
		d /= 10
	}
	digits := buf[:k]
	if neg {
		dst = append(dst, '-')
	}
	switch {
	case pos > -6 && pos <= 0:
		dst = append(dst, '0', '.')
		for range -pos {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	case pos > 0 && pos <= 21:
		if pos >= k {
			dst = append(dst, digits...)
			for range pos - k {
				dst = append(dst, '0')
			}
			return dst
		}
		dst = append(dst, digits[:pos]...)
		dst = append(dst, '.')
		return append(dst, digits[pos:]...)
	}
	dst = append(dst, digits[0])
	if k > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	if x := pos - 1; x < 0 {
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, int64(-x), 10)
	} else {
		dst = append(dst, '+')
		dst = strconv.AppendInt(dst, int64(x), 10)
	}
	return dst
}
