package canon_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// TestCyberphoneVectors runs the RFC 8785 test data of the RFC author's
// reference implementation (copied into testdata/cyberphone): every input
// must canonicalize to exactly the bytes of output/ and of outhex/.
func TestCyberphoneVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/cyberphone/input/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 6 {
		t.Fatalf("found %d cyberphone inputs, want 6", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			src := mustRead(t, in)
			want := mustRead(t, filepath.Join("testdata/cyberphone/output", name+".json"))
			// The output files end with no newline; the hex files spell the
			// same bytes with spaces and line breaks.
			hexText := strings.Join(strings.Fields(string(mustRead(t, filepath.Join("testdata/cyberphone/outhex", name+".txt")))), "")
			wantHex, err := hex.DecodeString(hexText)
			if err != nil {
				t.Fatalf("outhex: %v", err)
			}
			if !bytes.Equal(want, wantHex) {
				t.Fatalf("output/%s.json and outhex/%s.txt disagree", name, name)
			}
			got, err := canon.Canonicalize(src)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Canonicalize:\n got %x\nwant %x", got, want)
			}
			v, err := canon.Parse(src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if viaValue, err := v.Canonical(); err != nil || !bytes.Equal(viaValue, want) {
				t.Errorf("Parse+Canonical = %s, %v; want %s", viaValue, err, want)
			}
		})
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
