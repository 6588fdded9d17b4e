package canon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// refusals lists inputs the protocol refuses, with the sentinel and the
// byte offset every entry point (Canonicalize, DigestJSON, Parse,
// Unmarshal) must report.
var refusals = []struct {
	name string
	in   string
	err  error
	off  int64
}{
	// Whole-input rules (doc/protocol.md, “Strict JSON”, rules 1–3).
	{"empty", "", canon.ErrSyntax, 0},
	{"only whitespace", " \t\r\n", canon.ErrSyntax, 4},
	{"BOM", "\xef\xbb\xbf{}", canon.ErrSyntax, 0},
	{"BOM before scalar", "\xef\xbb\xbf1", canon.ErrSyntax, 0},
	{"trailing value", "{} {}", canon.ErrSyntax, 3},
	{"trailing NUL", "{\"a\":1}\x00", canon.ErrSyntax, 7},
	{"trailing comma after scalar", "1,", canon.ErrSyntax, 1},
	{"vertical tab is not whitespace", "\v1", canon.ErrSyntax, 0},
	{"NBSP is not whitespace", "\u00a01", canon.ErrSyntax, 0},
	{"raw tab in string", "[\"a\tb\"]", canon.ErrSyntax, 3},
	{"raw NUL in string", "\"\x00\"", canon.ErrSyntax, 1},
	{"raw newline in key", "{\"a\nb\":1}", canon.ErrSyntax, 3},
	{"unterminated string", "\"abc", canon.ErrSyntax, 0},
	{"unterminated escape", "\"\\", canon.ErrSyntax, 1},
	{"bad escape", "\"\\x\"", canon.ErrSyntax, 1},
	{"single quote escape", "\"\\'\"", canon.ErrSyntax, 1},
	{"short \\u", "\"\\u12\"", canon.ErrSyntax, 1},
	{"non-hex \\u", "\"\\u12G4\"", canon.ErrSyntax, 1},
	{"single quotes", "'a'", canon.ErrSyntax, 0},
	{"unquoted key", "{a:1}", canon.ErrSyntax, 1},
	{"missing colon", "{\"a\" 1}", canon.ErrSyntax, 5},
	{"missing value", "{\"a\":}", canon.ErrSyntax, 5},
	{"trailing comma in object", "{\"a\":1,}", canon.ErrSyntax, 7},
	{"trailing comma in array", "[1,]", canon.ErrSyntax, 3},
	{"missing comma", "[1 2]", canon.ErrSyntax, 3},
	{"unclosed array", "[\"a\"", canon.ErrSyntax, 4},
	{"unclosed object", "{", canon.ErrSyntax, 1},
	{"open bracket only", "[", canon.ErrSyntax, 1},
	{"extra close", "[1]]", canon.ErrSyntax, 3},
	{"comment", "[1/*c*/]", canon.ErrSyntax, 2},
	{"leading zero", "01", canon.ErrSyntax, 1},
	{"leading zero in array", "[01]", canon.ErrSyntax, 2},
	{"negative leading zero", "-01", canon.ErrSyntax, 2},
	{"leading dot", ".5", canon.ErrSyntax, 0},
	{"trailing dot", "[1.]", canon.ErrSyntax, 3},
	{"dot exponent", "1.e5", canon.ErrSyntax, 2},
	{"empty exponent", "[1e]", canon.ErrSyntax, 3},
	{"signed empty exponent", "[1e+]", canon.ErrSyntax, 4},
	{"lone minus", "[-]", canon.ErrSyntax, 2},
	{"plus sign", "+1", canon.ErrSyntax, 0},
	{"hex", "[0x10]", canon.ErrSyntax, 2},
	{"hex float", "[0x1p4]", canon.ErrSyntax, 2},
	{"minus NaN", "[-NaN]", canon.ErrSyntax, 2},
	{"bad literal", "[tru]", canon.ErrSyntax, 1},
	{"capital literal", "[True]", canon.ErrSyntax, 1},
	{"split literal", "[tr ue]", canon.ErrSyntax, 1},
	{"short null", "nul", canon.ErrSyntax, 0},
	{"byte 0xff outside string", "\xff", canon.ErrSyntax, 0},
	{"invalid object in array", "[{\"\\ud800\"},\"x\"]", canon.ErrLoneSurrogate, 3},

	// Non-finite numbers (“Strict JSON”, rules 5 and 6).
	{"NaN", "NaN", canon.ErrNonFinite, 0},
	{"Infinity", "[Infinity]", canon.ErrNonFinite, 1},
	{"-Infinity", "-Infinity", canon.ErrNonFinite, 0},
	{"overflow", "[1e999]", canon.ErrNonFinite, 1},
	{"negative overflow", "{\"x\":-1e400}", canon.ErrNonFinite, 5},
	{"just past max float", "1.7976931348623159e308", canon.ErrNonFinite, 0},

	// Unsafe integer literals (rule 6), accepted by every library.
	{"2^53", "9007199254740992", canon.ErrUnsafeInteger, 0},
	{"2^53+1", "[9007199254740993]", canon.ErrUnsafeInteger, 1},
	{"-2^53", "[-9007199254740992]", canon.ErrUnsafeInteger, 1},
	{"1e20 as integer literal", "100000000000000000000", canon.ErrUnsafeInteger, 0},
	{"nested unsafe integer", "{\"a\":[1,99999999999999999999]}", canon.ErrUnsafeInteger, 8},
	{"huge integer", strings.Repeat("9", 400), canon.ErrUnsafeInteger, 0},

	// Lone surrogates (rule 6).
	{"lone high", "\"\\ud800\"", canon.ErrLoneSurrogate, 1},
	{"lone high at end", "[\"a\\uDBFF\"]", canon.ErrLoneSurrogate, 3},
	{"lone low then char", "[\"\\udc00\\u0041\"]", canon.ErrLoneSurrogate, 2},
	{"high then non-low", "[\"\\ud800\\u0041\"]", canon.ErrLoneSurrogate, 2},
	{"high then high", "\"\\ud800\\ud800\"", canon.ErrLoneSurrogate, 1},
	{"high then raw char", "\"\\ud800x\"", canon.ErrLoneSurrogate, 1},
	{"high then short escape", "\"\\ud800\\n\"", canon.ErrLoneSurrogate, 1},
	{"reversed pair", "\"\\ude00\\ud83d\"", canon.ErrLoneSurrogate, 1},
	{"lone low in key", "{\"\\udc00\":1}", canon.ErrLoneSurrogate, 2},

	// Invalid UTF-8 (rule 2).
	{"byte 0xff in string", "[\"\xff\"]", canon.ErrInvalidUTF8, 2},
	{"truncated sequence", "[\"\xc3\"]", canon.ErrInvalidUTF8, 2},
	{"overlong slash", "\"\xc0\xaf\"", canon.ErrInvalidUTF8, 1},
	{"encoded surrogate", "\"\xed\xa0\x80\"", canon.ErrInvalidUTF8, 1},
	{"above U+10FFFF", "\"\xf4\x90\x80\x80\"", canon.ErrInvalidUTF8, 1},
	{"invalid UTF-8 in key", "{\"ok\":1,\"\xfe\":2}", canon.ErrInvalidUTF8, 9},
	{"invalid after 8 ASCII bytes", "\"abcdefgh\x80\"", canon.ErrInvalidUTF8, 9},

	// Duplicate keys at every depth (rule 4).
	{"duplicate", "{\"x\":1,\"x\":2}", canon.ErrDuplicateKey, 7},
	{"duplicate after unescaping", "{\"a\":1,\"\\u0061\":2}", canon.ErrDuplicateKey, 7},
	{"duplicate escaped first", "{\"\\u0061\":1,\"a\":2}", canon.ErrDuplicateKey, 12},
	{"duplicate surrogate pair", "{\"\\ud83d\\ude00\":1,\"\U0001F600\":2}", canon.ErrDuplicateKey, 18},
	{"duplicate in unsorted object", "{\"b\":1,\"a\":2,\"b\":3}", canon.ErrDuplicateKey, 13},
	{"duplicate nested", "[{\"x\":{\"y\":1,\"y\":2}}]", canon.ErrDuplicateKey, 13},
	{"duplicate in large unsorted object", largeDuplicate(), canon.ErrDuplicateKey, int64(strings.LastIndex(largeDuplicate(), "\"k05\""))},
	{"duplicate before a syntax error", "{\"a\":1,\"a\":2,}", canon.ErrDuplicateKey, 7},
	{"syntax error inside value before duplicate", "{\"b\":1,\"a\":[1,],\"b\":2}", canon.ErrSyntax, 14},
}

