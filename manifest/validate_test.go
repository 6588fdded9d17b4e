package manifest_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// baseBinding returns the real host's two-capability binding as a plain
// JSON tree (manifest 0 is example.echo@1.0.0, 1 is example.two_effects).
func baseBinding(t testing.TB) map[string]any {
	t.Helper()
	v, err := canon.Parse([]byte(loadRealHost(t).FD3))
	if err != nil {
		t.Fatal(err)
	}
	return v.Interface().(map[string]any)
}

// set replaces (or, with del, removes) the value at a JSON pointer.
func set(t fataler, doc any, ptr string, val any, del bool) {
	t.Helper()
	toks := strings.Split(ptr[1:], "/")
	cur := doc
	for i, tok := range toks {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		last := i == len(toks)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, tok)
				} else {
					c[tok] = val
				}
				return
			}
			cur = c[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil {
				t.Fatalf("bad pointer %s", ptr)
			}
			if last {
				c[n] = val
				return
			}
			cur = c[n]
		default:
			t.Fatalf("pointer %s runs through a scalar", ptr)
		}
	}
}

// fataler is what set needs from *testing.T and *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

type mutation struct {
	ptr string
	val any
	del bool
}

// build applies mutations, recomputes manifest_digest (unless keepDigest)
// from what the manifests decode to, and returns the JSON bytes.
func build(t testing.TB, muts []mutation, keepDigest bool) []byte {
	t.Helper()
	doc := baseBinding(t)
	for _, m := range muts {
		set(t, doc, m.ptr, m.val, m.del)
	}
	if !keepDigest {
		raw, err := canon.Marshal(doc["manifests"])
		if err != nil {
			t.Fatal(err)
		}
		var ms []manifest.CapabilityManifest
		if canon.Unmarshal(raw, &ms) == nil {
			d, err := manifest.InventoryDigest(ms)
			if err != nil {
				t.Fatal(err)
			}
			doc["manifest_digest"] = string(d)
		}
	}
	b, err := canon.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	// Canonical bytes cannot carry a float token such as 1.0; splice it in.
	return []byte(strings.ReplaceAll(string(b), `"`+floatOne+`"`, "1.0"))
}

// floatOne marks where build writes the float literal 1.0.
const floatOne = "@float-one@"

// check decodes and validates a binding: the binding-level decode and then
// ValidateBinding, and returns the first error.
func check(data []byte) error {
	b, err := manifest.DecodeBinding(data)
	if err != nil {
		return err
	}
	return manifest.ValidateBinding(b)
}

const echoID = "example.echo@1.0.0"

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func arr(v ...any) []any { return v }

