package canon_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// quoteReference is RFC 8785 string quoting one byte at a time, the
// specification AppendString's word-at-a-time scan must agree with.
func quoteReference(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestAppendStringWords puts every kind of byte that stops the eight-byte
// step (quote, backslash, control, UTF-8 lead and continuation bytes) at
// every offset of runs longer than a word, and compares with the
// reference.
func TestAppendStringWords(t *testing.T) {
	specials := []string{`"`, `\`, "\x00", "\x1f", "\n", "\x7f", "é", "\u2028", "\U0001F600"}
	for _, sp := range specials {
		for n := 0; n <= 24; n++ {
			for at := 0; at <= n; at++ {
				s := strings.Repeat("a", at) + sp + strings.Repeat("b", n-at)
				got, err := canon.AppendString(nil, s)
				if want := quoteReference(s); err != nil || string(got) != want {
					t.Fatalf("AppendString(%q) = %s, %v; want %s", s, got, err, want)
				}
			}
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.SampledFrom([]rune{'a', 'z', ' ', '~', '"', '\\', 0, 0x1f, '\t', 0x7f, 'é', '\u2028', '\U0001F600'})).Draw(t, "s")
		if !utf8.ValidString(s) {
			t.Fatalf("generator made invalid UTF-8")
		}
		got, err := canon.AppendString([]byte("x"), s)
		if want := "x" + quoteReference(s); err != nil || string(got) != want {
			t.Fatalf("AppendString(%q) = %s, %v; want %s", s, got, err, want)
		}
		if back, err := canon.Unquote(got[1:]); err != nil || back != s {
			t.Fatalf("Unquote(%s) = %q, %v; want %q", got[1:], back, err, s)
		}
	})
}
