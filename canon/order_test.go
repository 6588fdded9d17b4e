package canon_test

import (
	"slices"
	"testing"
	"unicode"
	"unicode/utf16"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// TestKeyOrderProperty checks the canonical key order against a direct
// comparison of UTF-16 code units, on random keys drawn from every range
// that matters (ASCII, the BMP below and above the surrogates, and
// supplementary characters), through a two-member object.
func TestKeyOrderProperty(t *testing.T) {
	runeGen := rapid.OneOf(
		rapid.RuneFrom(nil, unicode.ASCII_Hex_Digit, unicode.Latin),
		rapid.RuneFrom([]rune{'a', 'b', 0xe9, 0xd7ff, 0xe000, 0xefff, 0xf000, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff}),
		rapid.Rune(),
	)
	keyGen := rapid.StringOfN(runeGen, 0, 12, -1)
	rapid.Check(t, func(t *rapid.T) {
		a := keyGen.Draw(t, "a")
		b := keyGen.Draw(t, "b")
		if a == b {
			return
		}
		in, err := canon.Marshal(map[string]int{a: 1, b: 2})
		if err != nil {
			t.Fatal(err)
		}
		ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
		first, second := a, b
		if slices.Compare(ua, ub) > 0 {
			first, second = b, a
		}
		want, err := canon.Marshal(first)
		if err != nil {
			t.Fatal(err)
		}
		if string(in[1:1+len(want)]) != string(want) {
			t.Fatalf("keys %q and %q: got %s, want %q first", a, b, in, first)
		}
		// The canonicalizer reorders the reversed object the same way.
		rev := []byte(`{` + string(mustMarshal(t, second)) + `:2,` + string(want) + `:1}`)
		out, err := canon.Canonicalize(rev)
		if err != nil {
			t.Fatal(err)
		}
		if string(out[1:1+len(want)]) != string(want) {
			t.Fatalf("Canonicalize(%s) = %s, want %q first", rev, out, first)
		}
	})
}

func mustMarshal(t *rapid.T, v any) []byte {
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
