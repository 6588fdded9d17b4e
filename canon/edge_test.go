package canon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// edgeCases are accepted inputs with their exact canonical bytes
// (doc/protocol.md, “Canonical JSON”), and the accepted rows of the
// edge-case table below.
var edgeCases = []struct {
	name, in, want string
}{
	// Top-level scalars, with whitespace around them.
	{"integer", " 42 ", "42"},
	{"string", "\t\"test-environment\"\r\n", `"test-environment"`},
	{"null", "\nnull", "null"},
	{"true", "true ", "true"},
	{"false", "false", "false"},
	{"empty object", " { } ", "{}"},
	{"empty array", "[ ]", "[]"},

	// Integers: token shape, exact, -0 as 0.
	{"max safe", "9007199254740991", "9007199254740991"},
	{"min safe", "-9007199254740991", "-9007199254740991"},
	{"minus zero", "-0", "0"},
	{"zero", "[0,-0,1,-1]", "[0,0,1,-1]"},

	// Floats: ES6 Number.prototype.toString of the shortest round trip.
	{"1.0", "1.0", "1"},
	{"-0.0", "-0.0", "0"},
	{"0.0", "0.0", "0"},
	{"-0e5", "-0e5", "0"},
	{"100.0", "100.0", "100"},
	{"1e20 float literal", "1e20", "100000000000000000000"},
	{"1e21", "1e21", "1e+21"},
	{"uppercase exponent", "1E+2", "100"},
	{"uppercase no sign", "1E2", "100"},
	{"1e-7", "1e-7", "1e-7"},
	{"1e-6", "1e-6", "0.000001"},
	{"0.000001", "0.000001", "0.000001"},
	{"0.0000001", "0.0000001", "1e-7"},
	{"subnormal", "5e-324", "5e-324"},
	{"subnormal rounds", "4.9e-324", "5e-324"},
	{"underflow to zero", "1e-400", "0"},
	{"negative underflow", "-1e-400", "0"},
	{"max float", "1.7976931348623157e308", "1.7976931348623157e+308"},
	{"rounds to max float", "1.7976931348623158e308", "1.7976931348623157e+308"},
	{"fraction", "123456789012.5", "123456789012.5"},
	{"unsafe integer as float literal", "9007199254740993.0", "9007199254740992"},
	{"2^53 as float", "9007199254740992.0", "9007199254740992"},
	{"classic", "0.30000000000000004", "0.30000000000000004"},
	{"0.1+0.2 written long", "0.3000000000000000444", "0.30000000000000004"},
	{"trailing fraction zeros", "1.500", "1.5"},
	{"negative exponent", "-1.5E-10", "-1.5e-10"},
	{"exponent to fixed", "123e-2", "1.23"},
	{"16 digits", "1234567890123456.7", "1234567890123456.8"},
	{"15 digits", "0.123456789012345", "0.123456789012345"},
	{"many zeros", "0.000000000000000000000000001", "1e-27"},
	{"long mantissa", "3." + strings.Repeat("1", 40), "3.111111111111111"},
	{"4.5", "4.50", "4.5"},
	{"333333333.3333333", "333333333.33333329", "333333333.3333333"},
	{"1e+30", "1E30", "1e+30"},
	{"0.002", "2e-3", "0.002"},

	// Strings: only '"', '\\' and U+0000..U+001F are escaped.
	{"solidus escape", `"\/"`, `"/"`},
	{"raw solidus", `"a/b"`, `"a/b"`},
	{"U+2028 U+2029 U+007F raw", `"\u2028\u2029\u007f"`, "\"\u2028\u2029\u007f\""},
	{"raw U+2028", "\"\u2028\"", "\"\u2028\""},
	{"surrogate pair", `"\ud83d\ude00"`, "\"\U0001F600\""},
	{"surrogate pair uppercase hex", `"\uD83D\uDE00"`, "\"\U0001F600\""},
	{"latin", `"\u00e9\u00C9"`, `"éÉ"`},
	{"short escapes", `"\b\f\n\r\t"`, `"\b\f\n\r\t"`},
	{"short escapes from \\u", `"\u0008\u000c\u000a\u000d\u0009"`, `"\b\f\n\r\t"`},
	{"other controls lowercase hex", `"\u0000\u001F\u000B\u001b"`, `"\u0000\u001f\u000b\u001b"`},
	{"quote and backslash", `"\u0022\u005c\"\\"`, `"\"\\\"\\"`},
	{"escaped printable", `"\u0041\u0062"`, `"Ab"`},
	{"euro", `"\u20ac$"`, "\"€$\""},
	{"non-BMP raw", "\"\U0001F600\"", "\"\U0001F600\""},
	{"BOM inside a string", "\"\ufeff\"", "\"\ufeff\""},
	{"escaped BOM", `"\ufeff"`, "\"\ufeff\""},

	// Key order: UTF-16 code units, not code points or bytes.
	{"sorted", `{"b":1,"a":2}`, `{"a":2,"b":1}`},
	{"supplementary before U+E000", `{"\ue000":1,"\ud800\udc00":2}`, "{\"\U00010000\":2,\"\ue000\":1}"},
	{"raw supplementary before U+FFFF", "{\"\uffff\":1,\"\U0010FFFF\":2}", "{\"\U0010FFFF\":2,\"\uffff\":1}"},
	{"prefix first", `{"ab":1,"a":2,"":3}`, `{"":3,"a":2,"ab":1}`},
	{"escaped keys sort by their text", `{"\u0062":1,"\u0061":2,"\n":3}`, `{"\n":3,"a":2,"b":1}`},
	{"quote in key sorts by its code", `{"a":1,"\"":2,"\\":3}`, `{"\"":2,"\\":3,"a":1}`},
	{"nested reorder", `{"b":{"d":1,"c":[{"z":1,"y":2}]},"a":[3,{"q":{}, "p":[]}]}`, `{"a":[3,{"p":[],"q":{}}],"b":{"c":[{"y":2,"z":1}],"d":1}}`},
	{"order change late", `{"a":1,"b":"x,y}","d":{"k":"\"}"},"c":[1,"]"]}`, `{"a":1,"b":"x,y}","c":[1,"]"],"d":{"k":"\"}"}}`},
	{"whitespace everywhere", " {\n\t\"a\" : [ 1 , 2 ] ,\r\n \"b\" : { } } ", `{"a":[1,2],"b":{}}`},
}

