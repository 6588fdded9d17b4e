package canon

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// Whitebox tests of the float fast path's pieces (shortest.go); the
// differential tests against strconv are black-box, in shortest_test.go.

// TestPow10Table recomputes every entry of the generated table with
// math/big, so that an edit to the table or to its generator shows, and
// checks the floor(p·log2 10) shortcut shortestDigits relies on.
func TestPow10Table(t *testing.T) {
	if len(pow10Table) != pow10Max-pow10Min+1 {
		t.Fatalf("pow10Table has %d entries, want %d", len(pow10Table), pow10Max-pow10Min+1)
	}
	one := big.NewInt(1)
	for p := pow10Min; p <= pow10Max; p++ {
		e2 := (p * 217706) >> 16
		// 10^p lies in [2^e2, 2^(e2+1)).
		ten := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(p, -p))), nil))
		if p < 0 {
			ten.Inv(ten)
		}
		lo, hi := new(big.Rat).SetFrac(one, one), new(big.Rat)
		if e2 >= 0 {
			lo.SetInt(new(big.Int).Lsh(one, uint(e2)))
		} else {
			lo.SetFrac(one, new(big.Int).Lsh(one, uint(-e2)))
		}
		hi.Mul(lo, big.NewRat(2, 1))
		if ten.Cmp(lo) < 0 || ten.Cmp(hi) >= 0 {
			t.Fatalf("10^%d: floor(p·log2 10) shortcut gives %d", p, e2)
		}
		// T = floor(10^p × 2^(127−e2)).
		scaled := new(big.Rat).Quo(ten, lo)
		scaled.Mul(scaled, new(big.Rat).SetInt(new(big.Int).Lsh(one, 127)))
		want := new(big.Int).Quo(scaled.Num(), scaled.Denom())
		got := new(big.Int).Lsh(new(big.Int).SetUint64(pow10Table[p-pow10Min][0]), 64)
		got.Or(got, new(big.Int).SetUint64(pow10Table[p-pow10Min][1]))
		if got.Cmp(want) != 0 {
			t.Fatalf("pow10Table entry for 10^%d is %#x, want %#x", p, got, want)
		}
	}
}

// TestDigitWords compares the eight-bytes-at-a-time digit readers,
// nonDigit and digitLanes, with a byte loop, on words made of digits and
// the bytes around them.
func TestDigitWords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("0123456789/:.,eE+-]} \x00\x80\xff\xb0\xb9")
	var b [8]byte
	for range 200000 {
		for i := range b {
			if r.IntN(4) == 0 {
				b[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[i] = byte('0' + r.IntN(10))
			}
		}
		if r.IntN(8) == 0 {
			b[r.IntN(8)] = byte(r.IntN(256))
		}
		var want uint64
		n := 0
		for n < 8 && isDigit(b[n]) {
			want = want*10 + uint64(b[n]-'0')
			n++
		}
		x := binary.LittleEndian.Uint64(b[:])
		if m := nonDigit(x); m != n {
			t.Fatalf("nonDigit(%q) = %d, want %d", b[:], m, n)
		}
		if got := digitLanes(x, n); got != want {
			t.Fatalf("digitLanes(%q, %d) = %d, want %d", b[:], n, got, want)
		}
	}
}

