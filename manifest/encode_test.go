package manifest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

func TestMaterializedEncoding(t *testing.T) {
	name := "x"
	m := manifest.CapabilityManifest{
		ID:       manifest.CapabilityID{Namespace: "a", Name: "b", Version: "1.0.0"},
		Examples: []manifest.CapabilityExample{{Name: &name}, {Response: map[string]any{}}},
		Effects:  manifest.CapabilityEffects{Kinds: []manifest.EffectKind{manifest.EffectRead}},
	}
	want := `{"deprecation":{"deprecated":false,"note":null,"successor":null},"description":"",` +
		`"effects":{"concurrency":"","kinds":["read"],"resource_key_fields":[]},"error_codes":[],` +
		`"examples":[{"description":null,"name":"x","request":{},"response":null},{"description":null,"name":null,"request":{},"response":{}}],` +
		`"id":{"name":"b","namespace":"a","version":"1.0.0"},"metadata":{},"projection_name":null,"request_schema":{},` +
		`"requirements":{"binaries":[],"credentials":[],"filesystem":{"read":false,"roles":[],"write":false},"network":{"hosts":[],"required":false},"services":[]},` +
		`"response_schema":{},"schema_version":"","tags":[]}`
	c, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(c) != want || string(j) != want {
		t.Errorf("canon %s\njson  %s\nwant  %s", c, j, want)
	}
	if slow, err := manifest.MarshalReflect(m); err != nil || string(slow) != want {
		t.Errorf("reflection path %s (%v)", slow, err)
	}
	// A non-plain Go value inside a payload takes the reflection path.
	m.Metadata = map[string]any{"n": []int{1, 2}, "s": struct {
		A string `json:"a"`
	}{"x"}}
	if got, err := canon.Marshal(m); err != nil || !strings.Contains(string(got), `"metadata":{"n":[1,2],"s":{"a":"x"}}`) {
		t.Errorf("non-plain metadata: %s (%v)", got, err)
	}
	var keys map[string]any
	_ = json.Unmarshal(c, &keys)
	if len(keys) != 13 {
		t.Errorf("%d keys, want 13", len(keys))
	}
}

