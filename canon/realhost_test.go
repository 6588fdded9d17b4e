package canon_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
)

type transcript struct {
	Name      string `json:"scenario"`
	FD3       string `json:"fd3_bytes_utf8"`
	Stdin     string `json:"stdin_bytes_utf8"`
	Stdout    string `json:"stdout_utf8"`
	Exchanges []struct {
		Request struct {
			Body        string       `json:"body_utf8"`
			Digest      canon.Digest `json:"request_digest"`
			IsCanonical bool         `json:"body_is_canonical"`
		}
		Reply struct {
			Body   string       `json:"body_utf8"`
			Digest canon.Digest `json:"body_sha256"`
		}
	}
	LaunchDigest *struct {
		SentByHost canon.Digest `json:"sent_by_host"`
	} `json:"launch_digest"`
	StdoutIsCanonical bool `json:"stdout_is_canonical_line"`
}

func realHostTranscripts(t *testing.T) []transcript {
	t.Helper()
	names := testvectors.RealHostNames()
	if len(names) != 4 {
		t.Fatalf("want 4 real-host transcripts, found %d", len(names))
	}
	var out []transcript
	for _, name := range names {
		out = append(out, testvectors.RealHost[transcript](t, name))
	}
	return out
}

// TestRealHostDigests checks our bytes against frames captured from the
// real Python host: every frame it sent is canonical as we write it and
// its request digest is ours, every digest the test peer sent is ours, and
// the launch digest the host computed over the context it parsed is our
// digest of the bytes the peer wrote.
func TestRealHostDigests(t *testing.T) {
	frames := 0
	for _, tr := range realHostTranscripts(t) {
		for i, x := range tr.Exchanges {
			body := []byte(x.Request.Body)
			got, err := canon.Canonicalize(body)
			if err != nil {
				t.Fatalf("%s exchange %d: %v", tr.Name, i, err)
			}
			if x.Request.IsCanonical != (string(got) == x.Request.Body) {
				t.Errorf("%s exchange %d: host frame canonical=%v, ours says %v", tr.Name, i, x.Request.IsCanonical, !x.Request.IsCanonical)
			}
			if d, err := canon.DigestJSON(body); err != nil || d != x.Request.Digest {
				t.Errorf("%s exchange %d: request digest %s, %v; want %s", tr.Name, i, d, err, x.Request.Digest)
			}
			sum := sha256.Sum256(body)
			if canon.Sum(body) != canon.Digest("sha256:"+hex.EncodeToString(sum[:])) {
				t.Errorf("Sum disagrees with sha256")
			}
			if x.Reply.Digest != "" && canon.Sum([]byte(x.Reply.Body)) != x.Reply.Digest {
				t.Errorf("%s exchange %d: reply body digest mismatch", tr.Name, i)
			}
			frames++
		}
		if tr.LaunchDigest != nil {
			if d, err := canon.DigestJSON([]byte(tr.FD3)); err != nil || d != tr.LaunchDigest.SentByHost {
				t.Errorf("%s: launch digest %s, %v; host sent %s", tr.Name, d, err, tr.LaunchDigest.SentByHost)
			}
		}
		if tr.StdoutIsCanonical {
			line := []byte(tr.Stdout)
			if n := len(line); n > 0 && line[n-1] == '\n' {
				line = line[:n-1]
			}
			if got, err := canon.Canonicalize(line); err != nil || string(got) != string(line) {
				t.Errorf("%s: stdout line is not canonical by our rules: %v", tr.Name, err)
			}
		}
	}
	if frames < 8 {
		t.Errorf("checked only %d host frames", frames)
	}
}