// TestReadNumberAgreesWithScanner checks readNumber against the scanner
// and exact arithmetic on strings of number characters: where readNumber
// reads a token, the scanner reads the same token (same end, same shape)
// and d × 10^q is its exact value; numSpelled is checked against a
// from-scratch spelling rule.
func TestReadNumberAgreesWithScanner(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := rapid.StringMatching(`-?[0-9]{0,22}(\.[0-9]{0,22})?([eE][+-]?[0-9]{0,4})?`).Draw(t, "tok")
		if rapid.Bool().Draw(t, "mess") {
			body = rapid.StringOfN(rapid.RuneFrom([]rune("-0123456789.eE+")), 1, 30, -1).Draw(t, "chars")
		}
		in := []byte(body + rapid.SampledFrom([]string{"", ",", "]", "}", " ", "x", "0", "."}).Draw(t, "after"))
		end, d, k, q, flags := readNumber(in, 0, true)
		s := scanner{in: in}
		_, send, isInt, err := s.number()
		if flags&numOK == 0 {
			return
		}
		if err != nil || send != end || isInt != (flags&numInt != 0) {
			t.Fatalf("%q: readNumber ends at %d (int %v), scanner at %d (int %v, err %v)", in, end, flags&numInt != 0, send, isInt, err)
		}
		tok := string(in[:end])
		if isInt {
			digits := strings.TrimPrefix(tok, "-")
			n, _ := new(big.Int).SetString(digits, 10)
			if wantK := len(strings.TrimLeft(digits, "0")); k != wantK || d != 0 {
				t.Fatalf("%q: readNumber gives d %d and %d digits for an integer, want 0 and %d", tok, d, k, wantK)
			}
			spelled := n.Cmp(big.NewInt(MaxSafeInteger)) <= 0 && tok != "-0"
			if (flags&numSpelled != 0) != spelled {
				t.Fatalf("%q: numSpelled is %v", tok, flags&numSpelled != 0)
			}
			return
		}
		if q > 10000 || q < -10000 {
			return // far outside the float64 range, and of big.Rat's exponents
		}
		want, ok := new(big.Rat).SetString(tok)
		if !ok {
			t.Fatalf("%q: big.Rat refuses the token", tok)
		}
		want.Abs(want)
		got := new(big.Rat).SetInt(new(big.Int).SetUint64(d))
		pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(q, -q))), nil))
		if q < 0 {
			got.Quo(got, pow)
		} else {
			got.Mul(got, pow)
		}
		if got.Cmp(want) != 0 || len(new(big.Int).SetUint64(d).String()) != max(k, 1) {
			t.Fatalf("%q: readNumber gives %d (%d digits) × 10^%d", tok, d, k, q)
		}
		if (flags&numNeg != 0) != strings.HasPrefix(tok, "-") {
			t.Fatalf("%q: numNeg is %v", tok, flags&numNeg != 0)
		}
		if spelled := flags&numSpelled != 0; spelled != spelledAsES6(tok, d, k, q) {
			t.Fatalf("%q: numSpelled is %v", tok, spelled)
		}
	})
}

// spelledAsES6 is the rule numSpelled implements for floats, written the
// slow way: the token equals the ES6 spelling of its decimal value.
func spelledAsES6(tok string, d uint64, k, q int) bool {
	neg := strings.HasPrefix(tok, "-")
	if d == 0 || d%10 == 0 {
		return false
	}
	return string(appendES6(nil, neg, d, k, k+q)) == tok
}

// TestShortestDigitsDeclinesHalfway checks the guard against rounding the
// wrong way: a decimal exactly halfway between two doubles (rounded to
// even by ParseFloat) is never decided by shortestDigits. The product's
// error is below 2^−63 of a float spacing, so only decimals this close to
// halfway could be rounded wrong, and the guard declines them all.
func TestShortestDigitsDeclinesHalfway(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	tried := 0
	for tried < 20000 {
		m := uint64(r.Int64N(1<<52)) | 1<<52
		e := r.IntN(40) - 12
		// (2m+1)·2^(e−1) is halfway between m·2^e and (m+1)·2^e.
		h := new(big.Float).SetPrec(128).SetMantExp(new(big.Float).SetUint64(2*m+1), e-1)
		s := strings.TrimRight(h.Text('f', 60), "0")
		s = strings.TrimSuffix(s, ".")
		intPart, fracPart, _ := strings.Cut(s, ".")
		digits := strings.TrimRight(strings.TrimLeft(intPart+fracPart, "0"), "0")
		if len(digits) > 17 || len(digits) < 16 {
			continue
		}
		tried++
		d, _ := new(big.Int).SetString(digits, 10)
		// The value is digits × 10^q: q is the number of trailing zeros
		// of intPart+fracPart less the length of the fraction.
		q := len(intPart+fracPart) - len(strings.TrimRight(intPart+fracPart, "0")) - len(fracPart)
		if shortestDigits(d.Uint64(), len(digits), q) {
			t.Fatalf("%s (halfway between two doubles) decided by the fast path", s)
		}
	}
}

