package canon

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// verbatimByReadNumber is the verbatim decision of the general fast path
// (readNumber's spelling flag and canonicalDigits) on the token at the
// start of in, with canonicalLen's extra conditions on the byte after it
// (not one that could continue a number, nor a digit after a leading 0):
// the length canonicalLen must return, or 0.
func verbatimByReadNumber(in []byte) int {
	end, d, k, q, flags := readNumber(in, 0, false)
	if flags&numOK == 0 || flags&numSpelled == 0 || flags&numInt == 0 && !canonicalDigits(d, k, q) {
		return 0
	}
	if end < len(in) && (numberByte(in[end]) || isDigit(in[end])) {
		return 0
	}
	return end
}

// checkCanonicalLen compares canonicalLen with verbatimByReadNumber on in,
// and a token canonicalLen copies with the strconv reference.
func checkCanonicalLen(t interface{ Fatalf(string, ...any) }, in []byte) {
	var w [numWindow]byte
	copy(w[:], in)
	got := canonicalLen(&w)
	if len(in) > numWindow {
		in = in[:numWindow]
	}
	if want := verbatimByReadNumber(w[:]); got != want {
		t.Fatalf("%q: canonicalLen %d, readNumber's verbatim decision %d", in, got, want)
	}
	if got == 0 {
		return
	}
	tok := w[:got]
	s := scanner{in: tok}
	if _, _, isInt, err := s.number(); err != nil || s.pos != len(tok) {
		t.Fatalf("%q: canonicalLen copies %q, which the scanner does not read as one number", in, tok)
	} else if !isInt {
		if ref, err := referenceFloat(tok); err != nil || string(ref) != string(tok) {
			t.Fatalf("%q: canonicalLen copies %q, the reference writes %q (%v)", in, tok, ref, err)
		}
	}
}

// TestCanonicalLenAgreesWithReadNumber checks the verbatim check of the
// number runs against the general fast path on number-like strings, on
// the canonical forms of random doubles (fixed and exponent notation) and
// their other spellings, each followed by what may follow a number.
func TestCanonicalLenAgreesWithReadNumber(t *testing.T) {
	after := []string{"", ",", "]", "}", " ", "x", "0", ".", "e", "E", "+", "-", ",1"}
	rapid.Check(t, func(t *rapid.T) {
		var body string
		switch rapid.IntRange(0, 3).Draw(t, "kind") {
		case 0:
			body = rapid.StringMatching(`-?[0-9]{0,22}(\.[0-9]{0,22})?([eE][+-]?[0-9]{0,4})?`).Draw(t, "tok")
		case 1:
			body = rapid.StringOfN(rapid.RuneFrom([]rune("-0123456789.eE+")), 1, 30, -1).Draw(t, "chars")
		case 2:
			f := math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				f = 1
			}
			b, err := AppendFloat(nil, f)
			if err != nil {
				b = []byte("1")
			}
			body = string(b)
		case 3:
			// Ordinary magnitudes, mostly in fixed notation.
			f := rapid.Float64Range(-1e22, 1e22).Draw(t, "f") / math.Pow(10, float64(rapid.IntRange(0, 12).Draw(t, "scale")))
			body = strconv.FormatFloat(f, rapid.SampledFrom([]byte{'f', 'e', 'g'}).Draw(t, "fmt"), -1, 64)
			if b, err := AppendFloat(nil, f); err == nil && rapid.Bool().Draw(t, "canonical") {
				body = string(b)
			}
		}
		checkCanonicalLen(t, []byte(body+rapid.SampledFrom(after).Draw(t, "after")))
	})
}

// TestCanonicalLenEdges pins the boundaries of the three spellings.
func TestCanonicalLenEdges(t *testing.T) {
	for _, c := range []struct {
		tok  string
		want int
	}{
		{"0,", 1}, {"-0,", 0}, {"7]", 1}, {"-7}", 2}, {"01,", 0},
		{"9007199254740991,", 16}, {"-9007199254740991,", 17}, {"9007199254740992,", 0}, {"12345678901234567,", 0},
		{"0.5,", 3}, {"-0.5,", 4}, {"0.000001,", 8}, {"0.0000001,", 0}, {"1e-7,", 4}, {"1e-6,", 0},
		{"1.5,", 3}, {"1.50,", 0}, {"1.,", 0}, {".5,", 0}, {"1.5.", 0}, {"1.5e", 0}, {"1.5E+30,", 0},
		{"100000000000000000000,", 0}, {"1e+21,", 5}, {"1e+20,", 0}, {"1e21,", 0}, {"1e+021,", 0},
		{"1.5e+300,", 8}, {"1e+309,", 0}, {"5e-324,", 0}, {"2.2250738585072014e-308,", 23},
		{"1.7976931348623157e+308,", 23}, {"0.1e+5,", 0}, {"12e+30,", 0}, {"1e+1000,", 0},
		{"-1.2345678901234567e-123,", 24}, {"-0.0000012345678901234567,", 25}, {"-0.000001234567890123457,", 24},
		{"0.30000000000000004,", 19}, {"0.30000000000000003,", 0}, {"123456789012345.67,", 18}, {"123456789012345.671,", 0},
	} {
		var w [numWindow]byte
		copy(w[:], c.tok)
		if got := canonicalLen(&w); got != c.want {
			t.Errorf("canonicalLen(%q) = %d, want %d", c.tok, got, c.want)
		}
		checkCanonicalLen(t, []byte(c.tok))
	}
}

// FuzzCanonicalLen runs the agreement check on arbitrary bytes.
func FuzzCanonicalLen(f *testing.F) {
	for _, s := range []string{"0,", "-1.5e-7,", "0.000001]", "9007199254740991 ", "1.7976931348623157e+308", "0.30000000000000004,"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkCanonicalLen(t, in) })
}

// TestCanonicalLenAcceptsCanonicalForms checks that the verbatim check
// answers for the canonical forms of random doubles, not only that it is
// never wrong: a regression that made it decline them would still give
// correct output, through the slow path, and pass every other test.
// Declined are only subnormals, integral values of 2^53 and more (integer
// shape, refused by the strict rules) and the rare decimals that
// shortestDigits leaves to the exact reader: here about 0.09%, values such as
// 21563905783224.938 whose float64 lies exactly halfway between two
// 17-digit decimals.
func TestCanonicalLenAcceptsCanonicalForms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const n = 200000
	declined := 0
	for i := range n {
		var f float64
		switch i % 3 {
		case 0:
			f = math.Float64frombits(r.Uint64())
		case 1:
			f = r.NormFloat64() * math.Pow(10, float64(r.IntN(30)-15))
		case 2:
			f = float64(r.Int64N(1<<53)) / 1000
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) < 0x1p-1022 || f == math.Trunc(f) && math.Abs(f) >= 1<<53 && math.Abs(f) < 1e21 {
			continue
		}
		tok, err := AppendFloat(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		var w [numWindow]byte
		copy(w[:], append(tok, ','))
		if got := canonicalLen(&w); got != len(tok) {
			if got != 0 {
				t.Fatalf("%s: canonicalLen %d", tok, got)
			}
			declined++
		}
	}
	t.Logf("declined %d of %d canonical forms", declined, n)
	if declined > n/200 {
		t.Errorf("canonicalLen declined %d of %d canonical forms; want at most 0.5%%", declined, n)
	}
}