func TestValidatorsTable(t *testing.T) {
	const m0 = "/manifests/0"
	emoji256 := strings.Repeat("\U0001F600", 256)
	tests := []struct {
		name     string
		muts     []mutation
		keepDig  bool
		sentinel error // nil: accepted
		capID    string
		ptr      string
	}{
		// Binding level (strict).
		{"binding unknown key", []mutation{{ptr: "/extra", val: 1}}, false, manifest.ErrInvalidBinding, "", "/extra"},
		{"binding missing generation", []mutation{{ptr: "/generation", del: true}}, false, manifest.ErrInvalidBinding, "", "/generation"},
		{"protocol_version float", []mutation{{ptr: "/protocol_version", val: floatOne}}, false, manifest.ErrInvalidBinding, "", "/protocol_version"},
		{"protocol_version true", []mutation{{ptr: "/protocol_version", val: true}}, false, manifest.ErrInvalidBinding, "", "/protocol_version"},
		{"protocol_version string", []mutation{{ptr: "/protocol_version", val: "1"}}, false, manifest.ErrInvalidBinding, "", "/protocol_version"},
		{"protocol_version 2", []mutation{{ptr: "/protocol_version", val: 2}}, false, manifest.ErrInvalidBinding, "", "/protocol_version"},
		{"generation 0", []mutation{{ptr: "/generation", val: 0}}, false, manifest.ErrInvalidBinding, "", "/generation"},
		{"generation float", []mutation{{ptr: "/generation", val: floatOne}}, false, manifest.ErrInvalidBinding, "", "/generation"},
		{"generation max safe", []mutation{{ptr: "/generation", val: int64(canon.MaxSafeInteger)}}, false, nil, "", ""},
		{"distribution empty", []mutation{{ptr: "/distribution", val: ""}}, false, manifest.ErrInvalidBinding, "", "/distribution"},
		{"version 256 code points", []mutation{{ptr: "/version", val: emoji256}}, false, nil, "", ""},
		{"version 257 code points", []mutation{{ptr: "/version", val: emoji256 + "x"}}, false, manifest.ErrInvalidBinding, "", "/version"},
		{"python_version number", []mutation{{ptr: "/python_version", val: 3.11}}, false, manifest.ErrInvalidBinding, "", "/python_version"},
		{"environment_digest newline", []mutation{{ptr: "/environment_digest", val: "sha256:" + strings.Repeat("0", 64) + "\n"}}, false, manifest.ErrInvalidBinding, "", "/environment_digest"},
		{"environment_digest upper", []mutation{{ptr: "/environment_digest", val: "sha256:" + strings.Repeat("A", 64)}}, false, manifest.ErrInvalidBinding, "", "/environment_digest"},
		{"manifest_digest short", []mutation{{ptr: "/manifest_digest", val: "sha256:00"}}, true, manifest.ErrInvalidBinding, "", "/manifest_digest"},
		{"factory dotted", []mutation{{ptr: "/factory", val: "a.b_c.d9:make_it"}}, false, nil, "", ""},
		{"factory unicode word", []mutation{{ptr: "/factory", val: "módulo.nñame_٣:fábrica"}}, false, nil, "", ""},
		{"factory unicode first", []mutation{{ptr: "/factory", val: "émodule:f"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"factory newline", []mutation{{ptr: "/factory", val: "mod:f\n"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"factory no colon", []mutation{{ptr: "/factory", val: "mod.f"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"factory empty segment", []mutation{{ptr: "/factory", val: "a..b:f"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"factory digit first", []mutation{{ptr: "/factory", val: "1a:f"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"factory two colons", []mutation{{ptr: "/factory", val: "a:b:c"}}, false, manifest.ErrInvalidBinding, "", "/factory"},
		{"manifests object", []mutation{{ptr: "/manifests", val: obj()}}, false, manifest.ErrInvalidBinding, "", "/manifests"},
		{"empty inventory", []mutation{{ptr: "/manifests", val: arr()}}, false, nil, "", ""},

		// Manifest shape (lax but not coercing).
		{"manifest unknown key", []mutation{{ptr: m0 + "/bogus", val: 1}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/bogus"},
		{"effects unknown key", []mutation{{ptr: m0 + "/effects/bogus", val: 1}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/bogus"},
		{"network unknown key", []mutation{{ptr: m0 + "/requirements/network/port", val: 1}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/requirements/network/port"},
		{"missing description", []mutation{{ptr: m0 + "/description", del: true}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/description"},
		{"missing deprecation", []mutation{{ptr: m0 + "/deprecation", del: true}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/deprecation"},
		{"description number", []mutation{{ptr: m0 + "/description", val: 5}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/description"},
		{"bool as string refused", []mutation{{ptr: m0 + "/requirements/network/required", val: "true"}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/requirements/network/required"},
		{"bool as number refused", []mutation{{ptr: m0 + "/requirements/filesystem/read", val: 0}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/requirements/filesystem/read"},
		{"tag number", []mutation{{ptr: m0 + "/tags", val: arr("a", 1)}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/tags/1"},
		{"request_schema array", []mutation{{ptr: m0 + "/request_schema", val: arr()}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/request_schema"},
		{"metadata null", []mutation{{ptr: m0 + "/metadata", val: nil}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/metadata"},
		{"concurrency null", []mutation{{ptr: m0 + "/effects/concurrency", val: nil}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/concurrency"},
		{"projection_name number", []mutation{{ptr: m0 + "/projection_name", val: 1}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/projection_name"},

		// Lax forms that are accepted.
		{"id string form", []mutation{{ptr: m0 + "/id", val: "example.echo@1.0.0"}}, false, nil, "", ""},
		{"set duplicates", []mutation{{ptr: m0 + "/tags", val: arr("b", "a", "b")}, {ptr: m0 + "/effects/kinds", val: arr("read", "read")}}, false, nil, "", ""},
		{"omitted defaults", []mutation{{ptr: m0 + "/schema_version", del: true}, {ptr: m0 + "/projection_name", del: true}, {ptr: m0 + "/requirements", val: obj()}, {ptr: m0 + "/deprecation", val: obj()}, {ptr: m0 + "/effects", val: obj("kinds", arr("read"))}}, false, nil, "", ""},

		// CapabilityId (Python re.match dialect).
		{"id name upper", []mutation{{ptr: m0 + "/id/name", val: "Echo"}}, false, manifest.ErrInvalidManifest, "example.Echo@1.0.0", m0 + "/id/name"},
		{"id name empty", []mutation{{ptr: m0 + "/id/name", val: ""}}, false, manifest.ErrInvalidManifest, "example.@1.0.0", m0 + "/id/name"},
		{"id name trailing newline accepted", []mutation{{ptr: m0 + "/id/name", val: "echo\n"}}, false, nil, "", ""},
		{"id name two newlines", []mutation{{ptr: m0 + "/id/name", val: "echo\n\n"}}, false, manifest.ErrInvalidManifest, "example.echo\n\n@1.0.0", m0 + "/id/name"},
		{"id string newline name", []mutation{{ptr: m0 + "/id", val: "example.echo\n@1.0.0"}}, false, nil, "", ""},
		{"id namespace dotted", []mutation{{ptr: m0 + "/id/namespace", val: "a.b_c.d9"}}, false, nil, "", ""},
		{"id namespace empty segment", []mutation{{ptr: m0 + "/id/namespace", val: "a..b"}}, false, manifest.ErrInvalidManifest, "a..b.echo@1.0.0", m0 + "/id/namespace"},
		{"id namespace digit", []mutation{{ptr: m0 + "/id/namespace", val: "9a"}}, false, manifest.ErrInvalidManifest, "9a.echo@1.0.0", m0 + "/id/namespace"},
		{"id version two parts", []mutation{{ptr: m0 + "/id/version", val: "1.0"}}, false, manifest.ErrInvalidManifest, "example.echo@1.0", m0 + "/id/version"},
		{"id version leading zero", []mutation{{ptr: m0 + "/id/version", val: "01.0.0"}}, false, manifest.ErrInvalidManifest, "example.echo@01.0.0", m0 + "/id/version"},
		{"id version prerelease build", []mutation{{ptr: m0 + "/id/version", val: "1.0.0-rc.1+build.5"}}, false, nil, "", ""},
		{"id version unicode digit", []mutation{{ptr: m0 + "/id/version", val: "1\u0663.0.0"}}, false, nil, "", ""},
		{"id version newline", []mutation{{ptr: m0 + "/id/version", val: "1.0.0\n"}}, false, nil, "", ""},
		{"id version empty prerelease", []mutation{{ptr: m0 + "/id/version", val: "1.0.0-"}}, false, manifest.ErrInvalidManifest, "example.echo@1.0.0-", m0 + "/id/version"},
		{"id string no at", []mutation{{ptr: m0 + "/id", val: "example.echo"}}, false, manifest.ErrInvalidManifest, "example.echo", m0 + "/id"},
		{"id string no dot", []mutation{{ptr: m0 + "/id", val: "echo@1.0.0"}}, false, manifest.ErrInvalidManifest, "echo@1.0.0", m0 + "/id"},
		{"id object extra key", []mutation{{ptr: m0 + "/id/extra", val: "x"}}, false, manifest.ErrInvalidManifest, "", m0 + "/id/extra"},
		{"id number", []mutation{{ptr: m0 + "/id", val: 1}}, false, manifest.ErrInvalidManifest, "", m0 + "/id"},

		// Effects.
		{"kinds empty", []mutation{{ptr: m0 + "/effects/kinds", val: arr()}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/kinds"},
		{"kinds unknown", []mutation{{ptr: m0 + "/effects/kinds", val: arr("read", "teleport")}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/kinds/1"},
		{"kinds missing", []mutation{{ptr: m0 + "/effects/kinds", del: true}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/kinds"},
		{"concurrency unknown", []mutation{{ptr: m0 + "/effects/concurrency", val: "whenever"}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/concurrency"},
		{"serial_per_resource without keys", []mutation{{ptr: m0 + "/effects/concurrency", val: "serial_per_resource"}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/resource_key_fields"},
		{"serial_per_resource with keys", []mutation{{ptr: m0 + "/effects/concurrency", val: "serial_per_resource"}, {ptr: m0 + "/effects/resource_key_fields", val: arr("text")}}, false, nil, "", ""},
		{"keys without serial_per_resource", []mutation{{ptr: m0 + "/effects/concurrency", val: "exclusive"}, {ptr: m0 + "/effects/resource_key_fields", val: arr("text")}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/effects/resource_key_fields"},

		// Deprecation.
		{"successor without deprecated", []mutation{{ptr: m0 + "/deprecation/successor", val: "example.echo@2.0.0"}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/deprecation/successor"},
		{"note without deprecated", []mutation{{ptr: m0 + "/deprecation", val: obj("note", "old")}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/deprecation/note"},
		{"deprecated with successor and note", []mutation{{ptr: m0 + "/deprecation", val: obj("deprecated", true, "successor", "x", "note", "y")}}, false, nil, "", ""},

		// Examples.
		{"example missing request", []mutation{{ptr: m0 + "/examples/0", val: obj("name", "x")}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/examples/0/request"},
		{"example response number", []mutation{{ptr: m0 + "/examples/0/response", val: 5}}, false, manifest.ErrInvalidManifest, echoID, m0 + "/examples/0/response"},
		{"example request invalid", []mutation{{ptr: m0 + "/examples/0/request/text", val: 5}}, false, manifest.ErrInvalidExample, echoID, m0 + "/examples/0/request/text"},
		{"example response invalid", []mutation{{ptr: m0 + "/examples/0/response", val: obj("text", true)}}, false, manifest.ErrInvalidExample, echoID, m0 + "/examples/0/response/text"},
		{"example response valid", []mutation{{ptr: m0 + "/examples/0/response", val: obj("text", "hello")}}, false, nil, "", ""},
		{"example format not asserted", []mutation{{ptr: m0 + "/request_schema/properties/text/format", val: "email"}}, false, nil, "", ""},
		{"no examples", []mutation{{ptr: m0 + "/examples", val: arr()}}, false, nil, "", ""},

		// Inventory.
		{"duplicate id", []mutation{{ptr: "/manifests/1/id", val: "example.echo@1.0.0"}}, false, manifest.ErrDuplicateCapability, echoID, "/manifests/1/id"},
		{"projection collision", []mutation{{ptr: m0 + "/projection_name", val: "p"}, {ptr: "/manifests/1/projection_name", val: "p"}}, false, manifest.ErrProjectionCollision, "example.two_effects@1.0.0", "/manifests/1/projection_name"},
		{"empty projection names do not collide", []mutation{{ptr: m0 + "/projection_name", val: ""}, {ptr: "/manifests/1/projection_name", val: ""}}, false, nil, "", ""},
		{"schema bad type keyword", []mutation{{ptr: m0 + "/request_schema/type", val: 5}}, false, manifest.ErrInvalidSchema, echoID, m0 + "/request_schema/type"},
		{"schema bad required", []mutation{{ptr: "/manifests/1/response_schema/required", val: "target"}}, false, manifest.ErrInvalidSchema, "example.two_effects@1.0.0", "/manifests/1/response_schema/required"},
		{"schema bad pattern", []mutation{{ptr: m0 + "/request_schema/properties/text/pattern", val: "("}}, false, manifest.ErrInvalidSchema, echoID, m0 + "/request_schema/properties/text/pattern"},
		{"schema dialect draft-07", []mutation{{ptr: m0 + "/request_schema/$schema", val: "http://json-schema.org/draft-07/schema#"}}, false, manifest.ErrInvalidSchema, echoID, m0 + "/request_schema/$schema"},
		{"schema dialect 2020-12", []mutation{{ptr: m0 + "/request_schema/$schema", val: "https://json-schema.org/draft/2020-12/schema"}}, false, nil, "", ""},
		{"local ref", []mutation{{ptr: m0 + "/request_schema/$defs", val: obj("T", obj("type", "string"))}, {ptr: m0 + "/request_schema/properties/text", val: obj("$ref", "#/$defs/T")}}, false, nil, "", ""},
		{"local ref under remote $id", []mutation{{ptr: m0 + "/request_schema/$id", val: "https://example.com/req.json"}, {ptr: m0 + "/request_schema/$defs", val: obj("T", obj("type", "string"))}, {ptr: m0 + "/request_schema/properties/text", val: obj("$ref", "#/$defs/T")}}, false, nil, "", ""},
		{"remote ref", []mutation{{ptr: m0 + "/request_schema/properties/text/$ref", val: "https://example.com/s.json"}}, false, manifest.ErrExternalReference, echoID, m0 + "/request_schema/properties/text/$ref"},
		{"relative ref", []mutation{{ptr: m0 + "/response_schema/properties/text/$ref", val: "other.json#/x"}}, false, manifest.ErrExternalReference, echoID, m0 + "/response_schema/properties/text/$ref"},
		{"file ref", []mutation{{ptr: m0 + "/request_schema/$ref", val: "file:///etc/passwd"}}, false, manifest.ErrExternalReference, echoID, m0 + "/request_schema/$ref"},
		{"dynamicRef remote", []mutation{{ptr: m0 + "/request_schema/$dynamicRef", val: "http://x/y"}}, false, manifest.ErrExternalReference, echoID, m0 + "/request_schema/$dynamicRef"},
		{"property named $ref", []mutation{{ptr: m0 + "/request_schema/properties/$ref", val: obj("type", "string")}}, false, manifest.ErrExternalReference, echoID, m0 + "/request_schema/properties/$ref"},
		{"ref inside default", []mutation{{ptr: m0 + "/request_schema/properties/text/default", val: obj("$ref", "x")}}, false, manifest.ErrExternalReference, echoID, m0 + "/request_schema/properties/text/default/$ref"},
		{"unresolvable local ref", []mutation{{ptr: m0 + "/request_schema/properties/text/$ref", val: "#/$defs/Missing"}}, false, manifest.ErrInvalidSchema, echoID, m0 + "/request_schema"},
		{"digest mismatch", []mutation{{ptr: "/manifest_digest", val: "sha256:" + strings.Repeat("0", 64)}}, true, manifest.ErrDigestMismatch, "", "/manifest_digest"},
		{"digest of unnormalized form", []mutation{{ptr: m0 + "/tags", val: arr("b", "a")}}, true, manifest.ErrDigestMismatch, "", "/manifest_digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := check(build(t, tt.muts, tt.keepDig))
			if tt.sentinel == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			assertErr(t, err, tt.sentinel, tt.capID, tt.ptr)
		})
	}
}
