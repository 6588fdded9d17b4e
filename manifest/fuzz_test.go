package manifest_test

import (
	"encoding/json"
	"errors"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func seedBindings(f *testing.F) {
	r := loadRealHost(f)
	f.Add([]byte(r.FD3))
	f.Add(build(f, []mutation{{ptr: "/manifests/0/id", val: "example.echo\n@1.0.0"}, {ptr: "/manifests/0/tags", val: arr("b", "a", "b")}}, false))
	f.Add(build(f, []mutation{{ptr: "/manifests/0/request_schema/$ref", val: "#/$defs/x"}}, false))
	f.Add(build(f, []mutation{{ptr: "/protocol_version", val: floatOne}}, false))
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"manifests":[{"id":"a.b@1.0.0"}]}`))
	f.Add(build(f, []mutation{{ptr: "/manifests/0/metadata", val: map[string]any{"limit": 1e16}}}, false))
}

// FuzzDecodeBinding: decoding and validating arbitrary bytes never panics;
// an accepted binding re-encodes to a document that decodes to the same
// value and validates the same way (encoding is a fixed point).
func FuzzDecodeBinding(f *testing.F) {
	seedBindings(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := manifest.DecodeBinding(data)
		if err != nil {
			return
		}
		verr := manifest.ValidateBinding(b)
		out, err := canon.Marshal(b)
		if err != nil {
			t.Fatalf("accepted binding does not encode: %v", err)
		}
		b2, err := manifest.DecodeBinding(out)
		if errors.Is(err, canon.ErrUnsafeInteger) {
			// RFC 8785 writes an integral float of 2^53 or more as digits,
			// which no strict parser (the host's included) reads back: the
			// canonical form is for hashing, not a fixed point for those.
			return
		}
		if err != nil {
			t.Fatalf("re-encoded binding refused: %v\n%s", err, out)
		}
		// Compare canonical bytes: a float literal 1.0 reads back as the
		// integer 1, which is the same JSON number.
		if out2, _ := canon.Marshal(b2); string(out2) != string(out) || b2.ManifestDigest != b.ManifestDigest {
			t.Fatalf("round trip differs:\n%s\n%s", out, out2)
		}
		if (manifest.ValidateBinding(b2) == nil) != (verr == nil) {
			t.Fatalf("validation verdict changed after round trip")
		}
		var b3 manifest.ProviderBinding
		if err := json.Unmarshal(out, &b3); err != nil {
			t.Fatalf("encoding/json refused what canon accepted: %v", err)
		}
	})
}

// FuzzDecodeManifest: arbitrary bytes never panic; an accepted manifest is
// projected and digested without error and its encoding is a fixed point.
func FuzzDecodeManifest(f *testing.F) {
	v := testvectors.Inline[inlineVectors](f)
	var raw []json.RawMessage
	if err := json.Unmarshal(v.Derived.Normalization.ManifestsAsSent, &raw); err != nil {
		f.Fatal(err)
	}
	for _, m := range raw {
		f.Add([]byte(m))
	}
	f.Add([]byte(`{"id":"ns.sub.cap@1.2.3","description":"","request_schema":{"maximum":1e16},"response_schema":{},"examples":[],"error_codes":[],"effects":{"kinds":["read"]},"requirements":{},"tags":[],"metadata":{"n":1e16},"deprecation":{}}`))
	f.Add([]byte(`{"id":"ns.sub.cap@1.2.3","description":"","request_schema":{},"response_schema":{},"examples":[],"error_codes":["a","a"],"effects":{"kinds":["read"]},"requirements":{},"tags":[],"metadata":{},"deprecation":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.DecodeManifest(data)
		if err != nil {
			return
		}
		if err := manifest.ValidateManifest(m); err != nil {
			t.Fatalf("decoded manifest fails ValidateManifest: %v", err)
		}
		if _, err := manifest.InventoryDigest([]manifest.CapabilityManifest{m}); err != nil {
			t.Fatalf("no digest: %v", err)
		}
		out, err := canon.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if slow, err := manifest.MarshalReflect(m); err != nil || string(slow) != string(out) {
			t.Fatalf("fast and reflection encodings differ (%v):\n%s\n%s", err, out, slow)
		}
		m2, err := manifest.DecodeManifest(out)
		if errors.Is(err, canon.ErrUnsafeInteger) {
			return // integral floats ≥ 2^53: see FuzzDecodeBinding
		}
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v", err)
		}
		if out2, _ := canon.Marshal(m2); string(out2) != string(out) {
			t.Fatalf("round trip differs:\n%s\n%s", out, out2)
		}
		if diff := cmp.Diff(m.ID, m2.ID); diff != "" {
			t.Fatalf("id differs:\n%s", diff)
		}
	})
}

