package manifest_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
)

type inlineVectors struct {
	Derived struct {
		WorkedExample struct {
			EchoInventoryCanonical string       `json:"echo_manifest_inventory_canonical"`
			EchoManifestDigest     canon.Digest `json:"echo_manifest_digest"`
			EmptyInventoryDigest   canon.Digest `json:"empty_inventory_digest"`
			RequestPreimage        string       `json:"request_binding_preimage_canonical"`
			RequestDigest          canon.Digest `json:"request_digest"`
		} `json:"worked_example"`
		Normalization struct {
			ManifestsAsSent    json.RawMessage `json:"manifests_as_sent"`
			InventoryCanonical string          `json:"inventory_canonical"`
			ManifestDigest     canon.Digest    `json:"manifest_digest"`
			RawDigest          canon.Digest    `json:"digest_of_manifests_as_sent_without_normalization"`
		} `json:"manifest_normalization_example"`
		Catalogue struct {
			RawArguments      map[string]any `json:"raw_arguments"`
			PreimageCanonical string         `json:"normalized_preimage_canonical"`
			RequestDigest     canon.Digest   `json:"request_digest"`
		} `json:"catalogue_example_request"`
	} `json:"derived"`
}

// echoManifests decodes the echo inventory of the worked example.
func echoManifests(t testing.TB) []manifest.CapabilityManifest {
	t.Helper()
	v := testvectors.Inline[inlineVectors](t)
	var ms []manifest.CapabilityManifest
	if err := canon.Unmarshal([]byte(v.Derived.WorkedExample.EchoInventoryCanonical), &ms); err != nil {
		t.Fatal(err)
	}
	return ms
}

func TestEmptyInventoryDigest(t *testing.T) {
	v := testvectors.Inline[inlineVectors](t)
	for _, ms := range [][]manifest.CapabilityManifest{nil, {}} {
		d, err := manifest.InventoryDigest(ms)
		if err != nil {
			t.Fatal(err)
		}
		if d != v.Derived.WorkedExample.EmptyInventoryDigest {
			t.Errorf("InventoryDigest(%v) = %s, want %s", ms, d, v.Derived.WorkedExample.EmptyInventoryDigest)
		}
	}
}

func TestEchoManifestDigest(t *testing.T) {
	v := testvectors.Inline[inlineVectors](t)
	ms := echoManifests(t)
	got, err := manifest.InventoryJSON(ms)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v.Derived.WorkedExample.EchoInventoryCanonical, string(got)); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	if d != v.Derived.WorkedExample.EchoManifestDigest {
		t.Errorf("digest %s, want %s", d, v.Derived.WorkedExample.EchoManifestDigest)
	}
}

func TestManifestNormalizationExample(t *testing.T) {
	v := testvectors.Inline[inlineVectors](t).Derived.Normalization
	// Both decoders must agree.
	var viaCanon, viaJSON []manifest.CapabilityManifest
	if err := canon.Unmarshal(v.ManifestsAsSent, &viaCanon); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(v.ManifestsAsSent, &viaJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(viaCanon, viaJSON); diff != "" {
		t.Fatalf("canon vs encoding/json decode (-canon +json):\n%s", diff)
	}
	got, err := manifest.InventoryJSON(viaCanon)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v.InventoryCanonical, string(got)); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
	d, err := manifest.InventoryDigest(viaCanon)
	if err != nil {
		t.Fatal(err)
	}
	if d != v.ManifestDigest {
		t.Errorf("digest %s, want %s", d, v.ManifestDigest)
	}
	if d == v.RawDigest {
		t.Errorf("digest equals the digest of the unnormalized input")
	}
}