// largeDuplicate is an unsorted object of more than 16 members (so that
// duplicates are found through a set) whose key k05 appears twice.
func largeDuplicate() string {
	var b strings.Builder
	b.WriteString("{")
	for i := 30; i >= 0; i-- {
		b.WriteString(`"k` + string(rune('0'+i/10)) + string(rune('0'+i%10)) + `":1,`)
	}
	b.WriteString(`"k05":2}`)
	return b.String()
}

func checkRefusal(t *testing.T, what string, err, want error, off int64) {
	t.Helper()
	var e *canon.Error
	switch {
	case err == nil:
		t.Errorf("%s accepted, want %v at offset %d", what, want, off)
	case !errors.Is(err, want):
		t.Errorf("%s: %v; want %v", what, err, want)
	case !errors.As(err, &e):
		t.Errorf("%s: %v is not a *canon.Error", what, err)
	case e.Offset != off:
		t.Errorf("%s: offset %d (%v), want %d", what, e.Offset, err, off)
	}
}

func TestRefusals(t *testing.T) {
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.in)
			out, err := canon.Canonicalize(in)
			checkRefusal(t, "Canonicalize", err, c.err, c.off)
			if out != nil {
				t.Errorf("Canonicalize returned %q with its error", out)
			}
			d, err := canon.DigestJSON(in)
			checkRefusal(t, "DigestJSON", err, c.err, c.off)
			if d != "" {
				t.Errorf("DigestJSON returned %q with its error", d)
			}
			_, err = canon.Parse(in)
			checkRefusal(t, "Parse", err, c.err, c.off)
			var v any
			checkRefusal(t, "Unmarshal", canon.Unmarshal(in, &v), c.err, c.off)
			if err != nil && !strings.HasPrefix(err.Error(), "canon: ") {
				t.Errorf("error text %q does not name the package", err)
			}
		})
	}
}

