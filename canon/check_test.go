package canon_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// checkAgrees fails t unless CheckCanonical(in) accepts exactly when
// Canonicalize(in) returns in itself, refuses strict-but-different input
// with ErrNotCanonical at the first differing byte, and refuses invalid
// input with Canonicalize's own error.
func checkAgrees(t *testing.T, o canon.Options, in []byte) {
	t.Helper()
	err := o.CheckCanonical(in)
	out, cerr := o.Canonicalize(in)
	switch {
	case cerr != nil:
		if err == nil || !sameError(err, cerr) {
			t.Fatalf("CheckCanonical(%q) = %v, Canonicalize refused with %v", in, err, cerr)
		}
	case bytes.Equal(out, in):
		if err != nil {
			t.Fatalf("CheckCanonical(%q) = %v, but the input is canonical", in, err)
		}
	default:
		var ce *canon.Error
		if !errors.Is(err, canon.ErrNotCanonical) || !errors.As(err, &ce) {
			t.Fatalf("CheckCanonical(%q) = %v, want ErrNotCanonical (canonical form %q)", in, err, out)
		}
		off := int(ce.Offset)
		if off > min(len(in), len(out)) || !bytes.Equal(in[:off], out[:off]) ||
			(off < len(in) && off < len(out) && in[off] == out[off]) {
			t.Fatalf("CheckCanonical(%q) offset %d is not the first difference from %q", in, off, out)
		}
	}
}

var checkCases = []string{
	`{}`, `[]`, `0`, `-0`, `1`, `-1`, `1.5`, `1.50`, `1e21`, `1e+21`, `1E+21`, `1e-7`, `0.000001`, `-0.0`,
	`9007199254740991`, `-9007199254740991`, `9007199254740992`, `100000000000000000000`, `1e20`,
	`1e400`, `1e-400`, `01`, `1.`, `.5`, `true`, `false`, `null`, `nul`, `"a"`, `"\u0041"`, `"\u001f"`,
	`"\u001F"`, `"\n"`, `"\u000a"`, `"\/"`, `"\""`, `"\\"`, `"é"`, "\"\xff\"", "\"\x01\"", `"\ud800"`,
	`{"a":1,"b":2}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"a" :1}`, ` {}`, `{} `, `[1,2]`, `[1, 2]`,
	`{"\u0001":1,"a":2}`, `{"a\n":1,"a":2}`, `{"\ue000":1,"\ud83d\ude00":2}`, "{\"\U0001F600\":1,\"\uE000\":2}",
	"{\"\uE000\":1,\"\U0001F600\":2}", `[[[[]]]]`, `{"a":{"b":[1,{"c":null}]}}`, "\xef\xbb\xbf{}", ``, `[`, `"`,
}

func TestCheckCanonical(t *testing.T) {
	for _, c := range checkCases {
		checkAgrees(t, canon.Options{}, []byte(c))
	}
	for _, c := range edgeCases {
		checkAgrees(t, canon.Options{}, []byte(c.in))
	}
	for _, c := range refusals {
		checkAgrees(t, canon.Options{}, []byte(c.in))
	}
	// Limits are Canonicalize's.
	checkAgrees(t, canon.Options{MaxDepth: 2}, []byte(`[[1]]`))
	checkAgrees(t, canon.Options{MaxDepth: 2}, []byte(`[[[1]]]`))
	checkAgrees(t, canon.Options{MaxDepth: -1}, []byte(`[]`))
	checkAgrees(t, canon.Options{MaxDepth: -1}, []byte(`1`))
	checkAgrees(t, canon.Options{MaxBytes: 4}, []byte(`[1,2]`))
	checkAgrees(t, canon.Options{MaxBytes: -1}, []byte(`[1,2]`))
	if err := canon.CheckCanonical([]byte(`{"b":1,"a":2}`)); !errors.Is(err, canon.ErrNotCanonical) {
		t.Fatalf("unsorted keys: %v, want ErrNotCanonical", err)
	}
}

// TestCheckCanonicalNoAlloc checks the promise that canonical input costs
// no allocation, on documents of every token kind.
func TestCheckCanonicalNoAlloc(t *testing.T) {
	docs := []string{
		`{"a":[1,-2,1.5,1e+21,true,false,null],"b":{"c":"x\ny\u0001é"},"d":"` + strings.Repeat("z", 5000) + `"}`,
		`[0,-9007199254740991,0.1,5e-324,1.7976931348623157e+308]`,
	}
	for _, d := range docs {
		in := []byte(d)
		if err := canon.CheckCanonical(in); err != nil {
			t.Fatalf("CheckCanonical(%.60q): %v", d, err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = canon.CheckCanonical(in) }); n != 0 {
			t.Errorf("CheckCanonical(%.60q) allocates %v times per call, want 0", d, n)
		}
	}
}

// FuzzCheckCanonical checks CheckCanonical against Canonicalize on any
// input and on the canonical form of any input.
func FuzzCheckCanonical(f *testing.F) {
	addSeeds(f)
	for _, c := range checkCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgrees(t, canon.Options{}, in)
		if out, err := canon.Canonicalize(in); err == nil {
			checkAgrees(t, canon.Options{}, out)
			// Only an escaped key sends canonical input to the slow path.
			if !canon.CheckFast(out) && canon.CheckCanonical(out) == nil && !bytes.Contains(out, []byte{'\\'}) {
				t.Fatalf("canonical %q missed the allocation-free pass", out)
			}
		}
	})
}
