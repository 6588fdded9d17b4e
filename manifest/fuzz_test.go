package manifest_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testvectors"
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
// same digest).
func FuzzPrepareRequest(f *testing.F) {
	f.Add([]byte(nestedSchema), []byte(`{"outer":{"inner":{}}}`))
	f.Add([]byte(`{"properties":{"organization_id":{"default":"org-a","type":"string"},"text":{"type":"string"}},"required":["text"],"type":"object"}`), []byte(`{"text":"hello"}`))
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{}`))
	f.Add([]byte(`{"$ref":"http://127.0.0.1:1/x"}`), []byte(`{}`))
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
		if p2.RequestDigest != p.RequestDigest {
			t.Fatalf("not idempotent: %s vs %s", p.RequestDigest, p2.RequestDigest)
		}
	})
}