// TestLaxDecodeFixedPoint: a lax document decodes to its materialized form,
// which re-encodes and decodes to itself, via both decoders.
func TestLaxDecodeFixedPoint(t *testing.T) {
	lax := `{"id":"ns.sub.cap@1.2.3-rc.1","description":"d","request_schema":{"type":"object"},"response_schema":{},
	"examples":[{"request":{"a":1.5}}],"error_codes":["ZEO_B","ZEO_A","ZEO_B"],
	"effects":{"kinds":["write","read","write"],"concurrency":"serial_per_resource","resource_key_fields":["k","a","k"]},
	"requirements":{"network":{"hosts":["h","h"]}},"tags":["t","t"],"metadata":{"m":[1,1]},"deprecation":{}}`
	m, err := manifest.DecodeManifest([]byte(lax))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"deprecation":{"deprecated":false,"note":null,"successor":null},"description":"d",` +
		`"effects":{"concurrency":"serial_per_resource","kinds":["write","read"],"resource_key_fields":["k","a","k"]},"error_codes":["ZEO_B","ZEO_A"],` +
		`"examples":[{"description":null,"name":null,"request":{"a":1.5},"response":null}],` +
		`"id":{"name":"cap","namespace":"ns.sub","version":"1.2.3-rc.1"},"metadata":{"m":[1,1]},"projection_name":null,"request_schema":{"type":"object"},` +
		`"requirements":{"binaries":[],"credentials":[],"filesystem":{"read":false,"roles":[],"write":false},"network":{"hosts":["h"],"required":false},"services":[]},` +
		`"response_schema":{},"schema_version":"1.0","tags":["t"]}`
	out, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	var viaJSON manifest.CapabilityManifest
	if err := json.Unmarshal([]byte(lax), &viaJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, viaJSON); diff != "" {
		t.Errorf("encoding/json differs:\n%s", diff)
	}
	again, err := manifest.DecodeManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, again); diff != "" {
		t.Errorf("not a fixed point:\n%s", diff)
	}
}

func TestParseCapabilityID(t *testing.T) {
	tests := []struct {
		in   string
		want manifest.CapabilityID
		ok   bool
	}{
		{"google.calendar.event.create@1.0.0", manifest.CapabilityID{Namespace: "google.calendar.event", Name: "create", Version: "1.0.0"}, true},
		{"example.echo@1.0.0", manifest.CapabilityID{Namespace: "example", Name: "echo", Version: "1.0.0"}, true},
		{"example.echo\n@1.0.0", manifest.CapabilityID{Namespace: "example", Name: "echo\n", Version: "1.0.0"}, true},
		{"echo@1.0.0", manifest.CapabilityID{}, false},
		{"example.echo", manifest.CapabilityID{}, false},
		{"example.echo@", manifest.CapabilityID{}, false},
		{"Example.echo@1.0.0", manifest.CapabilityID{}, false},
		{"example.echo@1.0.0@2", manifest.CapabilityID{}, false},
	}
	for _, tt := range tests {
		got, err := manifest.ParseCapabilityID(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseCapabilityID(%q) error %v", tt.in, err)
			continue
		}
		if tt.ok && (got != tt.want || got.String() != tt.in) {
			t.Errorf("ParseCapabilityID(%q) = %+v (%s)", tt.in, got, got)
		}
		if !tt.ok && !errors.Is(err, manifest.ErrInvalidManifest) {
			t.Errorf("ParseCapabilityID(%q) error %v does not wrap ErrInvalidManifest", tt.in, err)
		}
	}
}

func greetManifest(i int) manifest.CapabilityManifest {
	return manifest.CapabilityManifest{
		ID: manifest.CapabilityID{Namespace: "demo", Name: "greet", Version: fmt.Sprintf("1.0.%d", i)},
		RequestSchema: map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string", "default": fmt.Sprintf("World%d", i)}}},
	}
}

// TestValidatorConcurrent shares one Validator between goroutines (run
// under -race) and checks every result against a fresh Validator's.
func TestValidatorConcurrent(t *testing.T) {
	want := make([]canon.Digest, 4)
	for i := range want {
		p, err := manifest.PrepareRequest(greetManifest(i), nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = p.RequestDigest
	}
	var v manifest.Validator
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 50 {
				i := (g + k) % len(want)
				p, err := v.PrepareRequest(greetManifest(i), map[string]any{})
				if err != nil || p.RequestDigest != want[i] {
					errs <- fmt.Errorf("goroutine %d: %v %v", g, p.RequestDigest, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if v.Len() != len(want) {
		t.Errorf("cache has %d entries, want %d", v.Len(), len(want))
	}
}

func TestValidatorBound(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{2, 2}, {-1, 0}, {0, 6}} {
		v := manifest.NewValidator(tt.max)
		for i := range 6 {
			p, err := v.PrepareRequest(greetManifest(i), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Arguments["name"]; got != fmt.Sprintf("World%d", i) {
				t.Errorf("max %d: name %v", tt.max, got)
			}
		}
		if v.Len() != tt.want {
			t.Errorf("NewValidator(%d): %d entries, want %d", tt.max, v.Len(), tt.want)
		}
	}
}

// TestInventoryOrder: set fields sort by code point (U+E000 before
// U+1F600, the opposite of UTF-16 order) and manifests by canonical id.
func TestInventoryOrder(t *testing.T) {
	mk := func(id string, tags ...string) manifest.CapabilityManifest {
		cid, err := manifest.ParseCapabilityID(id)
		if err != nil {
			t.Fatal(err)
		}
		return manifest.CapabilityManifest{ID: cid, Tags: tags, Effects: manifest.CapabilityEffects{Kinds: []manifest.EffectKind{"write", "read"}}}
	}
	in := []manifest.CapabilityManifest{mk("b.x@1.0.0", "\U0001F600", "\uE000", "z"), mk("a.y@2.0.0"), mk("a.y@10.0.0")}
	inv := manifest.Inventory(in)
	var ids []string
	for _, m := range inv {
		ids = append(ids, m.ID.String())
	}
	if !sort.StringsAreSorted(ids) || ids[0] != "a.y@10.0.0" {
		t.Errorf("order %v", ids)
	}
	if diff := cmp.Diff([]string{"z", "\uE000", "\U0001F600"}, inv[2].Tags); diff != "" {
		t.Errorf("tags %s", diff)
	}
	if diff := cmp.Diff([]manifest.EffectKind{"read", "write"}, inv[2].Effects.Kinds); diff != "" {
		t.Errorf("kinds %s", diff)
	}
	if in[0].Tags[0] != "\U0001F600" || in[0].Effects.Kinds[0] != "write" {
		t.Errorf("Inventory modified its input")
	}
}

// TestDigestPathsAgree: a manifest with non-plain Go values (reflection
// path) digests like its plain equivalent (fast path).
func TestDigestPathsAgree(t *testing.T) {
	base := echoManifests(t)[0]
	plain, nonPlain := base, base
	plain.Metadata = map[string]any{"n": []any{int64(1), int64(2)}, "f": 1.5}
	nonPlain.Metadata = map[string]any{"n": []int{1, 2}, "f": float32(1.5)}
	d1, err1 := manifest.InventoryDigest([]manifest.CapabilityManifest{plain})
	d2, err2 := manifest.InventoryDigest([]manifest.CapabilityManifest{nonPlain})
	if err1 != nil || err2 != nil || d1 != d2 {
		t.Errorf("digests %s (%v) vs %s (%v)", d1, err1, d2, err2)
	}
	bad := base
	bad.Metadata = map[string]any{"n": int64(1) << 60}
	if _, err := manifest.InventoryDigest([]manifest.CapabilityManifest{bad}); !errors.Is(err, manifest.ErrInvalidManifest) || !errors.Is(err, canon.ErrUnsafeInteger) {
		t.Errorf("unsafe integer: %v", err)
	}
}
