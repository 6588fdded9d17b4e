package manifest_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
	"pgregory.net/rapid"
)

// The upstream-generated JSON Schema of ProviderBinding is an oracle for
// every rule it can express. The rules it cannot express, and so are not
// compared here (each has its own table test in validate_test.go):
//
//   - CapabilityId patterns (the schema has only minLength 1);
//   - effects.kinds non-empty; resource_key_fields non-empty iff
//     serial_per_resource; successor/note only when deprecated;
//   - strict integers: the schema's "type": "integer" accepts 1.0, the
//     strict wire model refuses it;
//   - the lax manifest forms: a string id, and set fields with duplicates
//     (the schema says uniqueItems; upstream and this package de-duplicate);
//     TestOracleKnownDisagreements pins these down;
//   - inventory rules: unique ids and projection names, schema validity,
//     examples against schemas, manifest_digest equality.
//
// The factory pattern's \w is Unicode-aware in pydantic-core's Rust regex;
// the oracle compiles patterns with rustWordEngine so that it agrees. (Rust's
// \w also includes Other_Alphabetic symbols such as U+24B6, which Go's
// regexp cannot name; the generator never draws those.)

func rustWordEngine(s string) (jsonschema.Regexp, error) {
	return regexp.Compile(strings.ReplaceAll(s, `\w`, `[\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}]`))
}

