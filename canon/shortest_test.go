package canon_test

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
)

// The float fast path (shortest.go) must be invisible: on every token,
// Canonicalize and CheckCanonical answer exactly as the exact reference
// (canon.ReferenceFloat: math/big.Rat, then AppendFloat) does. These tests
// compare them on the values where a shortcut could go wrong: canonical
// forms of edge-case doubles, and the spellings a step away from them.

// decimalDigits returns the shortest digits of |x| and the point position
// pos, x = ±0.digits × 10^pos.
func decimalDigits(x float64) (digits string, pos int) {
	s := strconv.FormatFloat(math.Abs(x), 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	return strings.Replace(mant, ".", "", 1), e + 1
}

// spelling writes ±0.digits × 10^pos as a float token: fixed notation when
// shift is 'f', else exponent notation with shift+1 digits before the point
// (shift −1 writes 0.ddd), exponent marker e, an explicit '+' when plus, and
// the exponent zero-padded to width digits.
func spelling(neg bool, digits string, pos int, shift int, e byte, plus bool, width int) string {
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	if shift == 'f' {
		switch {
		case pos <= 0:
			b.WriteString("0." + strings.Repeat("0", -pos) + digits)
		case pos >= len(digits):
			b.WriteString(digits + strings.Repeat("0", pos-len(digits)) + ".0")
		default:
			b.WriteString(digits[:pos] + "." + digits[pos:])
		}
		return b.String()
	}
	switch {
	case shift < 0:
		b.WriteString("0." + digits)
	case shift+1 >= len(digits):
		b.WriteString(digits + strings.Repeat("0", shift+1-len(digits)))
	default:
		b.WriteString(digits[:shift+1] + "." + digits[shift+1:])
	}
	b.WriteByte(e)
	x := pos - 1 - shift
	switch {
	case x < 0:
		b.WriteByte('-')
		x = -x
	case plus:
		b.WriteByte('+')
	}
	s := strconv.Itoa(x)
	b.WriteString(strings.Repeat("0", max(0, width-len(s))) + s)
	return b.String()
}

// nearDigits returns digit strings a step away from digits: the last digit
// one up and one down, one more digit, a trailing zero, one digit fewer.
func nearDigits(digits string) []string {
	out := []string{digits + "0", digits + "1", digits + "5", digits + "9"}
	last := digits[len(digits)-1]
	if last < '9' {
		out = append(out, digits[:len(digits)-1]+string(last+1))
	}
	if last > '0' && len(digits) > 1 {
		out = append(out, digits[:len(digits)-1]+string(last-1))
	}
	if len(digits) > 1 {
		out = append(out, digits[:len(digits)-1])
	}
	return out
}

// spellings returns float tokens for x: its canonical form first, then
// other strconv spellings and the perturbed spellings of nearDigits. With
// all false it returns a random few of the perturbed ones.
func spellings(r *rand.Rand, x float64, all bool) []string {
	ref, err := canon.AppendFloat(nil, x)
	if err != nil {
		return nil
	}
	toks := []string{string(ref)}
	for _, f := range []byte{'e', 'E', 'g', 'G'} {
		toks = append(toks, strconv.FormatFloat(x, f, -1, 64))
	}
	for _, prec := range []int{14, 15, 16, 17, 18} {
		toks = append(toks, strconv.FormatFloat(x, 'e', prec, 64))
	}
	if a := math.Abs(x); a > 1e-30 && a < 1e30 {
		toks = append(toks, strconv.FormatFloat(x, 'f', -1, 64))
	}
	digits, pos := decimalDigits(x)
	neg := math.Signbit(x)
	type style struct {
		shift       int
		e           byte
		plus        bool
		width       int
		onlyIfShort bool
	}
	styles := []style{
		{shift: 'f', onlyIfShort: true}, {0, 'e', true, 1, false}, {0, 'e', false, 1, false},
		{0, 'E', true, 1, false}, {0, 'e', true, 3, false}, {1, 'e', true, 1, false},
		{-1, 'e', true, 1, false}, {-1, 'E', false, 2, false},
	}
	add := func(ds string, st style) {
		if st.onlyIfShort && (pos < -40 || pos > 40) {
			return
		}
		toks = append(toks, spelling(neg, ds, pos, st.shift, st.e, st.plus, st.width))
	}
	near := nearDigits(digits)
	if all {
		for _, st := range styles {
			add(digits, st)
		}
		for _, ds := range near {
			add(ds, styles[0])
			add(ds, styles[1])
		}
		return toks
	}
	for range 4 {
		add(near[r.IntN(len(near))], styles[r.IntN(len(styles))])
	}
	return toks
}

// isFloatToken reports whether tok is an RFC 8259 number with a fraction
// or an exponent.
func isFloatToken(tok string) bool {
	v, err := canon.Parse([]byte(tok))
	return err == nil && v.Kind == canon.Float && strings.TrimSpace(tok) == tok
}

// fataler is what checkFloatToken needs of a *testing.T or *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkFloatToken fails t unless Canonicalize, CheckCanonical and the fast
// path's own verdict on the float token tok agree with the strconv
// reference, and returns the fast path's verdict.
func checkFloatToken(t fataler, tok string) int {
	t.Helper()
	want, werr := canon.ReferenceFloat([]byte(tok))
	got, err := canon.Canonicalize([]byte(tok))
	switch {
	case (err == nil) != (werr == nil):
		t.Fatalf("%s: Canonicalize = %s, %v; reference %s, %v", tok, got, err, want, werr)
	case err != nil:
		var e, we *canon.Error
		if !errors.As(err, &e) || !errors.As(werr, &we) || e.Err != we.Err {
			t.Fatalf("%s: Canonicalize refuses with %v, reference with %v", tok, err, werr)
		}
	case string(got) != string(want):
		t.Fatalf("%s: Canonicalize = %s, reference %s", tok, got, want)
	}
	fast, verdict := canon.FastNumber([]byte(tok))
	switch verdict {
	case canon.FastVerbatim:
		if werr != nil || string(want) != tok {
			t.Fatalf("%s: fast path keeps it as it is; reference %s, %v", tok, want, werr)
		}
	case canon.FastReformatted:
		if werr != nil || string(fast) != string(want) {
			t.Fatalf("%s: fast path writes %s; reference %s, %v", tok, fast, want, werr)
		}
	}
	canonical := werr == nil && string(want) == tok
	if cerr := canon.CheckCanonical([]byte(tok)); (cerr == nil) != canonical {
		t.Fatalf("%s: CheckCanonical = %v; reference %s, %v", tok, cerr, want, werr)
	}
	return verdict
}

// checkFloatArray fails t unless Canonicalize writes the array of the
// float tokens among toks, separated by sep, as the array of their reference
// forms, and CheckCanonical accepts it exactly when it is that array:
// arrays of numbers take their own fast path.
func checkFloatArray(t fataler, toks []string, sep string) {
	t.Helper()
	var in, want []string
	for _, tok := range toks {
		if !isFloatToken(tok) {
			continue // an integer shape, such as a canonical form of 2^53
		}
		if ref, err := canon.ReferenceFloat([]byte(tok)); err == nil {
			in, want = append(in, tok), append(want, string(ref))
		}
	}
	doc := "[" + strings.Join(in, sep) + "]"
	wantDoc := "[" + strings.Join(want, ",") + "]"
	got, err := canon.Canonicalize([]byte(doc))
	if err != nil || string(got) != wantDoc {
		t.Fatalf("Canonicalize(%s) = %s, %v; want %s", doc, got, err, wantDoc)
	}
	if cerr := canon.CheckCanonical([]byte(doc)); (cerr == nil) != (doc == wantDoc) {
		t.Fatalf("CheckCanonical(%s) = %v; canonical form %s", doc, cerr, wantDoc)
	}
}

// edgeFloats returns the doubles where a shortcut is most likely wrong.
func edgeFloats() []float64 {
	var xs []float64
	around := func(x float64, n int) {
		lo, hi := x, x
		xs = append(xs, x)
		for range n {
			lo, hi = math.Nextafter(lo, math.Inf(-1)), math.Nextafter(hi, math.Inf(1))
			xs = append(xs, lo, hi)
		}
	}
	for e := -1074; e <= 1023; e++ {
		around(math.Ldexp(1, e), 2) // a power of two has a closer lower neighbour
	}
	for p := -323; p <= 308; p++ {
		x, _ := strconv.ParseFloat("1e"+strconv.Itoa(p), 64)
		around(x, 3)
	}
	for _, x := range []float64{1e-6, 1e-7, 1e21, 1e22, 1 << 53, 1 << 52, 1 << 54, 1 << 63, 1 << 64,
		math.SmallestNonzeroFloat64, 0x1p-1022, math.MaxFloat64, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e23, 9007199254740993} {
		around(x, 50)
	}
	for i := range uint64(2000) {
		xs = append(xs, math.Float64frombits(i), math.Float64frombits(0x0010000000000000+i), math.Float64frombits(0x000fffffffffffff-i))
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		// Short binary fractions and large integers: halfway points and
		// ties between two decimals of the same length are exact here.
		xs = append(xs, math.Ldexp(float64(r.Int64N(1<<53)), r.IntN(80)-20))
	}
	for i := range xs {
		if i%2 == 1 {
			xs[i] = -xs[i]
		}
	}
	return xs
}

// halfwayTokens returns decimal tokens that lie exactly halfway between
// two adjacent doubles, in fixed and exponent notation.
func halfwayTokens(r *rand.Rand, n int) []string {
	var toks []string
	for range n {
		m := uint64(r.Int64N(1<<52)) | 1<<52
		e := r.IntN(30) - 8
		// (2m+1)·2^(e−1) is halfway between m·2^e and (m+1)·2^e.
		h := new(big.Float).SetPrec(128).SetMantExp(new(big.Float).SetUint64(2*m+1), e-1)
		s := strings.TrimRight(h.Text('f', 40), "0")
		if strings.HasSuffix(s, ".") {
			s += "0"
		}
		toks = append(toks, s)
		if f, _ := strconv.ParseFloat(s, 64); f != 0 {
			digits := strings.TrimLeft(strings.Replace(s, ".", "", 1), "0")
			digits = strings.TrimRight(digits, "0")
			intPart, _, _ := strings.Cut(s, ".")
			toks = append(toks, spelling(false, digits, len(intPart), 0, 'e', true, 1))
		}
	}
	return toks
}

// edgeStride is the stride through the edge cases TestFastFloatEdgeCases
// takes.
func edgeStride() int {
	switch {
	case longtest.Enabled() && !raceEnabled:
		return 1
	case raceEnabled && !longtest.Enabled():
		return 32
	}
	return 8
}

// TestFastFloatEdgeCases checks the canonical form of every edge-case double
// and all the spellings around it, and halfway decimals. By default, and
// under the race detector, it takes every 8th edge case (every kind of
// edge case is still reached), under the race detector every 32nd (CI
// runs it again at full size without the detector, which sees nothing in
// this single-threaded loop); with ZEO_LONG_TESTS=1 every one.
func TestFastFloatEdgeCases(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	xs := edgeFloats()
	if every := edgeStride(); every > 1 {
		var some []float64
		for i := 0; i < len(xs); i += every {
			some = append(some, xs[i])
		}
		xs = some
	}
	var canonical []string
	for _, x := range xs {
		for i, tok := range spellings(r, x, true) {
			if isFloatToken(tok) {
				checkFloatToken(t, tok)
				if i == 0 {
					canonical = append(canonical, tok)
				}
			}
		}
	}
	checkFloatArray(t, canonical, ",")
	halfway := halfwayTokens(r, 5000)
	for _, tok := range halfway {
		checkFloatToken(t, tok)
	}
	checkFloatArray(t, halfway, ", ")
}

// TestFastFloatRandom checks random doubles (random bit patterns, so every
// exponent is as likely) and a few spellings near each; it also holds the
// fast path to its purpose: on canonical forms of random doubles it must
// decline (and leave the work to the exact reader) less than 1% of the time.
// It takes 100,000 doubles with ZEO_LONG_TESTS=1 (10,000 of them under
// the race detector), 10,000 by default, 2,500 by default under the race
// detector.
func TestFastFloatRandom(t *testing.T) {
	t.Parallel()
	n := 100000
	switch {
	case !longtest.Enabled() && raceEnabled:
		n = 2500
	case !longtest.Enabled() || raceEnabled:
		n = 10000
	}
	r := rand.New(rand.NewPCG(9, 10))
	var floats, declined int
	var batch []string
	for range n {
		x := math.Float64frombits(r.Uint64())
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		for i, tok := range spellings(r, x, false) {
			if !isFloatToken(tok) {
				continue
			}
			if batch = append(batch, tok); len(batch) == 200 {
				checkFloatArray(t, batch, [...]string{",", ",", ", ", ",\n"}[r.IntN(4)])
				batch = batch[:0]
			}
			verdict := checkFloatToken(t, tok)
			if i == 0 {
				floats++
				if verdict == canon.FastDeclined {
					declined++
				}
			}
		}
	}
	rate := float64(declined) / float64(floats)
	t.Logf("fast path declined %d of %d canonical float tokens (%.3f%%)", declined, floats, 100*rate)
	if rate >= 0.01 {
		t.Errorf("fast path declined %.2f%% of canonical float tokens, want under 1%%", 100*rate)
	}
}

// TestFastFloatBenchmarkData counts the fast path's verdicts on the
// numbers1MiB document of bench/canon_test.go (the same recipe: a quarter
// each of safe integers, two-decimal prices, random-bit doubles and
// NormFloat64×1000 doubles in strconv 'g' form), and checks each token.
func TestFastFloatBenchmarkData(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var counts [4][3]int
	size := 0
	for i := 0; size < 1<<20-32; i++ {
		var tok []byte
		switch i % 4 {
		case 0:
			tok = strconv.AppendInt(tok, r.Int64N(2*canon.MaxSafeInteger)-canon.MaxSafeInteger, 10)
		case 1:
			tok = strconv.AppendFloat(tok, float64(r.IntN(10000000))/100, 'f', 2, 64)
		case 2:
			f := math.Float64frombits(r.Uint64())
			for math.IsNaN(f) || math.IsInf(f, 0) {
				f = math.Float64frombits(r.Uint64())
			}
			tok = strconv.AppendFloat(tok, f, 'g', -1, 64)
		case 3:
			tok = strconv.AppendFloat(tok, r.NormFloat64()*1000, 'g', -1, 64)
		}
		size += len(tok) + 1
		if i%4 == 0 {
			// A safe integer is its own canonical form.
			out, verdict := canon.FastNumber(tok)
			if verdict != canon.FastVerbatim || string(out) != string(tok) || canon.CheckCanonical(tok) != nil {
				t.Fatalf("safe integer %s: fast path gives %s, CheckCanonical %v", tok, out, canon.CheckCanonical(tok))
			}
			counts[0][verdict]++
			continue
		}
		counts[i%4][checkFloatToken(t, string(tok))]++
	}
	floats, declined := 0, 0
	for kind, c := range counts {
		t.Logf("%s: %d kept as they are, %d rewritten by the fast path, %d left to the exact reader",
			[...]string{"integers", "prices", "random-bit doubles", "NormFloat64×1000"}[kind],
			c[canon.FastVerbatim], c[canon.FastReformatted], c[canon.FastDeclined])
		if kind > 0 {
			floats += c[0] + c[1] + c[2]
			declined += c[canon.FastDeclined]
		}
	}
	if counts[0][canon.FastVerbatim] != counts[0][0]+counts[0][1]+counts[0][2] {
		t.Errorf("some safe integers left the fast path: %v", counts[0])
	}
	if declined*100 >= floats {
		t.Errorf("fast path declined %d of %d float tokens, want under 1%%", declined, floats)
	}
}

// TestFastFloatTokensProperty draws tokens near the shortest form of a
// random double: its digits cut to 1..19 significant digits, possibly
// nudged in the last place, in any notation.
func TestFastFloatTokensProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var x float64
		if rapid.Bool().Draw(t, "bits") {
			x = math.Float64frombits(rapid.Uint64().Draw(t, "b"))
		} else {
			x = rapid.Float64().Draw(t, "x")
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
			return
		}
		digits := strconv.FormatFloat(math.Abs(x), 'e', 18, 64)
		mant, exp, _ := strings.Cut(digits, "e")
		digits = strings.Replace(mant, ".", "", 1)
		e, _ := strconv.Atoi(exp)
		digits = digits[:rapid.IntRange(1, 19).Draw(t, "k")]
		switch rapid.IntRange(0, 3).Draw(t, "nudge") {
		case 1:
			if l := digits[len(digits)-1]; l < '9' {
				digits = digits[:len(digits)-1] + string(l+1)
			}
		case 2:
			if l := digits[len(digits)-1]; l > '0' {
				digits = digits[:len(digits)-1] + string(l-1)
			}
		}
		shift := rapid.SampledFrom([]int{'f', 0, 0, 1, -1}).Draw(t, "shift")
		if shift == 'f' && (e < -40 || e > 40) {
			shift = 0
		}
		tok := spelling(x < 0, digits, e+1, shift,
			rapid.SampledFrom([]byte{'e', 'e', 'E'}).Draw(t, "e"),
			rapid.Bool().Draw(t, "plus"), rapid.IntRange(1, 3).Draw(t, "width"))
		if isFloatToken(tok) {
			checkFloatToken(t, tok)
		}
	})
}

// FuzzFastFloat builds a float token from a double's bits and a choice of
// spelling (its canonical form, another strconv form, or a perturbed
// spelling) and compares the fast path with the strconv reference.
func FuzzFastFloat(f *testing.F) {
	for _, x := range []float64{1, 0.1, 1e21, 1e-7, 5e-324, math.MaxFloat64, 0x1p-1022, 1 << 53, 9007199254740993, 123.456, -2.5e-300} {
		f.Add(math.Float64bits(x), uint8(0), uint8(0))
		f.Add(math.Float64bits(x), uint8(3), uint8(7))
	}
	f.Fuzz(func(t *testing.T, bits uint64, pick uint8, variant uint8) {
		x := math.Float64frombits(bits)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		toks := spellings(rand.New(rand.NewPCG(uint64(variant), bits)), x, pick&1 == 0)
		tok := toks[int(pick>>1)%len(toks)]
		if isFloatToken(tok) {
			checkFloatToken(t, tok)
			checkFloatArray(t, []string{toks[0], tok, tok}, ",")
		}
	})
}
