package manifest_test

import (
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// TestMultipleOfAsPython: "multipleOf" gives the answers of the host's
// Python jsonschema (floating-point division for a float divisor, exact
// fractions when the quotient overflows), not exact decimal division.
func TestMultipleOfAsPython(t *testing.T) {
	tests := []struct {
		divisor string
		value   string
		ok      bool
	}{
		{"0.1", "0.5", true}, {"0.1", "0.3", false}, {"0.1", "0.7", false}, {"0.1", "1.1", true}, {"0.1", "3", true},
		{"0.1", "12.3", true}, {"0.1", "3.8000000000000003", true}, {"0.1", "-7.1000000000000005", true}, {"0.1", "1e308", false},
		{"1e-300", "1e308", false}, {"1e-300", "3e-300", true},
		{"3", "9", true}, {"3", "9.0", true}, {"3", "10", false}, {"3", "-6", true}, {"3", "4.5", false},
		{"0.5", "1.5", true}, {"0.5", "2", true}, {"0.5", "0.25", false},
	}
	var v manifest.Validator
	for _, tt := range tests {
		var schema map[string]any
		if err := canon.Unmarshal([]byte(`{"properties":{"x":{"anyOf":[{"multipleOf":`+tt.divisor+`},{"type":"string"}]}}}`), &schema); err != nil {
			t.Fatal(err)
		}
		m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "m", Name: "o", Version: "1.0.0"}, RequestSchema: schema}
		_, err := v.PrepareRequestJSON(m, []byte(`{"x":`+tt.value+`}`))
		if got := err == nil; got != tt.ok {
			t.Errorf("%s multipleOf %s: accepted %v, Python's jsonschema %v (%v)", tt.value, tt.divisor, got, tt.ok, err)
		}
	}
}
