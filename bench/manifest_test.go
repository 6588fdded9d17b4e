package bench

import (
	"fmt"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// benchManifest is a pydantic-shaped manifest whose schemas differ per i,
// so an inventory of n manifests has 2n distinct schemas.
func benchManifest(i int) manifest.CapabilityManifest {
	return manifest.CapabilityManifest{
		SchemaVersion: manifest.SchemaVersion,
		ID:            manifest.CapabilityID{Namespace: "bench.tools", Name: fmt.Sprintf("cap_%04d", i), Version: "1.0.0"},
		Description:   "A benchmark capability.",
		RequestSchema: map[string]any{"type": "object", "title": fmt.Sprintf("Req%d", i), "required": []any{"text"},
			"properties": map[string]any{
				"text":            map[string]any{"type": "string", "title": "Text"},
				"organization_id": map[string]any{"type": "string", "default": "org-a"},
			}},
		ResponseSchema: map[string]any{"type": "object", "title": fmt.Sprintf("Resp%d", i), "required": []any{"text"},
			"properties": map[string]any{"text": map[string]any{"type": "string"}}},
		Examples:   []manifest.CapabilityExample{{Request: map[string]any{"text": "hello"}, Response: map[string]any{"text": "hello"}}},
		ErrorCodes: []string{"ZEO_B", "ZEO_A"},
		Effects:    manifest.CapabilityEffects{Kinds: []manifest.EffectKind{manifest.EffectWrite, manifest.EffectRead}, Concurrency: manifest.ParallelSafe},
		Requirements: manifest.CapabilityRequirements{Services: []string{"runtime.effects"},
			Network: manifest.NetworkRequirement{Hosts: []string{"b.example", "a.example"}}},
		Tags:     []string{"zulu", "alpha"},
		Metadata: map[string]any{"owner": "bench"},
	}
}

func benchBinding(b *testing.B, n int) manifest.ProviderBinding {
	ms := make([]manifest.CapabilityManifest, n)
	for i := range ms {
		ms[i] = benchManifest(n - 1 - i) // reverse order: the projection sorts
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		b.Fatal(err)
	}
	return manifest.ProviderBinding{ProtocolVersion: 1, Distribution: "bench", Version: "1.0.0", PythonVersion: "3.11.7",
		EnvironmentDigest: canon.Digest("sha256:" + fmt64zeros), Factory: "bench_provider:factory", Manifests: ms, ManifestDigest: d, Generation: 1}
}

const fmt64zeros = "0000000000000000000000000000000000000000000000000000000000000000"

// BenchmarkManifestValidateBinding: cold = package-level ValidateBinding
// (every schema compiled); warm = one Validator whose cache already holds
// the schemas (metaschema check, examples, digest only).
func BenchmarkManifestValidateBinding(b *testing.B) {
	for _, n := range []int{1, 50, 500} {
		bind := benchBinding(b, n)
		b.Run(fmt.Sprintf("cold/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := manifest.ValidateBinding(bind); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("warm/n=%d", n), func(b *testing.B) {
			var v manifest.Validator
			if err := v.ValidateBinding(bind); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := v.ValidateBinding(bind); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkManifestInventoryDigest(b *testing.B) {
	for _, n := range []int{1, 50, 500} {
		bind := benchBinding(b, n)
		inv, _ := manifest.InventoryJSON(bind.Manifests)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(inv)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := manifest.InventoryDigest(bind.Manifests); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// tenFieldManifest has a 10-property request schema with 4 defaults, one
// nested model through $ref, a pattern, an enum and bounds.
func tenFieldManifest() (manifest.CapabilityManifest, map[string]any) {
	schema := map[string]any{
		"type": "object", "title": "Req", "required": []any{"text", "count", "mode", "inner"},
		"$defs": map[string]any{"Inner": map[string]any{"type": "object", "properties": map[string]any{
			"depth": map[string]any{"type": "integer", "default": 3}, "tag": map[string]any{"type": "string"}}}},
		"properties": map[string]any{
			"text":            map[string]any{"type": "string", "maxLength": 100},
			"count":           map[string]any{"type": "integer", "minimum": 0, "maximum": 1000},
			"mode":            map[string]any{"enum": []any{"fast", "slow", "safe"}},
			"ratio":           map[string]any{"type": "number", "default": 0.5},
			"flag":            map[string]any{"type": "boolean", "default": false},
			"email":           map[string]any{"type": "string", "pattern": "^[a-z]+@[a-z]+\\.[a-z]+$"},
			"tags":            map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "default": []any{}},
			"inner":           map[string]any{"$ref": "#/$defs/Inner"},
			"organization_id": map[string]any{"type": "string", "default": "org-a"},
			"note":            map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}, "default": nil},
		},
	}
	m := benchManifest(0)
	m.RequestSchema = schema
	args := map[string]any{"text": "hello", "count": 7, "mode": "fast", "email": "a@b.cd", "inner": map[string]any{"tag": "x"}}
	return m, args
}

// BenchmarkManifestPrepareRequest: a 10-field request. warm = a Validator
// whose cache holds the schema (each call still hashes the schema to find
// it); preparer = a Preparer made once (no lookup); cold = a fresh
// Validator per call (compiles); raw_santhosh = the bare library Validate of
// the same instance, the floor under all of them.
func BenchmarkManifestPrepareRequest(b *testing.B) {
	m, args := tenFieldManifest()
	var v manifest.Validator
	if _, err := v.PrepareRequest(m, args); err != nil {
		b.Fatal(err)
	}
	b.Run("warm", func(b *testing.B) { benchWarmPrepare(b, &v, m, args) })
	b.Run("preparer", func(b *testing.B) { benchPreparer(b, &v, m, args) })
	b.Run("warm_parallel", func(b *testing.B) {
		var v manifest.Validator
		if _, err := v.PrepareRequest(m, args); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := v.PrepareRequest(m, args); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("cold", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := manifest.PrepareRequest(m, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw_santhosh", func(b *testing.B) {
		doc, _ := canon.Marshal(m.RequestSchema)
		sv, _ := canon.Parse(doc)
		c := jsonschema.NewCompiler()
		if err := c.AddResource("https://bench.invalid/s.json", sv.Interface()); err != nil {
			b.Fatal(err)
		}
		s, err := c.Compile("https://bench.invalid/s.json")
		if err != nil {
			b.Fatal(err)
		}
		ab, _ := canon.Marshal(args)
		av, _ := canon.Parse(ab)
		inst := av.Interface()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(inst); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// orderManifest has the request schema pydantic writes for the 30-field
// model of testdata/order30.py (date-times, dates, durations, URLs, a
// UUID, an enum, a set, nested models with defaults), and
// arguments that need normalizing: offsets, an upper-case UUID, URLs
// without their trailing slash or with an upper-case scheme.
func orderManifest(b *testing.B) (manifest.CapabilityManifest, map[string]any) {
	raw, err := os.ReadFile("testdata/order30.schema.json")
	if err != nil {
		b.Fatal(err)
	}
	var schema map[string]any
	if err := canon.Unmarshal(raw, &schema); err != nil {
		b.Fatal(err)
	}
	m := benchManifest(0)
	m.RequestSchema = schema
	var args map[string]any
	if err := canon.Unmarshal([]byte(orderArgs), &args); err != nil {
		b.Fatal(err)
	}
	return m, args
}

const (
	orderArgs = `{"order_id": "7C9E6679-7425-40DE-944B-E07FC1F90AE7", "customer": "ACME",
 "created_at": "2026-09-05T08:00:00+00:00", "updated_at": "2026-09-05T09:30:00.5+02:00", "due_date": "2026-09-30",
 "window": "PT90M", "callback_url": "HTTPS://Example.com/callback", "homepage": "http://acme.example", "amount": 1299.5,
 "tax_rate": 0.07, "quantity": 3, "priority": "high", "tags": ["b2b", "rush"], "line_numbers": [3, 1, 2],
 "billing": {"street": "Hauptstr. 1", "verified_at": "2026-01-02T03:04:05Z"},
 "attachments": [{"url": "https://files.example.com/a.pdf", "size": 1024}], "source_ip": "10.0.0.1"}`
	// orderNormalized is pydantic 2.13.4's model_validate(orderArgs)
	// .model_dump(mode="json"), canonical.
	orderNormalized = `{"amount":1299.5,"attachments":[{"size":1024,"uploaded_at":"2026-01-01T00:00:00Z","url":"https://files.example.com/a.pdf"}],"billing":{"city":"Berlin","country":"DE","street":"Hauptstr. 1","verified_at":"2026-01-02T03:04:05Z"},"callback_url":"https://example.com/callback","channel":"web","confirmed_at":null,"created_at":"2026-09-05T08:00:00Z","currency":"EUR","customer":"ACME","due_date":"2026-09-30","express":false,"homepage":"http://acme.example/","line_numbers":[1,2,3],"locale":"de-DE","notes":"","order_id":"7c9e6679-7425-40de-944b-e07fc1f90ae7","priority":"high","quantity":3,"reference":null,"retries":3,"ship_by":null,"shipping":{"city":"Berlin","country":"DE","street":"","verified_at":null},"source_ip":"10.0.0.1","tags":["b2b","rush"],"tax_rate":0.07,"timeout":"PT30S","updated_at":"2026-09-05T09:30:00.500000+02:00","version":1,"webhook":"https://hooks.example.com/orders","window":"PT1H30M"}`
)

// BenchmarkManifestPrepare30: warm PrepareRequest and Preparer.Prepare on
// the 30-field order model. Before the normalization existed the same
// calls validated and materialized defaults only; BENCHMARKS.md compares
// the two builds run in turn (BENCH_BEFORE=1 skips the check that the
// arguments come out as pydantic's, which the older build cannot pass).
func BenchmarkManifestPrepare30(b *testing.B) {
	m, args := orderManifest(b)
	var v manifest.Validator
	p, err := v.PrepareRequest(m, args)
	if err != nil {
		b.Fatal(err)
	}
	if got, _ := canon.Marshal(p.Arguments); string(got) != orderNormalized && os.Getenv("BENCH_BEFORE") == "" {
		b.Fatalf("arguments are not pydantic's:\n got %s\nwant %s", got, orderNormalized)
	}
	b.Run("warm", func(b *testing.B) { benchWarmPrepare(b, &v, m, args) })
	b.Run("preparer", func(b *testing.B) { benchPreparer(b, &v, m, args) })
}

// benchWarmPrepare times PrepareRequest on a Validator whose cache holds
// m's schema, with CPU time per call next to wall time.
func benchWarmPrepare(b *testing.B, v *manifest.Validator, m manifest.CapabilityManifest, args map[string]any) {
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if _, err := v.PrepareRequest(m, args); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// benchPreparer times a Preparer for m (made once).
func benchPreparer(b *testing.B, v *manifest.Validator, m manifest.CapabilityManifest, args map[string]any) {
	p, err := v.Preparer(m)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if _, err := p.Prepare(args); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}