// TestShortestDigitsPowersOfTwo checks that the narrower lower interval of
// a power of two is taken into account rather than declined: the
// canonical forms of 2^e for normal e are decided, but for the few where
// the k-digit decimal nearest 2^e lies outside that narrower interval, or
// two are equally near (2^−24 = 5.9604644775390625e-8), which strconv
// decides.
func TestShortestDigitsPowersOfTwo(t *testing.T) {
	declined, long := 0, 0
	for e := -1022; e <= 1023; e++ {
		tok, _ := AppendFloat(nil, math.Ldexp(1, e))
		end, d, k, q, flags := readNumber(tok, 0, false)
		if flags&numOK == 0 || flags&numInt != 0 || end != len(tok) || k <= 15 {
			continue
		}
		long++
		if !shortestDigits(d, k, q) {
			declined++
		}
	}
	t.Logf("%d of %d powers of two with 16 or 17 digits declined", declined, long)
	if declined*20 > long {
		t.Errorf("%d of %d powers of two with 16 or 17 digits declined, want under 5%%", declined, long)
	}
}

// TestShortestDigitsNearPowersOfTwo feeds the fast check the decimals next
// to the shortest form of every power of two and its neighbours — the last
// digit one up or down, the last digit dropped or rounded up, an extra
// digit — where an interval taken too narrow or too wide would give a
// wrong answer. Whenever the check accepts such digits they must be the
// shortest form of the float they round to.
func TestShortestDigitsNearPowersOfTwo(t *testing.T) {
	// shortest is the reference: strconv's shortest round-trip digits of
	// f (the closest of the shortest, as ES6 has them) as d × 10^q, k
	// digits.
	shortest := func(f float64) (d uint64, k, q int) {
		mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'e', -1, 64), "e")
		digits := strings.Replace(mant, ".", "", 1)
		x10, _ := strconv.Atoi(exp)
		d, _ = strconv.ParseUint(digits, 10, 64)
		return d, len(digits), x10 - len(digits) + 1
	}
	checked := 0
	for e := -1022; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		for _, x := range []float64{math.Nextafter(p, 0), p, math.Nextafter(p, math.Inf(1))} {
			n, k, q := shortest(x)
			type cand struct {
				d    uint64
				k, q int
			}
			cands := []cand{{n + 1, k, q}, {n / 10, k - 1, q + 1}, {n/10 + 1, k - 1, q + 1}, {n * 10, k + 1, q - 1}}
			if n%10 != 0 {
				cands = append(cands, cand{n - 1, k, q})
			}
			for _, c := range cands {
				if c.k < 16 || c.k > 17 || c.d < pow10u64[c.k-1] || c.d >= pow10u64[c.k-1]*10 {
					continue // only 16 and 17 digits take the arithmetic
				}
				checked++
				if !shortestDigits(c.d, c.k, c.q) {
					continue
				}
				f, err := strconv.ParseFloat(strconv.FormatUint(c.d, 10)+"e"+strconv.Itoa(c.q), 64)
				if err != nil {
					t.Fatal(err)
				}
				if d, k, q := shortest(f); d != c.d || k != c.k || q != c.q {
					t.Errorf("near 2^%d: %de%d accepted as shortest, but %v is %de%d", e, c.d, c.q, f, d, q)
				}
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d candidates checked", checked)
	}
	t.Logf("%d candidates checked", checked)
}
