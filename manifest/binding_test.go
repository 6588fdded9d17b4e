package manifest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
)

type realHost struct {
	FD3    string `json:"fd3_bytes_utf8"`
	Stdout string `json:"stdout_utf8"`
}

func loadRealHost(t testing.TB) realHost {
	t.Helper()
	return testvectors.RealHost[realHost](t, "s08c_list_limit1_offset0")
}

const realInventoryDigest = "sha256:74121e0354ca6e85adf931c872d58c6d9e5ebfbeb62e890e03dd4df86d335753"

// TestRealHostBinding: the binding the real host accepted decodes the same
// way through all three decoders, validates, digests as the host did, and
// re-encodes to the exact bytes sent (it was already canonical and
// materialized).
func TestRealHostBinding(t *testing.T) {
	r := loadRealHost(t)
	b1, err := manifest.DecodeBinding([]byte(r.FD3))
	if err != nil {
		t.Fatal(err)
	}
	var b2, b3 manifest.ProviderBinding
	if err := canon.Unmarshal([]byte(r.FD3), &b2); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(r.FD3), &b3); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(b1, b2); diff != "" {
		t.Errorf("DecodeBinding vs canon.Unmarshal:\n%s", diff)
	}
	if diff := cmp.Diff(b1, b3); diff != "" {
		t.Errorf("DecodeBinding vs encoding/json:\n%s", diff)
	}
	if err := manifest.ValidateBinding(b1); err != nil {
		t.Fatal(err)
	}
	if d, _ := manifest.InventoryDigest(b1.Manifests); d != realInventoryDigest {
		t.Errorf("digest %s", d)
	}
	for name, enc := range map[string]func(any) ([]byte, error){"canon": canon.Marshal, "encoding/json": json.Marshal} {
		out, err := enc(b1)
		if err != nil {
			t.Fatal(err)
		}
		if name == "encoding/json" {
			out, _ = canon.Canonicalize(out)
		}
		if string(out) != r.FD3 {
			t.Errorf("%s re-encoding differs:\n got %s\nwant %s", name, out, r.FD3)
		}
	}
}

