package hostsim

import (
	"bytes"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/ipc"
)

// jsonValue draws values of the kinds arguments hold, with keys and
// strings that exercise escapes, non-ASCII and UTF-16 key order, and
// sometimes values canon refuses (invalid UTF-8, NaN) or that the fast
// encoder leaves to canon (int, a struct).
func jsonValue(depth int) *rapid.Generator[any] {
	str := rapid.OneOf(rapid.SampledFrom([]string{"", "a", "b", "é", "\U0001F600", "\uFFFD", "\ue000", "\x00\n\"\\", "\xff", "aa"}), rapid.String())
	leaves := []*rapid.Generator[any]{
		rapid.Just[any](nil), rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(str, func(s string) any { return s }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e21, 1e-7, 9007199254740993, math.NaN(), math.Inf(1)}), func(f float64) any { return f }),
		rapid.Map(rapid.Int(), func(i int) any { return i }),
		rapid.Just[any](struct {
			A int `json:"a"`
		}{A: 1}),
	}
	if depth == 0 {
		return rapid.OneOf(leaves...)
	}
	inner := jsonValue(depth - 1)
	return rapid.OneOf(append(leaves,
		rapid.Map(rapid.SliceOfN(inner, 0, 4), func(s []any) any { return s }),
		rapid.Map(rapid.MapOfN(str, inner, 0, 5), func(m map[string]any) any { return m }))...)
}

// TestAppendEffectMatchesCanon: the Channel's effect encoder writes the
// bytes, and fails with the error, of ipc.EffectRequest.AppendCanonical.
func TestAppendEffectMatchesCanon(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		args := rapid.MapOfN(rapid.String(), jsonValue(2), 0, 6).Draw(t, "arguments")
		if rapid.Bool().Draw(t, "nil") {
			args = nil
		}
		e := ipc.EffectRequest{LogicalEffectID: rapid.String().Draw(t, "id"), ConnectionRef: "connection-a",
			ConnectorRevision: "sha256:1111111111111111111111111111111111111111111111111111111111111111", Operation: "write", Arguments: args}
		prefix := []byte(`{"payload":`)
		want, werr := e.AppendCanonical(bytes.Clone(prefix))
		got, gerr := appendEffect(bytes.Clone(prefix), e)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("AppendCanonical: %v; appendEffect: %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(want, got) {
			t.Fatalf("AppendCanonical:\n%s\nappendEffect:\n%s", want, got)
		}
	})
}
