package canon_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
)

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func checkCanonical(t *testing.T, name string, in []byte, want string, wantDigest canon.Digest) {
	t.Helper()
	got, err := canon.Canonicalize(in)
	if err != nil {
		t.Errorf("%s: Canonicalize(%s): %v", name, in, err)
		return
	}
	if string(got) != want {
		t.Errorf("%s: Canonicalize(%s)\n got %s\nwant %s", name, in, got, want)
	}
	// The parsed form must agree with the one-pass canonicalizer.
	v, err := canon.Parse(in)
	if err != nil {
		t.Errorf("%s: Parse: %v", name, err)
		return
	}
	if viaValue, err := v.Canonical(); err != nil || string(viaValue) != want {
		t.Errorf("%s: Parse+Canonical = %s, %v; want %s", name, viaValue, err, want)
	}
	if wantDigest != "" {
		if d, err := canon.DigestJSON(in); err != nil || d != wantDigest {
			t.Errorf("%s: DigestJSON = %s, %v; want %s", name, d, err, wantDigest)
		}
	}
}

func TestCanonicalVectors(t *testing.T) {
	var file struct {
		Valid []struct {
			Name      string
			Input     json.RawMessage
			Canonical string
		}
		InvalidJSON []string `json:"invalid_json"`
	}
	readJSON(t, "testdata/canonical-vectors.json", &file)
	inline := testvectors.Inline[struct {
		Derived struct {
			Sums map[string]canon.Digest `json:"canonical_vectors_sha256"`
		}
	}](t)
	if len(file.Valid) != 6 || len(file.InvalidJSON) != 7 {
		t.Fatalf("vector file has %d valid and %d invalid cases, want 6 and 7", len(file.Valid), len(file.InvalidJSON))
	}
	for _, c := range file.Valid {
		want := inline.Derived.Sums[c.Name]
		if want == "" {
			t.Errorf("%s: no derived digest", c.Name)
		}
		checkCanonical(t, c.Name, c.Input, c.Canonical, want)
	}
	for _, in := range file.InvalidJSON {
		assertRefused(t, []byte(in))
	}
}

func assertRefused(t *testing.T, in []byte) {
	t.Helper()
	if out, err := canon.Canonicalize(in); err == nil {
		t.Errorf("Canonicalize(%q) = %q, want an error", in, out)
	} else if e := (*canon.Error)(nil); !errors.As(err, &e) {
		t.Errorf("Canonicalize(%q): error %v is not a *canon.Error", in, err)
	}
	if _, err := canon.Parse(in); err == nil {
		t.Errorf("Parse(%q) succeeded, want an error", in)
	}
}

func TestJCSSharedVectors(t *testing.T) {
	var file struct {
		Valid []struct {
			Name          string
			InputJSON     string `json:"input_json"`
			CanonicalText string `json:"canonical_text"`
			SHA256        string
		}
		Invalid []struct {
			Name      string
			InputJSON string `json:"input_json"`
		}
	}
	readJSON(t, "testdata/jcs-shared-vectors-v1.json", &file)
	if len(file.Valid) != 13 || len(file.Invalid) != 7 {
		t.Fatalf("vector file has %d valid and %d invalid cases, want 13 and 7", len(file.Valid), len(file.Invalid))
	}
	for _, c := range file.Valid {
		if _, err := hex.DecodeString(c.SHA256); err != nil {
			t.Fatalf("%s: bad sha256 %q", c.Name, c.SHA256)
		}
		checkCanonical(t, c.Name, []byte(c.InputJSON), c.CanonicalText, canon.Digest("sha256:"+c.SHA256))
	}
	for _, c := range file.Invalid {
		assertRefused(t, []byte(c.InputJSON))
	}
}

func TestInlineVectors(t *testing.T) {
	file := testvectors.Inline[struct {
		Upstream struct {
			Refuse struct {
				Raw []string
			} `json:"strict_json_must_refuse"`
			Produce struct {
				Cases []struct {
					InputJSON string `json:"input_json"`
					Canonical string
				}
			} `json:"jcs_must_produce"`
		} `json:"upstream_inline"`
	}](t)
	if len(file.Upstream.Refuse.Raw) != 7 || len(file.Upstream.Produce.Cases) != 4 {
		t.Fatalf("inline vectors: %d refusals, %d productions; want 7 and 4", len(file.Upstream.Refuse.Raw), len(file.Upstream.Produce.Cases))
	}
	for _, raw := range file.Upstream.Refuse.Raw {
		assertRefused(t, []byte(raw))
	}
	for i, c := range file.Upstream.Produce.Cases {
		checkCanonical(t, "jcs_must_produce/"+string(rune('0'+i)), []byte(c.InputJSON), c.Canonical, "")
	}
}
