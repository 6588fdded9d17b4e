package wasm

import (
	"encoding/json"
	"testing"
)

// FuzzParseResponse holds the parser of a module's stdout (untrusted bytes)
// to its contract: no panic on any input, and what it accepts is one JSON
// object that re-encodes and parses to the same Response.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"result":{"a":1}}`, " \n{\"result\":{},\"error\":\"no\"}\n", `{}`, `{"result":null}`,
		`{"result":{}}{"result":{}}`, `[1]`, ``, `{"result":{"a":`, `{"result":"x"}`, "\xff{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := parseResponse(b)
		if err != nil {
			if resp != nil {
				t.Fatalf("an error and a response for %q", b)
			}
			return
		}
		if resp.Result == nil {
			t.Fatalf("accepted %q with a nil result", b)
		}
		again, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("accepted %q, which does not re-encode: %v", b, err)
		}
		resp2, err := parseResponse(again)
		if err != nil {
			t.Fatalf("re-encoded %q does not parse: %v", again, err)
		}
		if resp2.Error != resp.Error {
			t.Fatalf("error %q became %q", resp.Error, resp2.Error)
		}
	})
}