// FuzzPrepareRequest: arbitrary schemas and arguments never panic, and a
// prepared request is idempotent (preparing its arguments again gives the
// same arguments, up to the order of arrays: see samePrepared).
func FuzzPrepareRequest(f *testing.F) {
	f.Add([]byte(nestedSchema), []byte(`{"outer":{"inner":{}}}`))
	f.Add([]byte(`{"properties":{"organization_id":{"default":"org-a","type":"string"},"text":{"type":"string"}},"required":["text"],"type":"object"}`), []byte(`{"text":"hello"}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{}`))
	f.Add([]byte(`{"$ref":"http://127.0.0.1:1/x"}`), []byte(`{}`))
	f.Add([]byte(`{"$defs":{"A":{"anyOf":[{"$ref":"#/$defs/B"},{"type":"object"}]},"B":{"anyOf":[{"$ref":"#/$defs/A"},{"type":"null"}]}},"$ref":"#/$defs/A"}`), []byte(`{}`))
	f.Add([]byte(`{"properties":{"at":{"format":"date-time","type":"string"},"u":{"format":"uri","type":"string"},"s":{"items":{"type":"integer"},"type":"array","uniqueItems":true},"d":{"anyOf":[{"type":"number"},{"pattern":"^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$","type":"string"}]}},"type":"object"}`),
		[]byte(`{"at":"2026-09-05T08:00:00+00:00","u":"HTTP://A","s":[10,2,18,26,34,1],"d":1e16}`))
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		var s map[string]any
		if canon.Unmarshal(schema, &s) != nil {
			return
		}
		m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "f", Name: "z", Version: "1.0.0"}, RequestSchema: s}
		var v manifest.Validator
		p, err := v.PrepareRequestJSON(m, args)
		if err != nil {
			return
		}
		p2, err := v.PrepareRequest(m, p.Arguments)
		if err != nil {
			// Materialized defaults are not validated (as upstream); a
			// schema whose default breaks its own rules may then refuse.
			return
		}
		samePrepared(t, p, p2)
	})
}

// samePrepared fails unless preparing p's arguments gave p again, up to
// the order of arrays: pydantic writes a set in CPython's hash-table order,
// which depends on the order the elements arrived in, so a set can come
// out of a second preparation reordered, as it comes out of pydantic.
func samePrepared(t *testing.T, p, p2 manifest.Prepared) {
	t.Helper()
	if p2.RequestDigest == p.RequestDigest {
		return
	}
	a, _ := canon.Marshal(sortArrays(p.Arguments))
	b, _ := canon.Marshal(sortArrays(p2.Arguments))
	if string(a) != string(b) {
		t.Fatalf("not idempotent:\n%s\n%s", a, b)
	}
}

// sortArrays returns a copy of a JSON value with every array sorted by
// the canonical bytes of its elements.
func sortArrays(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = sortArrays(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		keys := make([]string, len(x))
		for i, e := range x {
			out[i] = sortArrays(e)
			b, _ := canon.Marshal(out[i])
			keys[i] = string(b)
		}
		idx := make([]int, len(x))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(i, j int) bool { return keys[idx[i]] < keys[idx[j]] })
		sorted := make([]any, len(x))
		for i, j := range idx {
			sorted[i] = out[j]
		}
		return sorted
	}
	return v
}

// pydanticSchemas are the claimed models' schemas as pydantic 2.13.4
// exports them (testdata/pydantic/schemas.json, which
// TestPydanticSchemasCommitted keeps equal to the oracle's), sorted by
// model name.
func pydanticSchemas(tb testing.TB) (names []string, schemas []map[string]any) {
	tb.Helper()
	raw, err := os.ReadFile("testdata/pydantic/schemas.json")
	if err != nil {
		tb.Fatal(err)
	}
	var all map[string]map[string]any
	if err := canon.Unmarshal(raw, &all); err != nil {
		tb.Fatal(err)
	}
	for _, name := range slices.Sorted(maps.Keys(all)) {
		names = append(names, name)
		schemas = append(schemas, all[name])
	}
	return names, schemas
}

// FuzzPydanticPrepare: arguments for the pydantic models of the
// differential test, seeded with the arguments it generates. PrepareRequest
// never panics, refuses only with *ValidationError, returns arguments with
// a canonical form, and is idempotent (samePrepared); a second preparation
// may only refuse where pydantic refuses its own output (a Decimal it
// wrote in exponent form fails the schema's pattern).
func FuzzPydanticPrepare(f *testing.F) {
	names, schemas := pydanticSchemas(f)
	for i, s := range schemas {
		g := &gen{r: rand.New(rand.NewPCG(17, uint64(i))), root: s}
		for range 40 {
			f.Add(uint8(i), []byte(g.value(s, 4)))
		}
	}
	manifests := make([]manifest.CapabilityManifest, len(schemas))
	for i := range schemas {
		manifests[i] = pyManifest(names[i], schemas[i])
	}
	var v manifest.Validator
	f.Fuzz(func(t *testing.T, model uint8, args []byte) {
		m := manifests[int(model)%len(manifests)]
		p, err := v.PrepareRequestJSON(m, args)
		if err != nil {
			var ve *manifest.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, manifest.ErrInvalidArguments) {
				t.Fatalf("refusal is not an ErrInvalidArguments *ValidationError: %v", err)
			}
			return
		}
		if _, err := canon.Marshal(p.Arguments); err != nil {
			t.Fatalf("prepared arguments have no canonical form: %v", err)
		}
		p2, err := v.PrepareRequest(m, p.Arguments)
		if err != nil {
			var ve *manifest.ValidationError
			if errors.As(err, &ve) && ve.Rule == "arguments.schema:pattern" {
				if d, _ := manifest.LookupPointer(p.Arguments, ve.Pointer).(string); strings.Contains(d, "E") {
					return
				}
			}
			t.Fatalf("prepared arguments refused: %v", err)
		}
		samePrepared(t, p, p2)
	})
}