func bindingOracle(t testing.TB) *jsonschema.Schema {
	t.Helper()
	v, err := canon.Parse(testvectors.File(t, "provider-binding.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.UseRegexpEngine(rustWordEngine)
	if err := c.AddResource("https://oracle.invalid/provider-binding.json", v.Interface()); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("https://oracle.invalid/provider-binding.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	genSegment = rapid.StringMatching(`[a-z][a-z0-9_]{0,6}`)
	genVersion = rapid.StringMatching(`(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})(-[0-9A-Za-z-]{1,4}(\.[0-9A-Za-z-]{1,4})?)?(\+[0-9A-Za-z-]{1,4})?`)
	genText    = rapid.OneOf(rapid.StringMatching(`[a-zA-Z0-9 ._-]{0,12}`), rapid.String())
	genKinds   = []string{"read", "write", "delete", "external_communication", "financial", "security_sensitive"}
	genModes   = []string{"parallel_safe", "serial_per_capability", "serial_per_resource", "exclusive"}
	genFactory = rapid.StringMatching(`[a-zA-Z_][a-zA-Z0-9_é٣Ⅳ]{0,5}(\.[a-zA-Z_][a-zA-Z0-9_\x{301}]{0,4}){0,2}:[a-zA-Z_][a-zA-Z0-9_ñ]{0,5}`)
)

func genSet(t *rapid.T, label string, elem *rapid.Generator[string]) []any {
	s := rapid.SliceOfDistinct(elem, func(s string) string { return s }).Draw(t, label)
	out := make([]any, len(s))
	for i, e := range s {
		out[i] = e
	}
	return out
}

func genJSON(t *rapid.T, label string, depth int) any {
	kinds := 5
	if depth > 0 {
		kinds = 7
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, label+"-kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, label)
	case 2:
		return rapid.Int64Range(-canon.MaxSafeInteger, canon.MaxSafeInteger).Draw(t, label)
	case 3:
		return rapid.Float64Range(-1e15, 1e15).Draw(t, label)
	case 4:
		return genText.Draw(t, label)
	case 5:
		n := rapid.IntRange(0, 3).Draw(t, label+"-len")
		a := make([]any, n)
		for i := range a {
			a[i] = genJSON(t, label, depth-1)
		}
		return a
	default:
		return genObject(t, label, depth-1)
	}
}

func genObject(t *rapid.T, label string, depth int) map[string]any {
	n := rapid.IntRange(0, 3).Draw(t, label+"-n")
	m := make(map[string]any, n)
	for range n {
		m[genText.Draw(t, label+"-key")] = genJSON(t, label, depth)
	}
	return m
}

func optional(t *rapid.T, label string, gen *rapid.Generator[string]) any {
	if rapid.Bool().Draw(t, label+"-null") {
		return nil
	}
	return gen.Draw(t, label)
}

// genManifest draws a manifest that satisfies every rule, in the fully
// materialized form (maybe with some defaulted keys omitted).
func genManifest(t *rapid.T, i int) map[string]any {
	prop := genSegment.Draw(t, "prop")
	reqSchema := map[string]any{"type": "object", "properties": map[string]any{prop: map[string]any{"type": "string"}}}
	nex := rapid.IntRange(0, 2).Draw(t, "examples")
	examples := make([]any, nex)
	for k := range examples {
		req := map[string]any{}
		if rapid.Bool().Draw(t, "has-prop") {
			req[prop] = genText.Draw(t, "val")
		}
		var resp any
		if rapid.Bool().Draw(t, "has-resp") {
			resp = map[string]any{"ok": rapid.Bool().Draw(t, "ok")}
		}
		examples[k] = map[string]any{"name": optional(t, "ex-name", genText), "request": req, "response": resp, "description": optional(t, "ex-desc", genText)}
	}
	mode := rapid.SampledFrom(genModes).Draw(t, "mode")
	var rkf []any
	if mode == "serial_per_resource" {
		rkf = []any{prop}
	} else {
		rkf = []any{}
	}
	deprecated := rapid.Bool().Draw(t, "deprecated")
	dep := map[string]any{"deprecated": deprecated, "successor": nil, "note": nil}
	if deprecated {
		dep["successor"] = optional(t, "successor", genText)
		dep["note"] = optional(t, "note", genText)
	}
	m := map[string]any{
		"schema_version":  "1.0",
		"id":              map[string]any{"namespace": genSegment.Draw(t, "ns") + fmt.Sprintf("%d", i), "name": genSegment.Draw(t, "name"), "version": genVersion.Draw(t, "version")},
		"description":     genText.Draw(t, "description"),
		"request_schema":  reqSchema,
		"response_schema": map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}},
		"examples":        examples,
		"error_codes":     genSet(t, "error_codes", rapid.StringMatching(`ZEO_[A-Z]{1,4}`)),
		"effects":         map[string]any{"kinds": genSet(t, "kinds", rapid.SampledFrom(genKinds)), "concurrency": mode, "resource_key_fields": rkf},
		"requirements": map[string]any{
			"services": genSet(t, "services", genText), "credentials": genSet(t, "credentials", genText), "binaries": genSet(t, "binaries", genText),
			"network":    map[string]any{"required": rapid.Bool().Draw(t, "net"), "hosts": genSet(t, "hosts", genText)},
			"filesystem": map[string]any{"read": rapid.Bool().Draw(t, "r"), "write": rapid.Bool().Draw(t, "w"), "roles": []any{genText.Draw(t, "role")}},
		},
		"tags":            genSet(t, "tags", genText),
		"metadata":        genObject(t, "metadata", 2),
		"deprecation":     dep,
		"projection_name": nil,
	}
	if len(m["effects"].(map[string]any)["kinds"].([]any)) == 0 {
		m["effects"].(map[string]any)["kinds"] = []any{"read"}
	}
	// Omit some defaulted keys: both the schema and the model allow it.
	for _, p := range []string{"/schema_version", "/projection_name", "/effects/concurrency", "/requirements/services", "/requirements/network", "/requirements/filesystem/roles", "/deprecation/note"} {
		if p == "/effects/concurrency" && mode != "parallel_safe" {
			continue
		}
		if rapid.IntRange(0, 3).Draw(t, "omit") == 0 {
			removeAt(m, p)
		}
	}
	return m
}

func removeAt(doc map[string]any, ptr string) {
	toks := strings.Split(ptr[1:], "/")
	cur := doc
	for _, tok := range toks[:len(toks)-1] {
		next, ok := cur[tok].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	delete(cur, toks[len(toks)-1])
}

func genBinding(t *rapid.T) map[string]any {
	n := rapid.IntRange(0, 3).Draw(t, "manifests")
	ms := make([]any, n)
	for i := range ms {
		ms[i] = genManifest(t, i)
	}
	return map[string]any{
		"protocol_version":   int64(1),
		"distribution":       rapid.StringMatching(`[a-z][a-z0-9-]{0,10}`).Draw(t, "dist"),
		"version":            genVersion.Draw(t, "dist-version"),
		"python_version":     rapid.StringMatching(`3\.1[0-4]\.[0-9]`).Draw(t, "py"),
		"environment_digest": "sha256:" + rapid.StringMatching(`[0-9a-f]{64}`).Draw(t, "env"),
		"factory":            genFactory.Draw(t, "factory"),
		"manifests":          ms,
		"manifest_digest":    "sha256:" + strings.Repeat("0", 64),
		"generation":         rapid.Int64Range(1, canon.MaxSafeInteger).Draw(t, "generation"),
	}
}

// objectsIn lists the pointers of the objects the models define (not
// schemas, metadata or example payloads, which accept anything).
func objectsIn(doc map[string]any) []string {
	ptrs := []string{""}
	ms, _ := doc["manifests"].([]any)
	for i, m := range ms {
		mp := fmt.Sprintf("/manifests/%d", i)
		ptrs = append(ptrs, mp, mp+"/id", mp+"/effects", mp+"/requirements", mp+"/deprecation")
		mm := m.(map[string]any)
		if r, ok := mm["requirements"].(map[string]any); ok {
			for _, k := range []string{"network", "filesystem"} {
				if _, ok := r[k]; ok {
					ptrs = append(ptrs, mp+"/requirements/"+k)
				}
			}
		}
		exs, _ := mm["examples"].([]any)
		for k := range exs {
			ptrs = append(ptrs, fmt.Sprintf("%s/examples/%d", mp, k))
		}
	}
	return ptrs
}

func getAt(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			var i int
			fmt.Sscan(tok, &i)
			cur = c[i]
		}
	}
	return cur
}