func TestEdgeCases(t *testing.T) {
	for _, c := range edgeCases {
		checkCanonical(t, c.name, []byte(c.in), c.want, canon.Sum([]byte(c.want)))
	}
}

// TestLargeObjects covers both member-order paths on objects larger than
// the linear duplicate scan: ascending (written in place), descending and
// ascending-then-one-out-of-order (recovered from the output and reordered).
func TestLargeObjects(t *testing.T) {
	const n = 300
	key := func(i int) string { return `"k` + strings.Repeat("0", 3-len(itoa(i))) + itoa(i) + `"` }
	var asc, desc, late strings.Builder
	for i := range n {
		if i > 0 {
			asc.WriteString(",")
			desc.WriteString(",")
			late.WriteString(",")
		}
		asc.WriteString(key(i) + `:{"v":[` + itoa(i) + `,"\u00e9"]}`)
		desc.WriteString(key(n-1-i) + `:{"v":[` + itoa(n-1-i) + `,"\u00e9"]}`)
		j := i
		if i == n-1 {
			j = -1
		}
		late.WriteString(`"` + string(rune('A'+(j+1)%2)) + key(j + 1)[1:] + `:"` + itoa(j) + `"`)
	}
	want := "{" + strings.ReplaceAll(asc.String(), `\u00e9`, "é") + "}"
	checkCanonical(t, "ascending", []byte("{"+asc.String()+"}"), want, canon.Sum([]byte(want)))
	checkCanonical(t, "descending", []byte("{"+desc.String()+"}"), want, canon.Sum([]byte(want)))
	v, err := canon.Parse([]byte("{" + late.String() + "}"))
	if err != nil {
		t.Fatal(err)
	}
	wantLate, err := v.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	checkCanonical(t, "late", []byte("{"+late.String()+"}"), string(wantLate), "")
}

func itoa(i int) string {
	if i < 0 {
		return "-" + itoa(-i)
	}
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestAnchorEdgeCaseTable replays every row of the edge-case table on which
// JSON canonicalizers were probed to disagree (cyberphone, gowebpki
// v1.0.1/v1.0.2 and jsontext) with the protocol's answer: refused where upstream's strict
// parser refuses, including the unsafe integers every library accepts.
func TestAnchorEdgeCaseTable(t *testing.T) {
	rows := []struct {
		in   string
		err  error  // refusal, or nil
		want string // canonical output when accepted
	}{
		{`{"a":1,"a":2}`, canon.ErrDuplicateKey, ""},
		{`["\ud800"]`, canon.ErrLoneSurrogate, ""},
		{`["\udc00\u0041"]`, canon.ErrLoneSurrogate, ""},
		{`["\ud800\u0041"]`, canon.ErrLoneSurrogate, ""},
		{"[\"\xff\"]", canon.ErrInvalidUTF8, ""},
		{`[9007199254740993]`, canon.ErrUnsafeInteger, ""},
		{`[1e400]`, canon.ErrNonFinite, ""},
		{`[0x1p4]`, canon.ErrSyntax, ""},
		{`[+1]`, canon.ErrSyntax, ""},
		{`[01]`, canon.ErrSyntax, ""},
		{`[1.]`, canon.ErrSyntax, ""},
		{`[1 2]`, canon.ErrSyntax, ""},
		{`[tr ue]`, canon.ErrSyntax, ""},
		{`[{"\ud800"},"x"]`, canon.ErrLoneSurrogate, ""},
		{`42`, nil, "42"},
		{` 42`, nil, "42"},
		{`-0`, nil, "0"},
		{`[-0]`, nil, "[0]"},
	}
	for _, r := range rows {
		out, err := canon.Canonicalize([]byte(r.in))
		switch {
		case r.err != nil && !errors.Is(err, r.err):
			t.Errorf("%s: got %q, %v; want %v", r.in, out, err, r.err)
		case r.err == nil && (err != nil || string(out) != r.want):
			t.Errorf("%s: got %q, %v; want %s", r.in, out, err, r.want)
		}
	}
}