// TestRealHostPagination reproduces `capabilities list --limit 1 --offset 0`
// byte for byte.
func TestRealHostPagination(t *testing.T) {
	r := loadRealHost(t)
	b, err := manifest.DecodeBinding([]byte(r.FD3))
	if err != nil {
		t.Fatal(err)
	}
	p, err := manifest.Paginate(b.Manifests, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := canon.Marshal(struct {
		manifest.Page
		ProtocolVersion int    `json:"protocol_version"`
		State           string `json:"state"`
	}{p, 1, "succeeded"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out) + "\n"; got != r.Stdout {
		t.Errorf("stdout\n got %s\nwant %s", got, r.Stdout)
	}
}

func TestPaginate(t *testing.T) {
	r := loadRealHost(t)
	b, _ := manifest.DecodeBinding([]byte(r.FD3))
	ms := b.Manifests
	ids := func(p manifest.Page) []string {
		var s []string
		for _, m := range p.Capabilities {
			s = append(s, m.ID.String())
		}
		return s
	}
	intp := func(i int) *int { return &i }
	tests := []struct {
		limit, offset int
		want          []string
		next          *int
	}{
		{1, 0, []string{"example.echo@1.0.0"}, intp(1)},
		{1, 1, []string{"example.two_effects@1.0.0"}, nil},
		{20, 0, []string{"example.echo@1.0.0", "example.two_effects@1.0.0"}, nil},
		{100, 2, nil, nil},
		{1, 99, nil, nil},
	}
	for _, tt := range tests {
		p, err := manifest.Paginate(ms, tt.limit, tt.offset)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, ids(p)); diff != "" {
			t.Errorf("limit %d offset %d: %s", tt.limit, tt.offset, diff)
		}
		if diff := cmp.Diff(tt.next, p.NextOffset); diff != "" {
			t.Errorf("limit %d offset %d next: %s", tt.limit, tt.offset, diff)
		}
		if out, _ := canon.Marshal(p); tt.want == nil && !strings.Contains(string(out), `"capabilities":[]`) {
			t.Errorf("empty page encodes as %s", out)
		}
	}
	for _, bad := range [][2]int{{0, 0}, {101, 0}, {-1, 0}, {1, -1}} {
		if _, err := manifest.Paginate(ms, bad[0], bad[1]); !errors.Is(err, manifest.ErrPagination) {
			t.Errorf("Paginate(%d,%d) = %v", bad[0], bad[1], err)
		}
	}
	d, err := manifest.Describe(ms, "example.two_effects@1.0.0")
	if err != nil || d.ID.Name != "two_effects" {
		t.Errorf("Describe = %v, %v", d.ID, err)
	}
	if _, err := manifest.Describe(ms, "example.nope@1.0.0"); !errors.Is(err, manifest.ErrUnknownCapability) {
		t.Errorf("Describe unknown = %v", err)
	}
}

// TestNestedDecodeErrors: a binding nested in a larger wire document (as
// LaunchContext.provider is) keeps its *ValidationError through both
// decoders, so callers can still read the capability and pointer.
func TestNestedDecodeErrors(t *testing.T) {
	type envelope struct {
		Provider manifest.ProviderBinding `json:"provider"`
	}
	bad := build(t, []mutation{{ptr: "/manifests/0/effects/kinds", val: arr("teleport")}}, false)
	doc := []byte(`{"provider":` + string(bad) + `}`)
	var e1, e2 envelope
	for name, err := range map[string]error{
		"canon":         canon.Unmarshal(doc, &e1),
		"encoding/json": json.Unmarshal(doc, &e2),
	} {
		var ve *manifest.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, manifest.ErrInvalidManifest) {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if ve.CapabilityID != echoID || ve.Pointer != "/manifests/0/effects/kinds/0" {
			t.Errorf("%s: %q at %q", name, ve.CapabilityID, ve.Pointer)
		}
	}
	good := []byte(`{"provider":` + loadRealHost(t).FD3 + `}`)
	if err := canon.Unmarshal(good, &e1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(good, &e2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e1, e2); diff != "" || manifest.ValidateBinding(e1.Provider) != nil {
		t.Errorf("nested decode differs or invalid:\n%s", diff)
	}
}

// TestDecodeRefusalsAreTold checks that a document refused before it is
// decoded says why: too large (canon.ErrTooLarge, rule "json.size") is
// told apart from the strict-JSON rules (a duplicate key here), by
// errors.Is and in the text, for bindings, manifests and arguments.
func TestDecodeRefusalsAreTold(t *testing.T) {
	// A binding of many capabilities is one large document: past the
	// limit, whatever it holds.
	big := []byte(`{"manifests":[` + strings.Repeat(`{"id":{"namespace":"n","name":"x","version":"1.0.0"}},`, canon.DefaultMaxBytes/50) + `{}]}`)
	dup := []byte(`{"distribution":"a","distribution":"b"}`)
	echo := echoManifests(t)[0]
	for _, tt := range []struct {
		name     string
		decode   func([]byte) error
		sentinel error
	}{
		{"binding", func(b []byte) error { _, err := manifest.DecodeBinding(b); return err }, manifest.ErrInvalidBinding},
		{"manifest", func(b []byte) error { _, err := manifest.DecodeManifest(b); return err }, manifest.ErrInvalidManifest},
		{"arguments", func(b []byte) error {
			_, err := manifest.NewValidator(0).PrepareRequestJSON(echo, b)
			return err
		}, manifest.ErrInvalidArguments},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode(big)
			var ve *manifest.ValidationError
			if !errors.Is(err, canon.ErrTooLarge) || !errors.Is(err, tt.sentinel) || !errors.As(err, &ve) {
				t.Fatalf("%d bytes: %v, want %v wrapping canon.ErrTooLarge", len(big), err, tt.sentinel)
			}
			if !strings.HasSuffix(ve.Rule, "json.size") || !strings.Contains(err.Error(), "too large") || strings.Contains(err.Error(), "not strict JSON") {
				t.Errorf("too large: rule %q, text %q; want rule json.size and the words too large", ve.Rule, err)
			}
			err = tt.decode(dup)
			if !errors.Is(err, canon.ErrDuplicateKey) || errors.Is(err, canon.ErrTooLarge) {
				t.Fatalf("duplicate key: %v, want canon.ErrDuplicateKey only", err)
			}
			if !strings.Contains(err.Error(), "not strict JSON: duplicate object key") {
				t.Errorf("duplicate key: %q, want it named", err)
			}
		})
	}
}
