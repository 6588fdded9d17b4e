package launch

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// TestLaunchDigestMatchesSentBytes checks the spliced encoding and launch
// digest against the definitions: the whole context encoded at once, and
// the digest of the very bytes sent, parsed, with provider.manifests
// swapped for the projection.
func TestLaunchDigestMatchesSentBytes(t *testing.T) {
	// The invoke transcripts (s08c is discovery: its FD 3 is a binding), and
	// s01 with strings that spell the spliced member.
	for _, name := range []string{"s01_echo_success", "s02_two_effects_success", "s04_effect_needs_reconciliation", "s01_echo_success+member"} {
		name, tricky := strings.CutSuffix(name, "+member")
		rh := testvectors.RealHost[struct {
			FD3 string `json:"fd3_bytes_utf8"`
		}](t, name)
		c, err := DecodeContext([]byte(rh.FD3))
		if err != nil {
			t.Fatal(err)
		}
		if tricky {
			name = "s01 with spliced-member strings"
			c.Workspace = string(manifestsMember)
			c.BootstrapID = `"manifests":[]"manifests":[]`
			c.Services = []string{"manifests", string(manifestsMember)}
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		v, err := canon.Parse(enc.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		inv, err := manifest.InventoryJSON(c.Provider.Manifests)
		if err != nil {
			t.Fatal(err)
		}
		proj, err := canon.Parse(inv)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := v.Get("provider")
		m, ok := p.Get("manifests")
		if !ok {
			t.Fatal("no provider.manifests in the sent bytes")
		}
		*m = proj
		want, err := v.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if got := canon.Sum(want); enc.LaunchDigest != got {
			t.Errorf("%s: launch digest %s, the sent bytes give %s", name, enc.LaunchDigest, got)
		}
		// The spliced encoding is the whole encoding, and the fallback
		// (encode and parse back) agrees.
		whole, err := canon.Marshal(enc.Context)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(whole, enc.Bytes) {
			t.Errorf("%s: spliced bytes differ from the whole encoding:\n%s\n%s", name, enc.Bytes, whole)
		}
		if d, err := launchDigest(enc.Context, inv); err != nil || d != enc.LaunchDigest {
			t.Errorf("%s: fallback launch digest %s, %v; spliced %s", name, d, err, enc.LaunchDigest)
		}
	}
}

// TestOutputReadFrom checks that the stdout head and stderr tail keep the
// same bytes and counts whether exec feeds them through ReadFrom (its path
// for a pipe), in reads of any size, or through Write.
func TestOutputReadFrom(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*copyChunk/16+5)
	for _, in := range [][]byte{nil, []byte("one line\n"), big} {
		for _, max := range []int{0, 1, 7, copyChunk, len(big) + 1} {
			hw, hr := &headWriter{max: max}, &headWriter{max: max}
			tw, tr := &tailWriter{max: max}, &tailWriter{max: max}
			hw.Write(in)
			tw.Write(in)
			if n, err := hr.ReadFrom(iotest.HalfReader(bytes.NewReader(in))); err != nil || n != int64(len(in)) {
				t.Fatalf("head ReadFrom: %d, %v", n, err)
			}
			if n, err := tr.ReadFrom(iotest.OneByteReader(bytes.NewReader(in))); err != nil || n != int64(len(in)) {
				t.Fatalf("tail ReadFrom: %d, %v", n, err)
			}
			wb, wn := hw.result()
			rb, rn := hr.result()
			if !bytes.Equal(wb, rb) || wn != rn || len(rb) != min(max, len(in)) || !bytes.HasPrefix(in, rb) {
				t.Errorf("head max %d over %d bytes: ReadFrom kept %d/%d, Write %d/%d", max, len(in), len(rb), rn, len(wb), wn)
			}
			wb, wn = tw.result()
			rb, rn = tr.result()
			if !bytes.Equal(wb, rb) || wn != rn || len(rb) != min(max, len(in)) || !bytes.HasSuffix(in, rb) {
				t.Errorf("tail max %d over %d bytes: ReadFrom kept %d/%d, Write %d/%d", max, len(in), len(rb), rn, len(wb), wn)
			}
		}
	}
}

// TestOutputReadFromError checks that a read error other than EOF is
// returned with the bytes counted so far.
func TestOutputReadFromError(t *testing.T) {
	w := &headWriter{max: 100}
	n, err := w.ReadFrom(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader("ab"))))
	if err != iotest.ErrTimeout || n != 1 {
		t.Fatalf("ReadFrom: %d, %v; want 1, %v", n, err, iotest.ErrTimeout)
	}
}
