package canon_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
)

type Inner struct {
	N int    `json:"n"`
	S string `json:"s,omitempty"`
}

type Base struct {
	ID string `json:"id"`
}

type Extra struct {
	Note string `json:"note" canon:"optional"`
}

type Wire struct {
	Base                        // flattened
	*Extra                      // flattened through a pointer
	Count    int64              `json:"count"`
	Big      uint64             `json:"big"`
	Ratio    float64            `json:"ratio"`
	Flag     bool               `json:"flag"`
	Name     string             `json:"name"`
	Tags     []string           `json:"tags"`
	Labels   map[string]string  `json:"labels"`
	Inner    Inner              `json:"inner"`
	PtrInner *Inner             `json:"ptr_inner"`
	PtrPtr   **int              `json:"ptr_ptr"`
	Any      any                `json:"any"`
	Raw      json.RawMessage    `json:"raw"`
	Num      json.Number        `json:"num"`
	Val      canon.Value        `json:"val"`
	Fixed    [2]int             `json:"fixed"`
	Optional *string            `json:"optional,omitempty"`
	Zero     int                `json:"zero,omitzero"`
	Nested   map[string][]Inner `json:"nested"`
	Ignored  string             `json:"-"`
	//lint:ignore U1000 an unexported field, there for Marshal to ignore
	unexposed int
	Renamed   map[keyName]json.Number `json:"renamed"`
}

type keyName string

const wireJSON = `{
  "id": "w-1", "note": "hi",
  "count": 9007199254740991, "big": 9007199254740991, "ratio": 1.50, "flag": true,
  "name": "caf\u00e9", "tags": ["b", "a"], "labels": {"z": "1", "a": "2"},
  "inner": {"n": -0}, "ptr_inner": null, "ptr_ptr": 7,
  "any": {"i": 1, "f": 1.0, "l": [null, true, "x", {"k": 1e20}]},
  "raw": {"b": [1.0, 2], "a": "\u0041"}, "num": 1E+2,
  "val": [3, {"y": 1, "x": 2}], "fixed": [1, 2],
  "nested": {"k": [{"n": 1, "s": "s"}]},
  "renamed": {"b": 2.50, "a": 1}
}`

const wireCanonical = `{"any":{"f":1,"i":1,"l":[null,true,"x",{"k":100000000000000000000}]},` +
	`"big":9007199254740991,"count":9007199254740991,"fixed":[1,2],"flag":true,"id":"w-1",` +
	`"inner":{"n":0},"labels":{"a":"2","z":"1"},"name":"café","nested":{"k":[{"n":1,"s":"s"}]},` +
	`"note":"hi","num":100,"ptr_inner":null,"ptr_ptr":7,"ratio":1.5,"raw":{"a":"A","b":[1,2]},` +
	`"renamed":{"a":1,"b":2.5},"tags":["b","a"],"val":[3,{"x":2,"y":1}]}`

