package canon_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	jsoncanonicalizer "github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/gowebpki/jcs"

	"github.com/zeoruntime/runtimeipc/canon"
)

// addSeeds adds every vector input of testdata and the edge cases to f.
func addSeeds(f *testing.F) {
	for _, c := range edgeCases {
		f.Add([]byte(c.in))
	}
	for _, c := range refusals {
		f.Add([]byte(c.in))
	}
	inputs, _ := filepath.Glob("testdata/cyberphone/input/*.json")
	for _, p := range inputs {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	var file struct {
		Valid []struct {
			Input json.RawMessage
		}
		InvalidJSON []string `json:"invalid_json"`
	}
	if b, err := os.ReadFile("testdata/canonical-vectors.json"); err == nil && json.Unmarshal(b, &file) == nil {
		for _, v := range file.Valid {
			f.Add([]byte(v.Input))
		}
		for _, s := range file.InvalidJSON {
			f.Add([]byte(s))
		}
	}
}

// sameError reports whether two refusals agree on sentinel and offset.
func sameError(a, b error) bool {
	var ea, eb *canon.Error
	if !errors.As(a, &ea) || !errors.As(b, &eb) {
		return false
	}
	return ea.Err == eb.Err && ea.Offset == eb.Offset
}

// FuzzCanonicalize checks gowebpki's fuzz properties on our canonicalizer
// (no panic; output valid UTF-8 and JSON; idempotent) and that the
// one-pass canonicalizer and the Parse path agree on every input, on the
// bytes when both accept and on the sentinel and offset when both refuse.
func FuzzCanonicalize(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := canon.Canonicalize(in)
		v, perr := canon.Parse(in)
		if (err == nil) != (perr == nil) {
			t.Fatalf("Canonicalize error %v, Parse error %v", err, perr)
		}
		if err != nil {
			var e *canon.Error
			if !errors.As(err, &e) || e.Offset < 0 || e.Offset > int64(len(in)) {
				t.Fatalf("refusal %v is not a *canon.Error with an offset inside the input", err)
			}
			if !sameError(err, perr) {
				t.Fatalf("Canonicalize refused with %v, Parse with %v", err, perr)
			}
			return
		}
		if !utf8.Valid(out) {
			t.Fatalf("output is not UTF-8: %q", out)
		}
		if !json.Valid(out) {
			t.Fatalf("output is not JSON: %q", out)
		}
		checkIdempotent(t, out)
		viaValue, err := v.Canonical()
		if err != nil || !bytes.Equal(viaValue, out) {
			t.Fatalf("Parse+Canonical = %q, %v; Canonicalize = %q", viaValue, err, out)
		}
		var anyv any
		if err := canon.Unmarshal(in, &anyv); err != nil {
			t.Fatalf("Unmarshal into any: %v", err)
		}
		if m, err := canon.Marshal(anyv); err != nil || !bytes.Equal(m, out) {
			t.Fatalf("Unmarshal+Marshal = %q, %v; want %q", m, err, out)
		}
	})
}

// checkIdempotent checks that canonical bytes canonicalize to themselves.
// One exception belongs to the protocol: a float of magnitude in
// [2^53, 1e21) is written as digits alone (1e20 becomes
// 100000000000000000000, as upstream writes it), and such a token reads back
// as an unsafe integer. Those outputs are checked with gowebpki instead,
// which has no integer rule.
func checkIdempotent(t *testing.T, out []byte) {
	t.Helper()
	again, err := canon.Canonicalize(out)
	if errors.Is(err, canon.ErrUnsafeInteger) {
		again, err = peer(jcs.Transform, out)
	}
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %q -> %q, %v", out, again, err)
	}
}

// peer runs a peer canonicalizer, turning a panic into a refusal.
func peer(transform func([]byte) ([]byte, error), in []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, errors.New("peer panicked")
		}
	}()
	return transform(bytes.Clone(in))
}

