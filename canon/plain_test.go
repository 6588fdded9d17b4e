package canon_test

import (
	"bytes"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// plainValue draws values of the kinds JSON decoding produces, with keys
// and strings that exercise escapes, non-ASCII and UTF-16 key order, and
// sometimes values canon refuses (invalid UTF-8, NaN, unsafe integers) or
// that the plain fast path leaves to reflection (int, a struct).
func plainValue(depth int) *rapid.Generator[any] {
	str := rapid.OneOf(rapid.SampledFrom([]string{"", "a", "b", "é", "\U0001F600", "\uFFFD", "\ue000", "\x00\n\"\\", "\xff", "aa"}), rapid.String())
	leaves := []*rapid.Generator[any]{
		rapid.Just[any](nil), rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(str, func(s string) any { return s }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e21, 1e-7, 9007199254740993, math.NaN(), math.Inf(1)}), func(f float64) any { return f }),
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(rapid.SampledFrom([]int64{canon.MaxSafeInteger, canon.MaxSafeInteger + 1, -canon.MaxSafeInteger - 1}), func(i int64) any { return i }),
		rapid.Map(rapid.Int(), func(i int) any { return i }),
		rapid.Just[any](struct {
			A int `json:"a"`
		}{A: 1}),
	}
	if depth == 0 {
		return rapid.OneOf(leaves...)
	}
	inner := plainValue(depth - 1)
	return rapid.OneOf(append(leaves,
		rapid.Map(rapid.SliceOfN(inner, 0, 4), func(s []any) any { return s }),
		rapid.Map(rapid.MapOfN(str, inner, 0, 5), func(m map[string]any) any { return m }))...)
}

// TestAppendMarshalMatchesReflection: the plain-value fast path of Marshal
// and AppendMarshal writes the bytes, and fails with the error, of the
// reflection path; AppendMarshal leaves what dst held in place.
func TestAppendMarshalMatchesReflection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := plainValue(2).Draw(t, "value")
		want, werr := canon.ReflectMarshal(v)
		got, gerr := canon.Marshal(v)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("reflection: %v; Marshal: %v", werr, gerr)
		}
		if werr != nil {
			return
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("reflection:\n%s\nMarshal:\n%s", want, got)
		}
		prefix := []byte(`{"payload":`)
		app, err := canon.AppendMarshal(bytes.Clone(prefix), v)
		if err != nil || !bytes.Equal(app, append(prefix, want...)) {
			t.Fatalf("AppendMarshal = %s, %v; want the prefix then %s", app, err, want)
		}
	})
}
