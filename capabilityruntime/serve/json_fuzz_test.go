package serve

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzDecodeRequest feeds decodeRequest arbitrary stdin: it never panics, and
// what it accepts survives a re-encoding unchanged.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{`{"params":{"a":[1,"x",null]}}`, `{"params":null}`, `{}`, `{"params":{}} {}`, `[]`, ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRequest(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("re-encoding %+v: %v", req, err)
		}
		back, err := decodeRequest(again)
		if err != nil {
			t.Fatalf("the re-encoding %s of accepted input %q is refused: %v", again, b, err)
		}
		if diff := cmp.Diff(req, back); diff != "" {
			t.Fatalf("round trip changed the request (-first +second):\n%s", diff)
		}
	})
}