// FuzzDifferential compares Canonicalize with gowebpki/jcs v1.0.2 and the
// reference code of RFC 8785's author. Where all accept (and the input has
// no unsafe integer, which every peer accepts and silently rounds), the
// bytes must be equal. Beyond that, gowebpki v1.0.2 is strict: whatever we
// accept it must accept, and it may accept more only through the rules the
// protocol adds (unsafe integers, the depth and size limits).
func FuzzDifferential(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		ours, err := canon.Canonicalize(in)
		if errors.Is(err, canon.ErrUnsafeInteger) {
			return
		}
		gw, gerr := peer(jcs.Transform, in)
		switch {
		case err == nil && gerr != nil:
			t.Fatalf("we accept %q (-> %q), gowebpki refuses: %v", in, ours, gerr)
		case err != nil && gerr == nil:
			if !errors.Is(err, canon.ErrTooDeep) && !errors.Is(err, canon.ErrTooLarge) {
				t.Fatalf("gowebpki accepts %q (-> %q), we refuse: %v", in, gw, err)
			}
			return
		case err != nil:
			return
		}
		if !bytes.Equal(ours, gw) {
			t.Fatalf("input %q:\n canon    %q\n gowebpki %q", in, ours, gw)
		}
		// cyberphone takes only an object or array at the top, and is lax:
		// compare only when it accepts too.
		if first := bytes.TrimLeft(in, " \t\r\n"); len(first) == 0 || first[0] != '{' && first[0] != '[' {
			return
		}
		if cy, cerr := peer(jsoncanonicalizer.Transform, in); cerr == nil && !bytes.Equal(ours, cy) {
			t.Fatalf("input %q:\n canon      %q\n cyberphone %q", in, ours, cy)
		}
	})
}

// fuzzTarget is a representative wire struct: nested structs and pointers,
// maps, slices, an empty interface, a Value, integers of several widths.
type fuzzTarget struct {
	Base
	ID       string              `json:"id" canon:"optional"`
	Gen      int64               `json:"gen" canon:"optional"`
	Small    int8                `json:"small" canon:"optional"`
	Unsigned uint32              `json:"unsigned" canon:"optional"`
	Ratio    float32             `json:"ratio" canon:"optional"`
	Flag     *bool               `json:"flag" canon:"optional"`
	Tags     []string            `json:"tags,omitempty"`
	Labels   map[string]int      `json:"labels,omitempty"`
	Inner    *Inner              `json:"inner,omitempty"`
	Pair     [2]float64          `json:"pair" canon:"optional"`
	Any      any                 `json:"any" canon:"optional"`
	Val      *canon.Value        `json:"val,omitempty"`
	Raw      json.RawMessage     `json:"raw,omitempty"`
	Deep     map[string][]*Inner `json:"deep,omitempty"`
}

// FuzzUnmarshal decodes arbitrary bytes into fuzzTarget: no panic; only
// strict JSON is decoded; a decoded value marshals, and decoding that
// again reaches a fixed point.
func FuzzUnmarshal(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"id":"w-1","gen":9007199254740991,"small":-128,"unsigned":4294967295,"ratio":0.5,"flag":true,` +
		`"tags":["a"],"labels":{"b":1},"inner":{"n":1,"s":"x"},"pair":[1,2.5],"any":{"x":[1,1.5,null]},` +
		`"val":{"k":"v"},"raw":[1,{"b":2,"a":1}],"deep":{"k":[null,{"n":2}]}}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		var v fuzzTarget
		if err := canon.Unmarshal(in, &v); err != nil {
			var e *canon.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not a *canon.Error", err)
			}
			return
		}
		if _, err := canon.Canonicalize(in); err != nil {
			t.Fatalf("Unmarshal accepted what Canonicalize refuses: %v", err)
		}
		out, err := canon.Marshal(v)
		if err != nil {
			if errors.Is(err, canon.ErrUnsafeInteger) && len(v.Raw) > 0 {
				return // the documented caveat, through json.RawMessage
			}
			t.Fatalf("Marshal of a decoded value: %v", err)
		}
		var again fuzzTarget
		if err := canon.Unmarshal(out, &again); err != nil {
			if errors.Is(err, canon.ErrUnsafeInteger) {
				return // a float ≥ 2^53 written as digits (the caveat)
			}
			t.Fatalf("Unmarshal(Marshal(v)) = %v; Marshal gave %s", err, out)
		}
		out2, err := canon.Marshal(again)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("no fixed point: %s then %s (%v)", out, out2, err)
		}
	})
}
