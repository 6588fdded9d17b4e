package canon_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// jsonText draws a JSON document as text with random spacing, key order,
// escapes (short, \u with either hex case, surrogate pairs, \/) and number
// spellings, nested up to depth levels. Keys repeat rarely, so some
// documents carry duplicates.
func jsonText(t *rapid.T, depth int) string {
	kind := rapid.IntRange(0, 7).Draw(t, "kind")
	if depth == 0 && kind >= 6 {
		kind = 0
	}
	ws := func() string {
		return rapid.SampledFrom([]string{"", "", "", " ", "\n\t", "\r\n  "}).Draw(t, "ws")
	}
	switch kind {
	case 0:
		return rapid.SampledFrom([]string{"null", "true", "false"}).Draw(t, "lit")
	case 1:
		n := rapid.Int64Range(-canon.MaxSafeInteger, canon.MaxSafeInteger).Draw(t, "int")
		if rapid.IntRange(0, 20).Draw(t, "edgeInt") == 0 {
			n = rapid.SampledFrom([]int64{0, canon.MaxSafeInteger, -canon.MaxSafeInteger}).Draw(t, "edgeIntV")
		}
		return strconv.FormatInt(n, 10)
	case 2:
		return floatToken().Draw(t, "float")
	case 3, 4:
		return jsonString(t)
	case 5:
		f := rapid.Float64().Draw(t, "f64")
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "null"
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	case 6:
		n := rapid.IntRange(0, 5).Draw(t, "len")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + jsonText(t, depth-1) + ws()
		}
		return "[" + ws() + strings.Join(parts, ",") + "]"
	default:
		n := rapid.IntRange(0, 20).Draw(t, "members")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws() + jsonString(t) + ws() + ":" + ws() + jsonText(t, depth-1) + ws()
		}
		return "{" + ws() + strings.Join(parts, ",") + "}"
	}
}

