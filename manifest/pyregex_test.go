package manifest_test

import (
	"errors"
	"testing"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// TestPatternDialect: "pattern" behaves as Python's re.search does for the
// instance strings below (expected verdicts are Python's).
// TestPatternDialectRefusesInexactClasses: \W and \S inside brackets have no
// exact RE2 translation, so such a schema is refused, not narrowed to ASCII.
func TestPatternDialectRefusesInexactClasses(t *testing.T) {
	var v manifest.Validator
	for _, pat := range []string{`^[\W]$`, `^[a\S]$`} {
		m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "p", Name: "q", Version: "1.0.0"},
			RequestSchema: map[string]any{"properties": map[string]any{"s": map[string]any{"type": "string", "pattern": pat}}}}
		if _, err := v.PrepareRequest(m, map[string]any{"s": "x"}); !errors.Is(err, manifest.ErrInvalidSchema) {
			t.Errorf("pattern %q: error %v, want ErrInvalidSchema", pat, err)
		}
	}
}

func TestPatternDialect(t *testing.T) {
	tests := []struct {
		pattern, s string
		match      bool
	}{
		{`^\w+$`, "été", true},
		{`^\w+$`, "a-b", false},
		{`^\d+$`, "12\u0663", true},
		{`^\d+$`, "1a", false},
		{`^[\d-]+$`, "1-\u0663", true},
		{`^[\w.]+$`, "é.x", true},
		{`^a$`, "a\n", true},
		{`^a$`, "a\n\n", false},
		{`^a\Z`, "a\n", false},
		{`^\s$`, "\u00a0", true},
		{`^\S+$`, "a\u00a0", false},
		{`^[]a]+$`, "]a", true},
		{`^[^]a]+$`, "b", true},
		{`\$`, "cost $", true},
		{`[$]`, "$", true},
		{`b`, "abc", true}, // search, not match
		{`^\W$`, "é", false},
		{`^[\D]$`, "\u0663", false}, // Python's \D is Unicode inside brackets too
		{`^[\D]$`, "a", true},
		// pydantic's Decimal patterns (plain, decimal_places, max_digits),
		// their look-aheads included; results from Python's re.search.
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "1.5", true},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "-", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "+.", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "-.\n", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "1e3", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "abc", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "1.234", true},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "\u0661.5", true},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$`, "", false},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "1.5", true},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "-", false},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "+.", false},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "-.\n", false},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "1e3", true},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "abc", true},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "1.234", true},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "\u0661.5", true},
		{`^(?!^[-+.]*$)[+-]?0*(?:\d{0,3}|(?=[\d.]{1,6}0*$)\d{0,3}\.\d{0,2}0*$)`, "", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "1.5", true},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "-", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "+.", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "-.\n", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "1e3", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "abc", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "1.234", false},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "\u0661.5", true},
		{`^(?!^[-+.]*$)[+-]?0*\d*\.?\d{0,2}0*$`, "", false},
	}
	var v manifest.Validator
	for _, tt := range tests {
		m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "p", Name: "q", Version: "1.0.0"},
			RequestSchema: map[string]any{"properties": map[string]any{"s": map[string]any{"type": "string", "pattern": tt.pattern}}}}
		_, err := v.PrepareRequest(m, map[string]any{"s": tt.s})
		if got := err == nil; got != tt.match {
			t.Errorf("pattern %q on %q: match %v, want %v (%v)", tt.pattern, tt.s, got, tt.match, err)
		}
		if err != nil && !errors.Is(err, manifest.ErrInvalidArguments) {
			t.Errorf("pattern %q: %v", tt.pattern, err)
		}
	}
	// RE2 has no look-around: such a schema is refused, never mis-run
	// (only a leading negative look-ahead, which pydantic writes for
	// Decimal, runs as a separate check).
	m := manifest.CapabilityManifest{RequestSchema: map[string]any{"pattern": `a(?=b)`}}
	if _, err := v.PrepareRequest(m, map[string]any{}); !errors.Is(err, manifest.ErrInvalidSchema) {
		t.Errorf("look-ahead pattern: %v", err)
	}
}
