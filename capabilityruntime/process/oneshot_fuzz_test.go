//go:build unix

package process

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParseResponse feeds parseResponse what a one-shot runtime may write:
// it never panics, and what it accepts is one object whose re-encoding it
// accepts again, with the same content.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		`{"result":{"a":1}}`, `{"result":{},"error":"x"}` + "\n", ` {"result":null} `, `{}`,
		`starting up...` + "\n" + `{"result":{}}`, `{"result":{}}{"result":{}}`, `[]`, `{"result":[1]}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := parseResponse(b)
		if err != nil {
			return
		}
		if resp.Result == nil {
			t.Fatal("accepted a response with a nil result")
		}
		again, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", resp, err)
		}
		back, err := parseResponse(again)
		if err != nil {
			t.Fatalf("the re-encoding %s of accepted input %q is refused: %v", again, b, err)
		}
		if diff := cmp.Diff(resp, back); diff != "" {
			t.Fatalf("round trip changed the response (-first +second):\n%s", diff)
		}
	})
}