func TestUnmarshalMarshal(t *testing.T) {
	var w Wire
	if err := canon.Unmarshal([]byte(wireJSON), &w); err != nil {
		t.Fatal(err)
	}
	if w.Count != canon.MaxSafeInteger || w.Big != canon.MaxSafeInteger {
		t.Errorf("integers not exact: %d %d", w.Count, w.Big)
	}
	if w.Extra == nil || w.Note != "hi" || w.ID != "w-1" {
		t.Errorf("embedded fields: %+v %+v", w.Base, w.Extra)
	}
	if w.PtrPtr == nil || *w.PtrPtr == nil || **w.PtrPtr != 7 || w.PtrInner != nil {
		t.Errorf("pointers: %v %v", w.PtrPtr, w.PtrInner)
	}
	wantAny := map[string]any{"i": int64(1), "f": float64(1), "l": []any{nil, true, "x", map[string]any{"k": 1e20}}}
	if diff := cmp.Diff(wantAny, w.Any); diff != "" {
		t.Errorf("any (-want +got):\n%s", diff)
	}
	if string(w.Raw) != `{"a":"A","b":[1,2]}` || w.Num != "100" {
		t.Errorf("raw %s, num %s", w.Raw, w.Num)
	}
	if w.Val.Kind != canon.Array || len(w.Val.Elems) != 2 {
		t.Errorf("val: %+v", w.Val)
	}
	got, err := canon.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wireCanonical {
		t.Errorf("Marshal:\n got %s\nwant %s", got, wireCanonical)
	}
	// Unmarshal then Marshal gives the canonical bytes of the input.
	want, err := canon.Canonicalize([]byte(wireJSON))
	if err != nil || string(want) != wireCanonical {
		t.Errorf("Canonicalize = %s, %v", want, err)
	}
	d, err := canon.DigestOf(w)
	if err != nil || d != canon.Sum([]byte(wireCanonical)) {
		t.Errorf("DigestOf = %s, %v", d, err)
	}
	// Plain encoding/json decodes the same wire bytes into the same struct
	// (the tags are encoding/json's).
	type stdWire struct {
		Base
		*Extra
		Count int64             `json:"count"`
		Name  string            `json:"name"`
		Inner Inner             `json:"inner"`
		Raw   json.RawMessage   `json:"raw"`
		Num   json.Number       `json:"num"`
		Label map[string]string `json:"labels"`
	}
	var std stdWire
	if err := json.Unmarshal([]byte(wireJSON), &std); err != nil {
		t.Fatal(err)
	}
	if std.Count != w.Count || std.Note != w.Note || std.Name != w.Name || std.ID != w.ID || std.Label["z"] != "1" {
		t.Errorf("encoding/json decoded %+v", std)
	}
}

func TestUnmarshalRefusals(t *testing.T) {
	type Req struct {
		A int     `json:"a"`
		B *string `json:"b"`
		C string  `json:"c,omitempty"`
		D []int   `json:"d" canon:"optional"`
		F float64 `json:"f,omitzero"`
		U uint8   `json:"u,omitempty"`
	}
	cases := []struct {
		name, in string
		err      error
		ptr      string
		off      int64
	}{
		{"missing required", `{"b":null}`, canon.ErrMissingField, "/a", 0},
		{"missing nullable", `{"a":1}`, canon.ErrMissingField, "/b", 0},
		{"unknown field", `{"a":1,"b":null,"x":1}`, canon.ErrUnknownField, "/x", 20},
		{"case differs", `{"A":1,"b":null}`, canon.ErrUnknownField, "/A", 5},
		{"float into int", `{"a":1.0,"b":null}`, canon.ErrType, "/a", 5},
		{"bool into int", `{"a":true,"b":null}`, canon.ErrType, "/a", 5},
		{"string into int", `{"a":"1","b":null}`, canon.ErrType, "/a", 5},
		{"null into int", `{"a":null,"b":null}`, canon.ErrType, "/a", 5},
		{"int into string ptr", `{"a":1,"b":2}`, canon.ErrType, "/b", 11},
		{"string into slice", `{"a":1,"b":null,"d":"x"}`, canon.ErrType, "/d", 20},
		{"element type", `{"a":1,"b":null,"d":[1,"2"]}`, canon.ErrType, "/d/1", 23},
		{"uint8 overflow", `{"a":1,"b":null,"u":256}`, canon.ErrType, "/u", 20},
		{"negative uint", `{"a":1,"b":null,"u":-1}`, canon.ErrType, "/u", 20},
		{"string into float", `{"a":1,"b":null,"f":"1"}`, canon.ErrType, "/f", 20},
		{"array into object", `[]`, canon.ErrType, "", 0},
		{"unsafe integer before decoding", `{"a":9007199254740992,"b":null}`, canon.ErrUnsafeInteger, "", 5},
		{"duplicate before decoding", `{"a":1,"a":2,"b":null}`, canon.ErrDuplicateKey, "", 7},
	}
	for _, c := range cases {
		var r Req
		err := canon.Unmarshal([]byte(c.in), &r)
		var e *canon.Error
		if !errors.Is(err, c.err) || !errors.As(err, &e) || e.Pointer != c.ptr || e.Offset != c.off {
			t.Errorf("%s: Unmarshal(%s) = %v (%#v); want %v at %q offset %d", c.name, c.in, err, e, c.err, c.ptr, c.off)
		}
	}
	var r Req
	if err := canon.Unmarshal([]byte(`{"a":-5,"b":"x","u":255,"f":2}`), &r); err != nil || r.A != -5 || *r.B != "x" || r.U != 255 || r.F != 2 || r.D != nil {
		t.Errorf("valid: %+v, %v", r, err)
	}
	for _, target := range []any{nil, r, (*Req)(nil), new(chan int), new(map[int]string), new(func())} {
		if err := canon.Unmarshal([]byte(`{}`), target); !errors.Is(err, canon.ErrUnsupportedType) && !errors.Is(err, canon.ErrType) {
			t.Errorf("Unmarshal into %T: %v, want ErrUnsupportedType", target, err)
		}
	}
}

