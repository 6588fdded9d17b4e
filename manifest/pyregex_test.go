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
	// RE2 has no look-around: such a schema is refused, never mis-run.
	m := manifest.CapabilityManifest{RequestSchema: map[string]any{"pattern": `^(?!x)`}}
	if _, err := v.PrepareRequest(m, map[string]any{}); !errors.Is(err, manifest.ErrInvalidSchema) {
		t.Errorf("look-ahead pattern: %v", err)
	}
}
