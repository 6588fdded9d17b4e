package pbvalue

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type point struct {
	X    int    `json:"x"`
	Name string `json:"name,omitempty"`
}

// TestSameAsJSON: whatever FromMap accepts arrives as exactly what a JSON
// reader gets from encoding/json, so that both protocols deliver the same
// values.
func TestSameAsJSON(t *testing.T) {
	t.Parallel()
	in := map[string]any{
		"nil":      nil,
		"bool":     true,
		"string":   "héllo\n",
		"float":    1.5,
		"float32":  float32(0.25),
		"int":      -42,
		"int8":     int8(-8),
		"int16":    int16(16),
		"int32":    int32(32),
		"int64":    int64(1<<53 - 1),
		"uint8":    uint8(8),
		"uint16":   uint16(16),
		"uint32":   uint32(32),
		"uint":     uint(7),
		"uint64":   uint64(1 << 40),
		"number":   json.Number("12.5e3"),
		"intnum":   json.Number("-9007199254740991"),
		"list":     []any{1, "two", []any{}, map[string]any{}},
		"nillist":  []any(nil),
		"nilmap":   map[string]any(nil),
		"nested":   map[string]any{"a": map[string]any{"b": []any{false}}},
		"strings":  []string{"a", "b"},                   // upstream sent "unsupported value"
		"strmap":   map[string]string{"k": "v"},          // idem
		"struct":   point{X: 3},                          // idem
		"ptr":      &point{X: 4, Name: "p"},              //
		"bytes":    []byte("raw"),                        // base64, as encoding/json
		"intslice": []int{1, 2, 3},                       //
		"anyslice": []map[string]int{{"n": 1}, {"m": 2}}, //
	}
	got := ToMap(must(FromMap(in, "params")))
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]any
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("gRPC values differ from what JSON delivers (-json +grpc):\n%s", diff)
	}
	if ToMap(nil) != nil || must(FromMap(nil, "params")) != nil {
		t.Fatal("nil map did not stay nil")
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	loop := []any{nil}
	loop[0] = loop
	tests := []struct {
		name string
		in   map[string]any
		path string
	}{
		{"nan", map[string]any{"x": math.NaN()}, "params.x"},
		{"inf", map[string]any{"a": map[string]any{"b": math.Inf(-1)}}, "params.a.b"},
		{"int64 too big", map[string]any{"n": int64(1 << 53)}, "params.n"},
		{"int64 too small", map[string]any{"n": []any{0, int64(-1 << 53)}}, "params.n[1]"},
		{"uint64 too big", map[string]any{"n": uint64(math.MaxUint64)}, "params.n"},
		{"json.Number too big", map[string]any{"n": json.Number("9007199254740993")}, "params.n"},
		{"json.Number garbage", map[string]any{"n": json.Number("1.2.3")}, "params.n"},
		{"typed too big", map[string]any{"s": []int64{1, 1 << 60}}, "params.s[1]"},
		{"channel", map[string]any{"c": make(chan int)}, "params.c"},
		{"func", map[string]any{"f": func() {}}, "params.f"},
		{"cycle", map[string]any{"l": loop}, "params.l" + repeat("[0]", maxDepth)},
	}
	for _, tt := range tests {
		_, err := FromMap(tt.in, "params")
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: FromMap = %v; want an *Error wrapping ErrUnsupported", tt.name, err)
			continue
		}
		if e.Path != tt.path {
			t.Errorf("%s: path %q, want %q", tt.name, e.Path, tt.path)
		}
		if Check(tt.in, "params") == nil {
			t.Errorf("%s: Check accepted what FromMap refuses", tt.name)
		}
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
