package canon

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// subnormalTokens returns float tokens at and around the subnormal range
// for the float64 with bits b: strconv's spellings with 0 to 24 digits
// after the point (past 19 significant digits, so that the token's tail is
// dropped), the shortest form with noise in its last digits, and, from the
// exact decimal of the point halfway between b and b+1 (a tie, rounded to
// the even one), that point itself and decimals just below and above it.
// The first ordinary of them are strconv's plain spellings.
func subnormalTokens(r *rand.Rand, b uint64) (toks []string, ordinary int) {
	x := math.Float64frombits(b)
	toks = []string{strconv.FormatFloat(x, 'g', -1, 64), strconv.FormatFloat(-x, 'e', -1, 64)}
	for _, prec := range []int{0, 3, 15, 16, 17, 18, 19, 20, 24} {
		toks = append(toks, strconv.FormatFloat(x, 'e', prec, 64))
	}
	ordinary = len(toks)
	e := strconv.FormatFloat(x, 'e', 24, 64)
	mant, exp, _ := strings.Cut(e, "e")
	noisy := []byte(mant)
	for i := len(noisy) - 1 - r.IntN(8); i < len(noisy); i++ {
		noisy[i] = byte('0' + r.IntN(10))
	}
	toks = append(toks, string(noisy)+"e"+exp)
	// (2m+1)·2^−1075 is halfway between the subnormals m and m+1; it has a
	// finite decimal expansion of at most 1,075 digits.
	half := new(big.Float).SetPrec(2000).SetMantExp(new(big.Float).SetInt64(int64(2*(b&(1<<52-1))+1)), -1075)
	exact := half.Text('e', 1100)
	hm, he, _ := strings.Cut(exact, "e")
	hm = strings.TrimRight(hm, "0")
	toks = append(toks, hm+"e"+he, hm+"1e"+he, hm[:len(hm)-1]+"e"+he)
	if len(hm) > 30 {
		toks = append(toks, hm[:30]+"e"+he)
	}
	return toks, ordinary
}

// TestSubnormalTokens checks formatFloat against the exact reference on
// tokens at and around the subnormal range and at the boundary with the
// normal floats, and that the 128-bit product decides nearly all of the
// ordinary ones, without the exact comparison.
func TestSubnormalTokens(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	patterns := []uint64{0, 1, 2, 3, 1<<52 - 2, 1<<52 - 1, 1 << 52, 1<<52 + 1, 1 << 51, 12345}
	for range 2000 {
		patterns = append(patterns, r.Uint64()&(1<<52-1))
	}
	decided, ordinary := 0, 0
	for _, b := range patterns {
		toks, plain := subnormalTokens(r, b)
		for i, tok := range toks {
			want, werr := referenceFloat([]byte(tok))
			got, err := formatFloat(nil, []byte(tok), 0)
			if (err != nil) != (werr != nil) || string(got) != string(want) {
				t.Fatalf("%s: formatFloat %s (%v), exact %s (%v)", tok, got, err, want, werr)
			}
			if i < plain && b != 0 && b < 1<<52 {
				ordinary++
				f := readDecimal([]byte(tok))
				if _, _, _, ok := f.product(); ok {
					decided++
				}
			}
		}
	}
	t.Logf("floatDecimal.product decided %d of %d ordinary subnormal tokens", decided, ordinary)
	if decided < ordinary*99/100 {
		t.Errorf("floatDecimal.product decided %d of %d ordinary subnormal tokens; want 99%%", decided, ordinary)
	}
}

// TestNearestFloatRanges checks nearestFloat at the edges of the
// subnormal range and of the float64s: what it decides, what it leaves to
// the exact comparison, and that the lower float it names then is the one
// just below the halfway point.
func TestNearestFloatRanges(t *testing.T) {
	for _, c := range []struct {
		d    uint64
		q    int
		want uint64 // float64 bits when decided
		ok   bool
		m    uint64 // m·2^e when not decided
		e    int
	}{
		{22250738585072014, -324, 1 << 52, true, 0, 0},              // 2^−1022, the smallest normal
		{22250738585072011, -324, 1<<52 - 1, true, 0, 0},            // just below: the largest subnormal
		{22250738585072012, -324, 1 << 52, true, 0, 0},              // rounds up to 2^−1022
		{49406564584124654, -340, 1, true, 0, 0},                    // 2^−1074
		{24703282292062328, -340, 0, false, 0, -1074},               // within 2^−32 of half of 2^−1074
		{3, -324, 1, true, 0, 0},                                    // 0.6 of 2^−1074
		{2, -324, 0, true, 0, 0},                                    // 0.4 of 2^−1074 rounds to zero
		{1, -343, 0, true, 0, 0},                                    // far below: zero
		{17976931348623157, 292, 0x7FEF_FFFF_FFFF_FFFF, true, 0, 0}, // the largest float64
		{17976931348623158, 292, 0x7FEF_FFFF_FFFF_FFFF, true, 0, 0},
		{17976931348623159, 292, 0x7FF0_0000_0000_0000, true, 0, 0}, // past halfway to 2^1024: +Inf
		{9007199254740993, 0, 0, false, 1<<53 - 1 + 1, 0},           // 2^53+1: halfway between 2^53 and 2^53+2
	} {
		x, m, e, ok := nearestFloat(c.d, c.q)
		if ok != c.ok || ok && math.Float64bits(x) != c.want {
			t.Errorf("nearestFloat(%d, %d) = %#x (ok %v), want %#x (ok %v)", c.d, c.q, math.Float64bits(x), ok, c.want, c.ok)
		}
		if !ok && !c.ok && (m != c.m || e != c.e) && math.Ldexp(float64(m), e) != math.Ldexp(float64(c.m), c.e) {
			t.Errorf("nearestFloat(%d, %d) names %d·2^%d, want %d·2^%d", c.d, c.q, m, e, c.m, c.e)
		}
		if ok {
			s := strconv.FormatUint(c.d, 10) + "e" + strconv.Itoa(c.q)
			if f, _ := strconv.ParseFloat(s, 64); f != x {
				t.Errorf("%s: nearestFloat %g, strconv %g", s, x, f)
			}
		}
	}
}

// TestFloatFrom checks floatFrom against math.Ldexp across the subnormals,
// the normals, the carry into the next binade and the overflow to +Inf.
func TestFloatFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	check := func(m uint64, e int) {
		if got, want := floatFrom(m, e), math.Ldexp(float64(m), e); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("floatFrom(%d, %d) = %g, math.Ldexp %g", m, e, got, want)
		}
	}
	for _, m := range []uint64{0, 1, 1<<52 - 1, 1 << 52} {
		check(m, -1074)
	}
	for _, e := range []int{-1074, -1073, -1, 0, 1, 970, 971, 972} {
		for _, m := range []uint64{1 << 52, 1<<52 + 1, 1<<53 - 1, 1 << 53} {
			check(m, e)
		}
	}
	for range 100000 {
		check(1<<52|r.Uint64N(1<<52+1), -1074+r.IntN(2046))
		check(r.Uint64N(1<<52+1), -1074)
	}
}