// TestLimits checks MaxBytes and MaxDepth exactly at and one past the limit.
func TestLimits(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	nestObj := func(n int) []byte {
		return []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
	}
	accept := func(what string, o canon.Options, in []byte) {
		t.Helper()
		if _, err := o.Canonicalize(in); err != nil {
			t.Errorf("%s: Canonicalize: %v", what, err)
		}
		if _, err := o.Parse(in); err != nil {
			t.Errorf("%s: Parse: %v", what, err)
		}
		var v any
		if err := o.Unmarshal(in, &v); err != nil {
			t.Errorf("%s: Unmarshal: %v", what, err)
		}
	}
	refuse := func(what string, o canon.Options, in []byte, want error, off int64) {
		t.Helper()
		_, err := o.Canonicalize(in)
		checkRefusal(t, what+": Canonicalize", err, want, off)
		_, err = o.DigestJSON(in)
		checkRefusal(t, what+": DigestJSON", err, want, off)
		_, err = o.Parse(in)
		checkRefusal(t, what+": Parse", err, want, off)
		var v any
		checkRefusal(t, what+": Unmarshal", o.Unmarshal(in, &v), want, off)
	}

	accept("default depth", canon.Options{}, nest(canon.DefaultMaxDepth))
	refuse("default depth+1", canon.Options{}, nest(canon.DefaultMaxDepth+1), canon.ErrTooDeep, canon.DefaultMaxDepth)
	accept("objects at default depth", canon.Options{}, nestObj(canon.DefaultMaxDepth))
	refuse("objects at default depth+1", canon.Options{}, nestObj(canon.DefaultMaxDepth+1), canon.ErrTooDeep, 5*canon.DefaultMaxDepth)
	accept("depth 3", canon.Options{MaxDepth: 3}, []byte(`[{"a":[]}]`))
	refuse("depth 4 of 3", canon.Options{MaxDepth: 3}, []byte(`[{"a":[[]]}]`), canon.ErrTooDeep, 7)
	accept("deep custom", canon.Options{MaxDepth: 5000}, nest(5000))
	accept("negative depth: scalars", canon.Options{MaxDepth: -1}, []byte(`"x"`))
	refuse("negative depth: arrays", canon.Options{MaxDepth: -1}, []byte(`[]`), canon.ErrTooDeep, 0)

	exact := []byte(`["` + strings.Repeat("x", canon.DefaultMaxBytes-4) + `"]`)
	accept("exactly DefaultMaxBytes", canon.Options{}, exact)
	over := append(append([]byte{}, exact...), ' ')
	refuse("DefaultMaxBytes+1", canon.Options{}, over, canon.ErrTooLarge, canon.DefaultMaxBytes)
	accept("MaxBytes 5", canon.Options{MaxBytes: 5}, []byte("[1,2]"))
	refuse("MaxBytes 4", canon.Options{MaxBytes: 4}, []byte("[1,2]"), canon.ErrTooLarge, 4)
	accept("no size limit", canon.Options{MaxBytes: -1}, over)
	// The size check comes first: an oversize input is refused as too
	// large even when it is also malformed.
	refuse("too large and malformed", canon.Options{MaxBytes: 2}, []byte("\xef\xbb\xbf{"), canon.ErrTooLarge, 2)
}