// jsonString draws a JSON string token from a small alphabet, so that keys
// often share prefixes, spelled with every kind of escape.
func jsonString(t *rapid.T) string {
	runes := rapid.SliceOfN(rapid.RuneFrom([]rune{'a', 'b', 'z', '/', '"', '\\', '\n', 0x01, 0x7f, 0xe9, 0x2028, 0xe000, 0xffff, 0x10000, 0x1f600}), 0, 4).Draw(t, "runes")
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range runes {
		switch rapid.IntRange(0, 2).Draw(t, "spell") {
		case 0: // raw where JSON allows it
			switch {
			case r == '"' || r == '\\':
				b.WriteString(`\` + string(r))
			case r < 0x20:
				b.WriteString(fmt.Sprintf(`\u%04x`, r))
			default:
				b.WriteRune(r)
			}
		case 1: // \u escape, surrogate pair above the BMP, random hex case
			hex := "%04x"
			if rapid.Bool().Draw(t, "upper") {
				hex = "%04X"
			}
			if r >= 0x10000 {
				r -= 0x10000
				b.WriteString(fmt.Sprintf(`\u`+hex+`\u`+hex, 0xd800+(r>>10), 0xdc00+(r&0x3ff)))
			} else {
				b.WriteString(fmt.Sprintf(`\u`+hex, r))
			}
		default: // short escape when there is one
			switch r {
			case '/':
				b.WriteString(`\/`)
			case '\n':
				b.WriteString(`\n`)
			case '"', '\\':
				b.WriteString(`\` + string(r))
			case 0x01:
				b.WriteString(`\u0001`)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestCanonicalizeProperty: on generated documents, Canonicalize and the
// Parse path agree (bytes or refusal), the output is valid UTF-8 and
// canonical, and gowebpki v1.0.2 agrees on every document we accept.
func TestCanonicalizeProperty(t *testing.T) {
	accepted := 0
	defer func() { t.Logf("%d generated documents accepted", accepted) }()
	rapid.Check(t, func(t *rapid.T) {
		in := []byte(jsonText(t, 4))
		out, err := canon.Canonicalize(in)
		v, perr := canon.Parse(in)
		if (err == nil) != (perr == nil) || err != nil && !sameError(err, perr) {
			t.Fatalf("%s: Canonicalize %v, Parse %v", in, err, perr)
		}
		if err != nil {
			if errors.Is(err, canon.ErrUnsafeInteger) {
				t.Fatalf("generated an unsafe integer: %s", in)
			}
			return
		}
		accepted++
		if !utf8.Valid(out) {
			t.Fatalf("invalid UTF-8 output %q", out)
		}
		if viaValue, err := v.Canonical(); err != nil || !bytes.Equal(viaValue, out) {
			t.Fatalf("%s:\n Canonicalize %s\n Parse path   %s (%v)", in, out, viaValue, err)
		}
		gw, gerr := jcs.Transform(bytes.Clone(in))
		if gerr != nil || !bytes.Equal(gw, out) {
			t.Fatalf("%s:\n canon    %s\n gowebpki %s (%v)", in, out, gw, gerr)
		}
	})
}

// TestCanonicalizeNearCanonicalProperty feeds the one-pass paths for
// canonical input (runs of canonical numbers, members that need nothing
// written) what they see most, canonical documents, and what they must
// hand over or refuse: the same documents with one byte replaced, inserted
// or removed, or with two members swapped. Canonicalize must agree with
// the Parse path on every one, bytes or refusal.
func TestCanonicalizeNearCanonicalProperty(t *testing.T) {
	bytesOf := []byte(` ,:{}[]"\\0123456789-+.eEtfnulax` + "\x00\x1f\x7f\xc3\xa9")
	rapid.Check(t, func(t *rapid.T) {
		doc, err := canon.Canonicalize([]byte(jsonText(t, 4)))
		if err != nil {
			return
		}
		again, err := canon.Canonicalize(doc)
		if errors.Is(err, canon.ErrUnsafeInteger) {
			// An integral float of 2^53 or more: its canonical digits
			// have integer shape, which the strict rules refuse.
			return
		}
		if err != nil || !bytes.Equal(again, doc) {
			t.Fatalf("%s: canonical output canonicalizes to %s (%v)", doc, again, err)
		}
		in := bytes.Clone(doc)
		if len(in) > 0 {
			i := rapid.IntRange(0, len(in)-1).Draw(t, "at")
			b := rapid.SampledFrom(bytesOf).Draw(t, "byte")
			switch rapid.IntRange(0, 3).Draw(t, "mutation") {
			case 0:
				in[i] = b
			case 1:
				in = append(in[:i], append([]byte{b}, in[i:]...)...)
			case 2:
				in = append(in[:i], in[i+1:]...)
			case 3:
				// Swap the members around the first ',' at or after i
				// whose neighbours are both "key":scalar members.
				if j := bytes.IndexByte(in[i:], ','); j >= 0 {
					in = swapAround(in, i+j)
				}
			}
		}
		out, err := canon.Canonicalize(in)
		v, perr := canon.Parse(in)
		if (err == nil) != (perr == nil) || err != nil && !sameError(err, perr) {
			t.Fatalf("%q: Canonicalize %v, Parse %v", in, err, perr)
		}
		if err != nil {
			return
		}
		if viaValue, err := v.Canonical(); err != nil || !bytes.Equal(viaValue, out) {
			t.Fatalf("%q:\n Canonicalize %s\n Parse path   %s (%v)", in, out, viaValue, err)
		}
	})
}

// swapAround swaps the text between the separators before and after the
// comma at in[c] when neither side holds a bracket or a brace, which for
// object members puts two keys out of order.
func swapAround(in []byte, c int) []byte {
	l := bytes.LastIndexAny(in[:c], ",{[")
	r := bytes.IndexAny(in[c+1:], ",}]")
	if l < 0 || r < 0 {
		return in
	}
	r += c + 1
	left, right := in[l+1:c], in[c+1:r]
	if bytes.ContainsAny(left, "{}[]") || bytes.ContainsAny(right, "{}[]") {
		return in
	}
	out := append([]byte{}, in[:l+1]...)
	out = append(out, right...)
	out = append(out, ',')
	out = append(out, left...)
	return append(out, in[r:]...)
}
