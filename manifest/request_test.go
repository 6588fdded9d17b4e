package manifest_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func TestPrepareEchoRequest(t *testing.T) {
	v := testvectors.Inline[inlineVectors](t).Derived.WorkedExample
	echo := echoManifests(t)[0]
	var val manifest.Validator
	for _, raw := range []map[string]any{
		{"text": "hello"},
		{"text": "hello", "organization_id": "org-a"}, // already normalized: idempotent
	} {
		p, err := val.PrepareRequest(echo, raw)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"organization_id": "org-a", "text": "hello"}
		if diff := cmp.Diff(want, p.Arguments); diff != "" {
			t.Errorf("arguments (-want +got):\n%s", diff)
		}
		if p.CapabilityID != "example.echo@1.0.0" {
			t.Errorf("capability id %q", p.CapabilityID)
		}
		if p.RequestDigest != v.RequestDigest {
			t.Errorf("digest %s, want %s", p.RequestDigest, v.RequestDigest)
		}
		pre, _ := canon.Marshal(map[string]any{"capability_id": p.CapabilityID, "arguments": p.Arguments})
		if string(pre) != v.RequestPreimage {
			t.Errorf("preimage %s, want %s", pre, v.RequestPreimage)
		}
	}
	if n := val.Len(); n != 1 {
		t.Errorf("cache holds %d schemas, want 1", n)
	}
	p, err := val.PrepareRequestJSON(echo, []byte(`{"text":"hello"}`))
	if err != nil || p.RequestDigest != v.RequestDigest {
		t.Errorf("PrepareRequestJSON = %v, %v", p.RequestDigest, err)
	}
}

func TestPrepareCatalogueRequest(t *testing.T) {
	v := testvectors.Inline[inlineVectors](t).Derived.Catalogue
	// demo.greet@1.0.0: a pydantic model with name: str = "World".
	m := manifest.CapabilityManifest{
		SchemaVersion: manifest.SchemaVersion,
		ID:            manifest.CapabilityID{Namespace: "demo", Name: "greet", Version: "1.0.0"},
		RequestSchema: map[string]any{"type": "object", "title": "GreetRequest",
			"properties": map[string]any{"name": map[string]any{"default": "World", "title": "Name", "type": "string"}}},
		Effects: manifest.CapabilityEffects{Kinds: []manifest.EffectKind{manifest.EffectRead}, Concurrency: manifest.ParallelSafe},
	}
	p, err := manifest.PrepareRequest(m, v.RawArguments)
	if err != nil {
		t.Fatal(err)
	}
	if p.RequestDigest != v.RequestDigest {
		t.Errorf("digest %s, want %s", p.RequestDigest, v.RequestDigest)
	}
	pre, _ := canon.Marshal(map[string]any{"capability_id": p.CapabilityID, "arguments": p.Arguments})
	if string(pre) != v.PreimageCanonical {
		t.Errorf("preimage %s, want %s", pre, v.PreimageCanonical)
	}
}

// nestedSchema is what pydantic emits for nested models, an optional nested
// model, a list of models and a dict of models.
const nestedSchema = `{
 "$defs": {
  "Inner": {"properties": {"depth": {"default": 3, "type": "integer"}, "label": {"default": {"a": [1, 2]}, "type": "object"}, "tag": {"type": "string"}}, "title": "Inner", "type": "object"},
  "Outer": {"properties": {"inner": {"$ref": "#/$defs/Inner"}, "mode": {"default": "fast", "type": "string"}}, "title": "Outer", "type": "object"}
 },
 "properties": {
  "outer": {"$ref": "#/$defs/Outer"},
  "maybe": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "default": null},
  "many": {"items": {"$ref": "#/$defs/Inner"}, "type": "array", "default": []},
  "byname": {"additionalProperties": {"$ref": "#/$defs/Inner"}, "type": "object"},
  "legacy": {"allOf": [{"$ref": "#/$defs/Inner"}]},
  "count": {"default": 1, "type": "integer", "minimum": 0},
  "self": {"$ref": "#"}
 },
 "required": ["outer"],
 "title": "Req", "type": "object"
}`

