package canon_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// adversarialNesting builds 1 MiB of objects nested to the depth limit in
// which every level's out-of-order key comes after its large nested value,
// so that every level must rearrange. Its cost must stay near linear in the
// input (a rescan of each level's value would make it O(depth × size)).
func adversarialNesting() []byte {
	depth := canon.DefaultMaxDepth - 1
	pad := `"` + strings.Repeat("x", (canon.DefaultMaxBytes-depth*20)/2) + `"`
	var b strings.Builder
	for range depth {
		b.WriteString(`{"b":`)
	}
	b.WriteString(`[` + pad + `]`)
	for range depth {
		b.WriteString(`,"a":1}`)
	}
	return []byte(b.String())
}

// wideUnsorted is a 1 MiB object of 20,000 members in descending key order.
func wideUnsorted() []byte {
	var b strings.Builder
	b.WriteString("{")
	for i := 20000; i > 0; i-- {
		if i < 20000 {
			b.WriteString(",")
		}
		b.WriteString(`"key-` + strconv.Itoa(i) + `":"` + strings.Repeat("v", 30) + `"`)
	}
	b.WriteString("}")
	return []byte(b.String())
}

func BenchmarkCanonicalizeAdversarial(b *testing.B) {
	for _, c := range []struct {
		name string
		doc  []byte
	}{
		{"nestedUnsorted", adversarialNesting()},
		{"wideUnsorted", wideUnsorted()},
	} {
		if _, err := canon.Canonicalize(c.doc); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := canon.Canonicalize(c.doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdversarialShapes checks the two benchmark documents against the Parse
// path, so the benchmark measures correct work.
func TestAdversarialShapes(t *testing.T) {
	for _, doc := range [][]byte{adversarialNesting(), wideUnsorted()} {
		v, err := canon.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := v.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		checkCanonical(t, "adversarial", doc, string(want), "")
	}
}

func BenchmarkParseCanonicalAdversarial(b *testing.B) {
	for _, c := range []struct {
		name string
		doc  []byte
	}{
		{"nestedUnsorted", adversarialNesting()},
		{"wideUnsorted", wideUnsorted()},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			for b.Loop() {
				v, err := canon.Parse(c.doc)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := v.Canonical(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdversarialRefusals checks that the fallback to the tree path (taken
// on adversarialNesting) refuses exactly as the one-pass path would.
func TestAdversarialRefusals(t *testing.T) {
	doc := adversarialNesting()
	trailing := append(doc[:len(doc):len(doc)], " x"...)
	checkRefusal(t, "trailing data", errOf(canon.Canonicalize(trailing)), canon.ErrSyntax, int64(len(doc)+1))
	dup := append(doc[:len(doc)-1:len(doc)-1], `,"b":2}`...)
	checkRefusal(t, "duplicate at the top", errOf(canon.Canonicalize(dup)), canon.ErrDuplicateKey, int64(len(doc)))
	for _, in := range [][]byte{trailing, dup} {
		_, perr := canon.Parse(in)
		if !sameError(errOf(canon.Canonicalize(in)), perr) {
			t.Errorf("Canonicalize and Parse disagree: %v", perr)
		}
	}
}

func errOf(_ []byte, err error) error { return err }

// BenchmarkMarshalPlain: the canonical bytes of decoded JSON (a payload's
// arguments or a reply's data: maps, slices, strings, numbers) through
// Marshal's plain-value path and through reflection, interleaved.
func BenchmarkMarshalPlain(b *testing.B) {
	args := map[string]any{
		"organization_id": "org-a", "text": "hello, world", "count": int64(3), "ratio": 0.25, "ok": true,
		"items":  []any{"a", "b", map[string]any{"k": "v", "é": nil}},
		"nested": map[string]any{"z": 1.5, "a": []any{int64(1), int64(2), int64(3)}, "m": "x"},
	}
	for _, bb := range []struct {
		name string
		fn   func(any) ([]byte, error)
	}{{"plain", canon.Marshal}, {"reflection", canon.ReflectMarshal}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bb.fn(args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