// mutate applies one mutation whose verdict the schema fully expresses
// and returns its name. Mutations that would cross an inexpressible rule
// (a string id, a CapabilityId pattern, deprecation or concurrency
// couplings) are not drawn.
func mutate(t *rapid.T, doc map[string]any) string {
	objs := objectsIn(doc)
	ptr := rapid.SampledFrom(objs).Draw(t, "target")
	obj := getAt(doc, ptr).(map[string]any)
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	addKey := func() string {
		obj[rapid.StringMatching(`[a-z_]{1,10}`).Draw(t, "newkey")+"_x"] = genJSON(t, "newval", 1)
		return "add key at " + ptr
	}
	if len(keys) == 0 {
		return addKey()
	}
	slicesSort(keys)
	key := rapid.SampledFrom(keys).Draw(t, "key")
	deprecated, _ := obj["deprecated"].(bool)
	coupled := key == "concurrency" && obj[key] == "serial_per_resource" ||
		key == "resource_key_fields" && obj["concurrency"] == "serial_per_resource" ||
		key == "deprecated" && deprecated
	switch rapid.IntRange(0, 3).Draw(t, "mutation") {
	case 0:
		if coupled {
			return addKey()
		}
		delete(obj, key)
		return "delete " + ptr + "/" + key
	case 1:
		return addKey()
	case 2:
		old := obj[key]
		nv := genJSON(t, "replacement", 1)
		if jsonType(nv) == jsonType(old) || jsonType(nv) == "string" && (key == "id" || key == "successor" || key == "note") ||
			jsonType(old) == "null" && jsonType(nv) == "object" && key == "response" || coupled && jsonType(nv) == "null" {
			return addKey()
		}
		obj[key] = nv
		return "retype " + ptr + "/" + key
	default:
		switch {
		case ptr == "" && (key == "environment_digest" || key == "manifest_digest" || key == "factory" || key == "distribution" || key == "version" || key == "python_version"):
			obj[key] = rapid.OneOf(genText, genFactory, rapid.StringMatching(`sha256:[0-9a-fA-F]{63,65}\n?`), rapid.StringMatching(`[a-z]{250,260}`), rapid.StringMatching(`[\x{1F600}é]{250,260}`)).Draw(t, "string")
		case ptr == "" && (key == "protocol_version" || key == "generation"):
			obj[key] = rapid.Int64Range(-3, 3).Draw(t, "int")
		case key == "concurrency" && obj[key] == "serial_per_resource":
			obj[key] = rapid.StringMatching(`[A-Z]{1,5}`).Draw(t, "mode")
		case key == "concurrency":
			obj[key] = rapid.OneOf(genText, rapid.SampledFrom([]string{"parallel_safe", "serial_per_capability", "exclusive"})).Draw(t, "mode")
		case key == "kinds":
			obj[key] = []any{rapid.OneOf(rapid.SampledFrom(genKinds), genText).Draw(t, "kind")}
		case key == "description" || key == "schema_version" || key == "projection_name" || key == "name" && strings.Contains(ptr, "/examples/") ||
			(key == "successor" || key == "note") && deprecated:
			obj[key] = genText.Draw(t, "text")
		default:
			return addKey()
		}
		return "value " + ptr + "/" + key
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case int64, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

func slicesSort(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func withDigest(t interface{ Fatal(...any) }, doc map[string]any) []byte {
	raw, err := canon.Marshal(doc["manifests"])
	if err != nil {
		t.Fatal(err)
	}
	var ms []manifest.CapabilityManifest
	if canon.Unmarshal(raw, &ms) == nil {
		if d, err := manifest.InventoryDigest(ms); err == nil {
			if _, ok := doc["manifest_digest"].(string); ok && strings.HasPrefix(doc["manifest_digest"].(string), "sha256:0000") {
				doc["manifest_digest"] = string(d)
			}
		}
	}
	b, err := canon.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOracleProviderBinding(t *testing.T) {
	oracle := bindingOracle(t)
	var valid, accepted, refused int
	defer func() {
		t.Logf("valid %d, mutated and accepted by both %d, mutated and refused by both %d", valid, accepted, refused)
	}()
	rapid.Check(t, func(t *rapid.T) {
		doc := genBinding(t)
		what := "valid"
		if rapid.IntRange(0, 3).Draw(t, "mutate") > 0 {
			what = mutate(t, doc)
		}
		data := withDigest(t, doc)
		v, err := canon.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		schemaErr := oracle.Validate(v.Interface())
		b, goErr := manifest.DecodeBinding(data)
		if (schemaErr == nil) != (goErr == nil) {
			t.Fatalf("%s: schema says %v, Go says %v\n%s", what, schemaErr, goErr, data)
		}
		switch {
		case what != "valid" && goErr == nil:
			accepted++
		case what != "valid":
			refused++
		default:
			valid++
		}
		if what == "valid" {
			if err := manifest.ValidateBinding(b); err != nil {
				t.Fatalf("valid binding refused by ValidateBinding: %v\n%s", err, data)
			}
		}
	})
}

// TestOracleKnownDisagreements pins the documented places where the schema
// and the model (upstream's and ours) disagree.
func TestOracleKnownDisagreements(t *testing.T) {
	oracle := bindingOracle(t)
	const m0 = "/manifests/0"
	tests := []struct {
		name    string
		muts    []mutation
		goValid bool
	}{
		{"string id", []mutation{{ptr: m0 + "/id", val: "example.echo@1.0.0"}}, true},
		{"duplicate tag", []mutation{{ptr: m0 + "/tags", val: arr("a", "a")}}, true},
		{"duplicate kind", []mutation{{ptr: m0 + "/effects/kinds", val: arr("read", "read")}}, true},
		{"float protocol_version", []mutation{{ptr: "/protocol_version", val: floatOne}}, false},
		{"bad name pattern", []mutation{{ptr: m0 + "/id/name", val: "Echo"}}, false},
		{"empty kinds", []mutation{{ptr: m0 + "/effects/kinds", val: arr()}}, false},
		{"note not deprecated", []mutation{{ptr: m0 + "/deprecation/note", val: "n"}}, false},
		{"rkf without serial", []mutation{{ptr: m0 + "/effects/resource_key_fields", val: arr("x")}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := build(t, tt.muts, false)
			v, err := canon.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			schemaOK := oracle.Validate(v.Interface()) == nil
			_, goErr := manifest.DecodeBinding(data)
			if schemaOK == (goErr == nil) || (goErr == nil) != tt.goValid {
				t.Errorf("schema valid %v, Go error %v: expected the documented disagreement", schemaOK, goErr)
			}
		})
	}
}

// TestLaxFormsNormalize: every unambiguous lax form of a valid manifest (a
// string id, duplicated set elements, omitted defaults) decodes to the same
// materialized manifest, and so to the same projection digest, as its strict
// form; both decoders agree.
func TestLaxFormsNormalize(t *testing.T) {
	var laxCases, stringIDs int
	defer func() {
		t.Logf("%d lax documents differed from their strict form (%d with a string id)", laxCases, stringIDs)
	}()
	rapid.Check(t, func(t *rapid.T) {
		strict := genManifest(t, 0)
		// Materialize the strict form first (genManifest may omit defaults).
		sb, err := canon.Marshal(strict)
		if err != nil {
			t.Fatal(err)
		}
		want, err := manifest.DecodeManifest(sb)
		if err != nil {
			t.Fatalf("strict form refused: %v", err)
		}
		lax := deepCopyJSON(strict).(map[string]any)
		if rapid.Bool().Draw(t, "string-id") {
			id := lax["id"].(map[string]any)
			lax["id"] = fmt.Sprintf("%s.%s@%s", id["namespace"], id["name"], id["version"])
		}
		for _, p := range []string{"/error_codes", "/tags", "/effects/kinds", "/requirements/services", "/requirements/credentials", "/requirements/binaries", "/requirements/network/hosts"} {
			a, ok := getAt(lax, p).([]any)
			if !ok || len(a) == 0 || !rapid.Bool().Draw(t, "dup") {
				continue
			}
			a = append(a, a[rapid.IntRange(0, len(a)-1).Draw(t, "which")])
			set(t, lax, p, a, false)
		}
		if want.Effects.Concurrency == manifest.ParallelSafe && rapid.Bool().Draw(t, "omit-concurrency") {
			removeAt(lax, "/effects/concurrency")
		}
		for _, p := range []string{"/schema_version", "/projection_name", "/requirements/filesystem", "/requirements/network"} {
			if v := getAt(lax, p); rapid.Bool().Draw(t, "omit") && isDefault(p, v) {
				removeAt(lax, p)
			}
		}
		lb, err := canon.Marshal(lax)
		if err != nil {
			t.Fatal(err)
		}
		if string(lb) != string(sb) {
			laxCases++
		}
		if _, ok := lax["id"].(string); ok {
			stringIDs++
		}
		got, err := manifest.DecodeManifest(lb)
		if err != nil {
			t.Fatalf("lax form refused: %v\n%s", err, lb)
		}
		var viaJSON manifest.CapabilityManifest
		if err := json.Unmarshal(lb, &viaJSON); err != nil {
			t.Fatalf("encoding/json refused the lax form: %v", err)
		}
		dw, _ := manifest.InventoryDigest([]manifest.CapabilityManifest{want})
		dg, _ := manifest.InventoryDigest([]manifest.CapabilityManifest{got})
		dj, _ := manifest.InventoryDigest([]manifest.CapabilityManifest{viaJSON})
		if dw != dg || dg != dj {
			t.Fatalf("lax form digests differently:\nstrict %s\nlax    %s", sb, lb)
		}
		gb, _ := canon.Marshal(got)
		wb, _ := canon.Marshal(want)
		if string(gb) != string(wb) {
			t.Fatalf("materialized forms differ:\n%s\n%s", wb, gb)
		}
	})
}

// isDefault reports whether v is the value decoding fills in for p.
func isDefault(p string, v any) bool {
	switch p {
	case "/schema_version":
		return v == "1.0"
	case "/projection_name":
		return v == nil
	case "/requirements/filesystem":
		m, _ := v.(map[string]any)
		roles, _ := m["roles"].([]any)
		return m != nil && m["read"] == false && m["write"] == false && len(roles) == 0
	case "/requirements/network":
		m, _ := v.(map[string]any)
		hosts, _ := m["hosts"].([]any)
		return m != nil && m["required"] == false && len(hosts) == 0
	}
	return false
}

func deepCopyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopyJSON(e)
		}
		return a
	}
	return v
}