// fenced shows the Unmarshaler hook: it accepts an integer or its decimal
// string and normalizes to the integer.
type fenced int64

func (f *fenced) UnmarshalCanon(v *canon.Value) error {
	switch v.Kind {
	case canon.Integer:
		*f = fenced(v.Int)
		return nil
	case canon.String:
		if v.Str == "one" {
			*f = 1
			return nil
		}
	}
	return &canon.Error{Err: canon.ErrType, Offset: int64(v.Offset), Detail: "want an integer or \"one\""}
}

func TestUnmarshaler(t *testing.T) {
	var got struct {
		A fenced   `json:"a"`
		B []fenced `json:"b"`
	}
	if err := canon.Unmarshal([]byte(`{"a":"one","b":[2,"one"]}`), &got); err != nil || got.A != 1 || len(got.B) != 2 || got.B[0] != 2 || got.B[1] != 1 {
		t.Errorf("got %+v, %v", got, err)
	}
	err := canon.Unmarshal([]byte(`{"a":true,"b":[]}`), &got)
	if !errors.Is(err, canon.ErrType) {
		t.Errorf("Unmarshaler error: %v", err)
	}
}

func TestMarshalRefusals(t *testing.T) {
	bad := "a\xffb"
	nan := math.NaN()
	cases := []struct {
		name string
		v    any
		err  error
		ptr  string
	}{
		{"int64 2^53", int64(1 << 53), canon.ErrUnsafeInteger, ""},
		{"negative 2^53", struct {
			N int64 `json:"n"`
		}{-1 << 53}, canon.ErrUnsafeInteger, "/n"},
		{"uint64 max", []uint64{1, math.MaxUint64}, canon.ErrUnsafeInteger, "/1"},
		{"NaN", map[string]any{"x": []any{nan}}, canon.ErrNonFinite, "/x/0"},
		{"+Inf", math.Inf(1), canon.ErrNonFinite, ""},
		{"float32 Inf", float32(math.Inf(-1)), canon.ErrNonFinite, ""},
		{"invalid UTF-8 string", []string{"ok", bad}, canon.ErrInvalidUTF8, "/1"},
		{"invalid UTF-8 key", map[string]int{bad: 1}, canon.ErrInvalidUTF8, ""},
		{"encoded surrogate", "\xed\xa0\x80", canon.ErrInvalidUTF8, ""},
		{"channel", make(chan int), canon.ErrUnsupportedType, ""},
		{"func", func() {}, canon.ErrUnsupportedType, ""},
		{"complex", complex(1, 2), canon.ErrUnsupportedType, ""},
		{"int map key", map[int]string{1: "x"}, canon.ErrUnsupportedType, ""},
		{"bad RawMessage", json.RawMessage(`{"a":1,"a":2}`), canon.ErrDuplicateKey, ""},
		{"unsafe json.Number", struct {
			N json.Number `json:"n"`
		}{"9007199254740992"}, canon.ErrUnsafeInteger, "/n"},
		{"Value with unsafe int", canon.Value{Kind: canon.Integer, Int: 1 << 60}, canon.ErrUnsafeInteger, ""},
	}
	for _, c := range cases {
		_, err := canon.Marshal(c.v)
		var e *canon.Error
		if !errors.Is(err, c.err) || !errors.As(err, &e) || e.Pointer != c.ptr {
			t.Errorf("%s: Marshal = %v; want %v at %q", c.name, err, c.err, c.ptr)
		}
		if d, err := canon.DigestOf(c.v); err == nil || d != "" {
			t.Errorf("%s: DigestOf = %q, %v; want an error", c.name, d, err)
		}
	}
}