func TestPrepareNestedDefaults(t *testing.T) {
	var schema map[string]any
	if err := canon.Unmarshal([]byte(nestedSchema), &schema); err != nil {
		t.Fatal(err)
	}
	m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "t", Name: "n", Version: "1.0.0"}, RequestSchema: schema}
	var v manifest.Validator
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"top and nested", `{"outer":{"inner":{}}}`,
			`{"count":1,"many":[],"maybe":null,"outer":{"inner":{"depth":3,"label":{"a":[1,2]}},"mode":"fast"}}`},
		{"given values kept", `{"outer":{"mode":"slow","inner":{"depth":9,"tag":"x"}},"count":0}`,
			`{"count":0,"many":[],"maybe":null,"outer":{"inner":{"depth":9,"label":{"a":[1,2]},"tag":"x"},"mode":"slow"}}`},
		{"anyOf branch, items, additionalProperties, allOf", `{"outer":{},"maybe":{},"many":[{},{"depth":1}],"byname":{"k":{}},"legacy":{}}`,
			`{"byname":{"k":{"depth":3,"label":{"a":[1,2]}}},"count":1,"legacy":{"depth":3,"label":{"a":[1,2]}},"many":[{"depth":3,"label":{"a":[1,2]}},{"depth":1,"label":{"a":[1,2]}}],"maybe":{"depth":3,"label":{"a":[1,2]}},"outer":{"mode":"fast"}}`},
		{"recursive ref", `{"outer":{},"self":{"outer":{}}}`,
			`{"count":1,"many":[],"maybe":null,"outer":{"mode":"fast"},"self":{"count":1,"many":[],"maybe":null,"outer":{"mode":"fast"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := v.PrepareRequestJSON(m, []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := canon.Marshal(p.Arguments)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			// Idempotent: preparing the normalized arguments changes nothing.
			p2, err := v.PrepareRequest(m, p.Arguments)
			if err != nil || p2.RequestDigest != p.RequestDigest {
				t.Errorf("not idempotent: %v %v", p2.RequestDigest, err)
			}
		})
	}
	// Defaults are deep copies: mutating one result never leaks into the next.
	p1, _ := v.PrepareRequestJSON(m, []byte(`{"outer":{"inner":{}}}`))
	p1.Arguments["outer"].(map[string]any)["inner"].(map[string]any)["label"].(map[string]any)["a"] = "mutated"
	p2, _ := v.PrepareRequestJSON(m, []byte(`{"outer":{"inner":{}}}`))
	got, _ := canon.Marshal(p2.Arguments)
	if want := `{"count":1,"many":[],"maybe":null,"outer":{"inner":{"depth":3,"label":{"a":[1,2]}},"mode":"fast"}}`; string(got) != want {
		t.Errorf("default leaked a mutation: %s", got)
	}
}

func TestPrepareRefusals(t *testing.T) {
	echo := echoManifests(t)[0]
	var v manifest.Validator
	tests := []struct {
		name    string
		in      string
		ptr     string
		wantErr error
	}{
		{"missing required", `{}`, "", manifest.ErrInvalidArguments},
		{"wrong type", `{"text":5}`, "/text", manifest.ErrInvalidArguments},
		{"wrong nested type", `{"text":"x","organization_id":["a"]}`, "/organization_id", manifest.ErrInvalidArguments},
		{"not an object", `["text"]`, "", manifest.ErrInvalidArguments},
		{"duplicate key", `{"text":"a","text":"b"}`, "", manifest.ErrInvalidArguments},
		{"unsafe integer", `{"text":"a","n":9007199254740992}`, "", manifest.ErrInvalidArguments},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.PrepareRequestJSON(echo, []byte(tt.in))
			assertErr(t, err, tt.wantErr, "example.echo@1.0.0", tt.ptr)
		})
	}
	if _, err := v.PrepareRequest(echo, map[string]any{"text": func() {}}); !errors.Is(err, manifest.ErrInvalidArguments) {
		t.Errorf("func argument: %v", err)
	}
}

// assertErr checks the sentinel, the capability id and the JSON pointer of
// a *ValidationError.
func assertErr(t *testing.T, err, sentinel error, capID, ptr string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %v", err, sentinel)
	}
	var ve *manifest.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError", err)
	}
	if ve.CapabilityID != capID || ve.Pointer != ptr {
		t.Errorf("error names capability %q at %q, want %q at %q (%v)", ve.CapabilityID, ve.Pointer, capID, ptr, err)
	}
}

func TestPreparer(t *testing.T) {
	want := testvectors.Inline[inlineVectors](t).Derived.WorkedExample.RequestDigest
	echo := echoManifests(t)[0]
	var v manifest.Validator
	p, err := v.Preparer(echo)
	if err != nil {
		t.Fatal(err)
	}
	// The Preparer keeps its own copy of the schema.
	delete(echo.RequestSchema, "properties")
	got, err := p.Prepare(map[string]any{"text": "hello"})
	if err != nil || got.RequestDigest != want {
		t.Errorf("Prepare = %s, %v; want %s", got.RequestDigest, err, want)
	}
	_, err = p.Prepare(map[string]any{"text": 1})
	assertErr(t, err, manifest.ErrInvalidArguments, "example.echo@1.0.0", "/text")
	var ve *manifest.ValidationError
	if errors.As(err, &ve) && ve.Rule != "arguments.schema:type" {
		t.Errorf("rule %q", ve.Rule)
	}
	_, err = p.Prepare(map[string]any{})
	if errors.As(err, &ve) && ve.Rule != "arguments.schema:required" {
		t.Errorf("rule %q (%v)", ve.Rule, err)
	}
	_, err = p.Prepare(map[string]any{"text": "x", "n": int64(1) << 60})
	assertErr(t, err, manifest.ErrInvalidArguments, "example.echo@1.0.0", "")
}

// TestPrepareDefaultsBudget: a schema that composes allOf as a DAG through
// shared $refs (2^depth paths) exhausts the step budget instead of being
// walked exponentially; a budget that covers every path completes it.
func TestPrepareDefaultsBudget(t *testing.T) {
	const depth = 10
	defs := map[string]any{fmt.Sprintf("A%d", depth): map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"default": 1}}}}
	for i := depth - 1; i >= 0; i-- {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/A%d", i+1)}
		defs[fmt.Sprintf("A%d", i)] = map[string]any{"allOf": []any{ref, ref}}
	}
	schema := map[string]any{"$defs": defs, "$ref": "#/$defs/A0"}
	if manifest.MaterializeDefaults(schema, map[string]any{}, 1000) {
		t.Errorf("2^%d paths finished within 1000 steps", depth)
	}
	args := map[string]any{}
	if !manifest.MaterializeDefaults(schema, args, 1<<(depth+2)) || args["x"] != int64(1) && args["x"] != 1 {
		t.Errorf("full budget: %v", args)
	}
	// Through the public API the same schema prepares normally.
	m := manifest.CapabilityManifest{RequestSchema: schema}
	p, err := manifest.PrepareRequest(m, nil)
	if err != nil || p.Arguments["x"] != int64(1) {
		t.Errorf("PrepareRequest = %v, %v", p.Arguments, err)
	}
}

func TestValidateResponse(t *testing.T) {
	m := echoManifests(t)[0]
	var v manifest.Validator
	if err := v.ValidateResponse(m, map[string]any{"text": "hello"}); err != nil {
		t.Fatalf("valid echo response refused: %v", err)
	}
	err := v.ValidateResponse(m, map[string]any{"text": 42})
	var ve *manifest.ValidationError
	if !errors.Is(err, manifest.ErrInvalidResponse) || !errors.As(err, &ve) {
		t.Fatalf("response with a number for text: error %v, want ErrInvalidResponse", err)
	}
	if ve.CapabilityID != "example.echo@1.0.0" || ve.Pointer != "/text" {
		t.Errorf("error names %q at %q, want example.echo@1.0.0 at /text", ve.CapabilityID, ve.Pointer)
	}
	if err := v.ValidateResponse(m, nil); !errors.Is(err, manifest.ErrInvalidResponse) {
		t.Errorf("nil response: error %v, want ErrInvalidResponse", err)
	}
}

// TestLargeIntegralFloats: an integral float of 2^53 or more is valid JSON
// the host accepts (as a float literal). Canonical bytes write it as plain
// digits, which the strict parser reads back as an unsafe integer, so no
// path may re-parse canonical output: the manifest must validate, digest,
// marshal and prepare requests.
func TestLargeIntegralFloats(t *testing.T) {
	m := echoManifests(t)[0]
	m.Metadata = map[string]any{"limit": 1e16}
	m.RequestSchema = map[string]any{"type": "object", "properties": map[string]any{
		"text":  map[string]any{"type": "string"},
		"count": map[string]any{"type": "number", "maximum": 1e16, "default": 1e20},
	}, "required": []any{"text"}}
	ms := []manifest.CapabilityManifest{m}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	b := manifest.ProviderBinding{ProtocolVersion: 1, Distribution: "zeocore", Version: "0.11.0", PythonVersion: "3.14.0",
		EnvironmentDigest: canon.Digest("sha256:" + strings.Repeat("0", 64)), Factory: "pkg.mod:factory",
		Manifests: ms, ManifestDigest: d, Generation: 1}
	if err := manifest.ValidateBinding(b); err != nil {
		t.Fatalf("ValidateBinding: %v", err)
	}
	out, err := canon.Marshal(b)
	if err != nil {
		t.Fatalf("canon.Marshal(binding): %v", err)
	}
	if !strings.Contains(string(out), `"limit":10000000000000000`) {
		t.Errorf("canonical binding does not write 1e16 as RFC 8785 digits: %s", out)
	}
	var v manifest.Validator
	p, err := v.PrepareRequest(m, map[string]any{"text": "hi"})
	if err != nil {
		t.Fatalf("PrepareRequest: %v", err)
	}
	if got := p.Arguments["count"]; got != 1e20 {
		t.Errorf("default count = %v (%T), want float 1e20", got, got)
	}
	if _, err := v.PrepareRequest(m, map[string]any{"text": "hi", "count": 2e16}); !errors.Is(err, manifest.ErrInvalidArguments) {
		t.Errorf("count above maximum: error %v, want ErrInvalidArguments", err)
	}
}

// TestSchemaDialectOnlyOnSchemas: "$schema" inside a data keyword is a
// value, not a dialect; at a schema position another dialect is refused.
func TestSchemaDialectOnlyOnSchemas(t *testing.T) {
	m := echoManifests(t)[0]
	var v manifest.Validator
	m.RequestSchema = map[string]any{"type": "object", "default": map[string]any{"$schema": "x"},
		"properties": map[string]any{"text": map[string]any{"type": "string", "examples": []any{map[string]any{"$schema": "y"}}}}}
	if _, err := v.PrepareRequest(m, map[string]any{"text": "hi"}); err != nil {
		t.Fatalf("$schema inside data refused: %v", err)
	}
	m.RequestSchema = map[string]any{"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}
	if _, err := v.PrepareRequest(m, map[string]any{}); !errors.Is(err, manifest.ErrInvalidSchema) {
		t.Fatalf("draft-07 dialect: error %v, want ErrInvalidSchema", err)
	}
}

// TestPrepareCompositionCycle: unions that reach themselves without
// describing a nested value (which pydantic never writes, and which the
// JSON Schema library does not always refuse) end in a schema refusal,
// never in endless recursion.
func TestPrepareCompositionCycle(t *testing.T) {
	var schema map[string]any
	if err := canon.Unmarshal([]byte(`{"$defs": {
		"A": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "object"}]},
		"B": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}}, "$ref": "#/$defs/A"}`), &schema); err != nil {
		t.Fatal(err)
	}
	m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "t", Name: "cycle", Version: "1.0.0"}, RequestSchema: schema}
	var v manifest.Validator
	_, err := v.PrepareRequestJSON(m, []byte(`{}`))
	var ve *manifest.ValidationError
	if !errors.Is(err, manifest.ErrInvalidSchema) || !errors.As(err, &ve) || ve.Rule != "schema.normalize" {
		t.Fatalf("error %v, want ErrInvalidSchema (schema.normalize)", err)
	}
}
