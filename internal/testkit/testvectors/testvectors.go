// Package testvectors holds the test vectors of the runtime host protocol
// once, embedded, for the tests of every package of the module: the inline
// vectors (zeo-inline-vectors.json), the JSON Schemas upstream generates
// for its wire models, and the transcripts captured from the real host
// (see testdata/README.md). Each test reads the part it needs through its
// own view type: Inline[T] and RealHost[T] decode a file into a T with
// encoding/json, so a package declares only the fields it checks.
//
// It imports only the standard library, so that white-box tests of any
// package (canon's included) may use it.
package testvectors

import (
	"embed"
	"encoding/json"
	"io/fs"
	"path"
	"strings"
	"testing"
)

//go:embed testdata
var files embed.FS

// InlineFile is the name of the inline vectors' file.
const InlineFile = "zeo-inline-vectors.json"

// File returns the bytes of the vector file name, a path below testdata
// (for example "host-result.schema.json" or
// "real-host/s01_echo_success.json"). A missing file fails t.
func File(t testing.TB, name string) []byte {
	t.Helper()
	b, err := files.ReadFile(path.Join("testdata", name))
	if err != nil {
		t.Fatalf("testvectors: %v", err)
	}
	return b
}

// Decode decodes the vector file name into a T with encoding/json.
func Decode[T any](t testing.TB, name string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(File(t, name), &v); err != nil {
		t.Fatalf("testvectors: %s: %v", name, err)
	}
	return v
}

// Inline decodes the inline vectors into a T.
func Inline[T any](t testing.TB) T {
	t.Helper()
	return Decode[T](t, InlineFile)
}

// RealHost decodes the real-host transcript name (its file name without
// ".json", one of RealHostNames) into a T.
func RealHost[T any](t testing.TB, name string) T {
	t.Helper()
	return Decode[T](t, "real-host/"+name+".json")
}

// RealHostNames returns the names of the real-host transcripts, sorted.
func RealHostNames() []string {
	entries, err := fs.ReadDir(files, "testdata/real-host")
	if err != nil {
		return nil // unreachable: the folder is embedded
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	return names
}

// Frames returns the body of every request and every reply the vectors
// record, in file order: the worked example's frames and its effect
// request, then each real-host transcript's exchanges. They seed fuzz
// targets and check decoders against recorded bytes.
func Frames(t testing.TB) (requests, replies [][]byte) {
	t.Helper()
	v := Inline[struct {
		Derived struct {
			WorkedExample struct {
				Frames []struct {
					Body      string `json:"request_frame_body"`
					ReplyBody string `json:"reply_frame_body"`
				} `json:"frames"`
				EffectMessage string `json:"effect_request_message_canonical_seq3"`
			} `json:"worked_example"`
		} `json:"derived"`
	}](t)
	for _, fr := range v.Derived.WorkedExample.Frames {
		requests = append(requests, []byte(fr.Body))
		replies = append(replies, []byte(fr.ReplyBody))
	}
	requests = append(requests, []byte(v.Derived.WorkedExample.EffectMessage))
	for _, name := range RealHostNames() {
		tr := RealHost[struct {
			Exchanges []struct {
				Request struct {
					Body string `json:"body_utf8"`
				} `json:"request"`
				Reply struct {
					Body string `json:"body_utf8"`
				} `json:"reply"`
			} `json:"exchanges"`
		}](t, name)
		for _, ex := range tr.Exchanges {
			requests = append(requests, []byte(ex.Request.Body))
			replies = append(replies, []byte(ex.Reply.Body))
		}
	}
	return requests, replies
}