func TestMarshalValues(t *testing.T) {
	one := 1
	p := &one
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, "null"},
		{"nil slice is []", []int(nil), "[]"},
		{"nil map is {}", map[string]int(nil), "{}"},
		{"nil pointer", (*int)(nil), "null"},
		{"pointer to pointer", &p, "1"},
		{"max safe", int64(canon.MaxSafeInteger), "9007199254740991"},
		{"min safe", int64(-canon.MaxSafeInteger), "-9007199254740991"},
		{"negative zero", math.Copysign(0, -1), "0"},
		{"float32", float32(0.1), "0.10000000149011612"},
		{"1e21", 1e21, "1e+21"},
		{"5e-324", 5e-324, "5e-324"},
		{"string escapes", "\"\\/\b\f\n\r\t\x00\x1f\x7f\u2028", `"\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f\u2028\""},
		{"map key order UTF-16", map[string]int{"\ue000": 1, "\U00010000": 2, "a": 3}, "{\"a\":3,\"\U00010000\":2,\"\ue000\":1}"},
		{"named key type", map[keyName]bool{"b": true, "a": false}, `{"a":false,"b":true}`},
		{"omitempty and omitzero", struct {
			A string `json:"a,omitempty"`
			B int    `json:"b,omitzero"`
			C []int  `json:"c,omitempty"`
			D *int   `json:"d,omitempty"`
			E *int   `json:"e"`
		}{}, `{"e":null}`},
		{"field order is key order", struct {
			Z int `json:"z"`
			A int `json:"a"`
			M int
		}{1, 2, 3}, `{"M":3,"a":2,"z":1}`},
		{"nil embedded pointer omits its fields", struct {
			*Extra
			Base
		}{Base: Base{ID: "x"}}, `{"id":"x"}`},
		{"json.Number", json.Number("1.50"), "1.5"},
		{"RawMessage", json.RawMessage(" { \"b\" : 1 , \"a\" : [ ] } "), `{"a":[],"b":1}`},
		{"array", [3]bool{true}, "[true,false,false]"},
		{"Value", canon.Value{Kind: canon.Object, Members: []canon.Member{{Key: "b", Value: canon.Value{Kind: canon.Null}}, {Key: "a", Value: canon.Value{Kind: canon.Float, Float: 0.5}}}}, `{"a":0.5,"b":null}`},
	}
	for _, c := range cases {
		got, err := canon.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("%s: Marshal = %s, %v; want %s", c.name, got, err, c.want)
		}
	}
}

// TestUnmarshalRoundTrip decodes every canonical vector and real-host frame
// into a Value, an empty interface and back, and expects the canonical
// bytes again.
func TestUnmarshalRoundTrip(t *testing.T) {
	docs := [][]byte{[]byte(wireJSON)}
	for _, c := range edgeCases {
		docs = append(docs, []byte(c.in))
	}
	for _, tr := range realHostTranscripts(t) {
		docs = append(docs, []byte(tr.FD3), []byte(tr.Stdin))
		for _, x := range tr.Exchanges {
			docs = append(docs, []byte(x.Request.Body), []byte(x.Reply.Body))
		}
	}
	for _, doc := range docs {
		if len(doc) == 0 {
			continue
		}
		want, err := canon.Canonicalize(doc)
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		var a any
		var v canon.Value
		var raw json.RawMessage
		for _, target := range []any{&a, &v, &raw} {
			if err := canon.Unmarshal(doc, target); err != nil {
				t.Fatalf("Unmarshal(%s) into %T: %v", doc, target, err)
			}
			got, err := canon.Marshal(target)
			if target == &raw && errors.Is(err, canon.ErrUnsafeInteger) {
				// The documented caveat: a float in [2^53, 1e21) has
				// canonical bytes that read back as an unsafe integer,
				// so bytes (json.RawMessage) lose what Value keeps.
				if _, cerr := canon.Canonicalize(want); !errors.Is(cerr, canon.ErrUnsafeInteger) {
					t.Errorf("RawMessage of %s refused (%v) though its canonical form reads back", doc, err)
				}
				continue
			}
			if err != nil || string(got) != string(want) {
				t.Errorf("Unmarshal+Marshal via %T of %s = %s, %v; want %s", target, strings.TrimSpace(string(doc)), got, err, want)
			}
		}
	}
}
