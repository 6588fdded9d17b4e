package zeohost

import (
	"encoding/json"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// FuzzParse feeds request params and spec configs decoded from arbitrary
// JSON to the parsers of Execute and Start: neither may panic, and what
// they accept must name an operation and a capability, or a binding and a
// scope.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"capability_id":"example.echo@1.0.0","arguments":{"text":"x"},"operation_id":"op"}`))
	f.Add([]byte(`{"capability_id":"a","arguments":null}`))
	f.Add([]byte(`{"binding":{},"scope":{"organization_id":"o","project_id":"p"},"effect_budget":1e300}`))
	f.Add([]byte(`{"capability_id":1,"arguments":[1,{"a":9007199254740993}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		if c, err := parseRequest(&capabilityruntime.Request{Params: m}); err == nil && (c.operationID == "" || c.arguments == nil) {
			t.Fatalf("accepted %s as %+v", raw, c)
		}
		spec := capabilityruntime.BackendSpec{Type: "acme:x", Version: "1", Entrypoint: "python3", RootDir: "/env", Config: m}
		if is, err := parseSpec(spec, ""); err == nil && (is.scope.Validate() != nil || is.interpreter != "/env/python3") {
			t.Fatalf("accepted %s as %+v", raw, is)
		}
	})
}
