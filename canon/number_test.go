package canon_test

import (
	"math/big"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// floatToken draws RFC 8259 float tokens: a sign, an integer part of up to
// 25 digits, an optional fraction of up to 25 digits with runs of zeros, an
// optional exponent (e or E, signed or not); at least one of fraction and
// exponent.
func floatToken() *rapid.Generator[string] {
	digits := func(min, max int) *rapid.Generator[string] {
		return rapid.StringOfN(rapid.RuneFrom([]rune("0123456789000")), min, max, -1)
	}
	return rapid.Custom(func(t *rapid.T) string {
		var b strings.Builder
		if rapid.Bool().Draw(t, "neg") {
			b.WriteByte('-')
		}
		intPart := digits(1, 25).Draw(t, "int")
		intPart = strings.TrimLeft(intPart, "0")
		if intPart == "" {
			intPart = "0"
		}
		b.WriteString(intPart)
		frac := rapid.Bool().Draw(t, "hasFrac")
		if frac {
			b.WriteByte('.')
			b.WriteString(digits(1, 25).Draw(t, "frac"))
		}
		if !frac || rapid.IntRange(0, 3).Draw(t, "hasExp") == 0 {
			b.WriteString(rapid.SampledFrom([]string{"e", "E", "e+", "E-", "e-"}).Draw(t, "e"))
			b.WriteString(strconv.Itoa(rapid.IntRange(0, 330).Draw(t, "exp")))
		}
		return b.String()
	})
}

// TestFloatFastPathProperty checks that the fast path (token copied, less
// trailing fraction zeros) agrees with ParseFloat + AppendFloat on every
// float token, and that it is taken for the common short decimals.
func TestFloatFastPathProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tok := []byte(floatToken().Draw(t, "tok"))
		got, err := canon.CanonicalNumber(tok, false)
		slow, serr := canon.ReferenceFloat(tok)
		if (err != nil) != (serr != nil) {
			t.Fatalf("%s: canonical error %v, slow error %v", tok, err, serr)
		}
		if err != nil {
			return
		}
		if string(got) != string(slow) {
			t.Fatalf("%s: canonical %s, slow path %s", tok, got, slow)
		}
		if n := canon.PlainDecimal(tok); n > 0 && string(tok[:n]) != string(slow) {
			t.Fatalf("%s: fast path prefix %s, slow path %s", tok, tok[:n], slow)
		}
	})
	for _, tok := range []string{"1.5", "-0.25", "100.0", "1.50", "0.000001", "123456789012345.0", "100000000000000000000.0", "4.50"} {
		if canon.PlainDecimal([]byte(tok)) == 0 {
			t.Errorf("PlainDecimal(%s) = 0, want the fast path", tok)
		}
	}
	for _, tok := range []string{"1e2", "0.0000001", "1234567890123456.0", "1000000000000000000000.0", "-0.0", "0.0", "12", "0.30000000000000004"} {
		if canon.PlainDecimal([]byte(tok)) != 0 {
			t.Errorf("PlainDecimal(%s) != 0, want the slow path", tok)
		}
	}
}

// TestIntegerTokenProperty checks the token-shape integer rule against
// exact arithmetic: accepted iff |n| ≤ 2^53−1, written in decimal with -0
// as 0.
func TestIntegerTokenProperty(t *testing.T) {
	limit := big.NewInt(canon.MaxSafeInteger)
	rapid.Check(t, func(t *rapid.T) {
		digits := rapid.StringMatching(`(0|[1-9][0-9]{0,24})`).Draw(t, "digits")
		if rapid.Bool().Draw(t, "edge") {
			// Concentrate on the boundary.
			n := canon.MaxSafeInteger + rapid.IntRange(-3, 3).Draw(t, "delta")
			digits = strconv.Itoa(n)
		}
		neg := rapid.Bool().Draw(t, "neg")
		tok := digits
		if neg {
			tok = "-" + digits
		}
		got, err := canon.Canonicalize([]byte(tok))
		n, _ := new(big.Int).SetString(tok, 10)
		if n.CmpAbs(limit) > 0 {
			if err == nil {
				t.Fatalf("%s accepted as %s, want ErrUnsafeInteger", tok, got)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		if want := n.String(); string(got) != want {
			t.Fatalf("%s -> %s, want %s", tok, got, want)
		}
	})
}

// FuzzNumber compares the canonical form of every float token the fuzzer
// finds with the exact reference.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"1.0", "1.50", "-0.0", "1e21", "123456789012345.6", "0.0000010", "5e-324", "1E+2",
		"1.419785722914456e-308", "2.4703282292062328e-324", "2.2250738585072011e-308", "1.00000000000000000000001e-310",
		"9007199254740993.0000000000000000000000000001", "1" + strings.Repeat("0", 801) + "e-801"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		v, err := canon.Parse([]byte(tok))
		if err != nil || v.Kind != canon.Float || strings.TrimSpace(tok) != tok {
			return
		}
		if _, exp, ok := strings.Cut(strings.ToLower(tok), "e"); ok && len(strings.TrimLeft(exp, "+-0")) > 4 {
			return // the reference would compute 10 to that power
		}
		got, err := canon.Canonicalize([]byte(tok))
		slow, serr := canon.ReferenceFloat([]byte(tok))
		if err != nil || serr != nil || string(got) != string(slow) {
			t.Fatalf("%s: canonical %s (%v), slow %s (%v)", tok, got, err, slow, serr)
		}
	})
}
