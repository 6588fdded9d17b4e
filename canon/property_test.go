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
