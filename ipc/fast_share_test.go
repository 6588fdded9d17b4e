package ipc

import (
	"testing"
	"unsafe"
)

// TestCursorSharing: the strings inside arguments share one copy of the
// payload, while identifiers a handler may keep (logical_effect_id, …) are
// copied alone, so keeping one does not keep the whole payload alive.
func TestCursorSharing(t *testing.T) {
	raw := []byte(`{"arguments":{"a":"first value","b":"second value"},"connection_ref":"connection-a",` +
		`"connector_revision":"sha256:1111111111111111111111111111111111111111111111111111111111111111",` +
		`"logical_effect_id":"effect-1","operation":"write"}`)
	p, ok := effectFast(raw)
	if !ok {
		t.Fatal("effectFast refused a canonical payload")
	}
	addr := func(s string) uintptr { return uintptr(unsafe.Pointer(unsafe.StringData(s))) }
	a, b := addr(p.Arguments["a"].(string)), addr(p.Arguments["b"].(string))
	// Both values lie in one copy of raw: their distance is their distance
	// in raw.
	if d := int(b) - int(a); d != len(`first value","b":"`) {
		t.Errorf("argument strings are %d bytes apart, want them in one shared copy", d)
	}
	first := indexQuoted(raw, "first value")
	for name, id := range map[string]string{"logical_effect_id": p.LogicalEffectID, "operation": p.Operation,
		"connection_ref": p.ConnectionRef, "connector_revision": string(p.ConnectorRevision)} {
		// Sharing would put id exactly where it stands in raw relative to
		// the first argument value.
		if int(addr(id))-int(a) == indexQuoted(raw, id)-first {
			t.Errorf("%s shares the payload copy", name)
		}
	}
}

// indexQuoted returns the offset in raw of the text of the string token
// "s".
func indexQuoted(raw []byte, s string) int {
	q := `"` + s + `"`
	for i := 0; i+len(q) <= len(raw); i++ {
		if string(raw[i:i+len(q)]) == q {
			return i + 1
		}
	}
	return -1
}
