package hostsim_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// TestReplyDecoderFastPath: every canonical recorded reply is decided by
// the fast path of a decoder that knows its binding, with the result
// DecodeReply gives; a non-canonical spelling of the same reply and a
// decoder expecting another binding fall back to DecodeReply.
func TestReplyDecoderFastPath(t *testing.T) {
	_, reps := testvectors.Frames(t)
	canonical := 0
	for _, in := range reps {
		rep, err := ipc.DecodeReply(in, 0)
		if err != nil {
			t.Fatalf("recorded reply refused: %v\n%s", err, in)
		}
		d, err := hostsim.NewReplyDecoder(rep.Binding, 0)
		if err != nil {
			t.Fatal(err)
		}
		fast, ok := hostsim.DecodeReplyFastOnly(d, in)
		if canon.CheckCanonical(in) != nil {
			if ok {
				t.Fatalf("fast path took a non-canonical reply:\n%s", in)
			}
			continue
		}
		canonical++
		if !ok {
			t.Fatalf("fast path refused a canonical reply:\n%s", in)
		}
		if diff := cmp.Diff(rep, fast); diff != "" {
			t.Fatalf("fast path vs DecodeReply (-+):\n%s", diff)
		}
		// The same reply spelled with a space is decoded by the tree path.
		spaced := bytes.Replace(in, []byte(`{"binding":`), []byte(`{ "binding":`), 1)
		if _, ok := hostsim.DecodeReplyFastOnly(d, spaced); ok {
			t.Fatalf("fast path took a non-canonical reply:\n%s", spaced)
		}
		got, err := d.Decode(spaced)
		if err != nil || !cmp.Equal(rep, got) {
			t.Fatalf("Decode of the spaced reply: %+v, %v", got, err)
		}
		// A decoder expecting another binding still decodes it.
		other, err := hostsim.NewReplyDecoder(fuzzReplyBinding, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := hostsim.DecodeReplyFastOnly(other, in); ok {
			t.Fatal("fast path took a reply with another binding")
		}
		if got, err := other.Decode(in); err != nil || !cmp.Equal(rep, got) {
			t.Fatalf("Decode with another binding: %+v, %v", got, err)
		}
	}
	if canonical == 0 {
		t.Fatal("no canonical recorded reply")
	}
}

// TestReplyDecoderRefusals: replies the fast path would otherwise match
// but DecodeReply refuses come back with DecodeReply's error.
func TestReplyDecoderRefusals(t *testing.T) {
	b := fuzzReplyBinding
	raw, err := canon.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	d, err := hostsim.NewReplyDecoder(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.Repeat("ab", 32)
	dig := "sha256:" + strings.Repeat("4", 64)
	reply := func(data, pv, seq, state string) []byte {
		s := `{"binding":` + string(raw)
		if data != "" {
			s += `,"data":` + data
		}
		return []byte(s + `,"host_nonce":"` + nonce + `","protocol_version":` + pv + `,"request_digest":"` + dig +
			`","sequence":` + seq + `,"state":"` + state + `"}`)
	}
	ok := [][]byte{reply(`{}`, "1", "3", "allowed"), reply("", "1", "3", "refused"), reply(`{"a":[1,1.5,null,true,"x"]}`, "1", "9", "waiting_approval")}
	for _, in := range ok {
		want, err := ipc.DecodeReply(in, 0)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got, fast := hostsim.DecodeReplyFastOnly(d, in)
		if !fast || !cmp.Equal(want, got) {
			t.Fatalf("%s: fast path %+v %v, want %+v", in, got, fast, want)
		}
	}
	bad := [][]byte{reply(`{}`, "2", "3", "allowed"), reply(`{}`, "1", "0", "allowed"), reply(`{}`, "1", "3", "maybe"),
		reply(`null`, "1", "3", "allowed"), reply(`[]`, "1", "3", "allowed"), reply(`{}`, "1", "3", "allowed")[:40],
		[]byte(strings.Replace(string(reply(`{}`, "1", "3", "allowed")), dig, "sha256:x", 1))}
	for _, in := range bad {
		_, werr := ipc.DecodeReply(in, 0)
		if werr == nil {
			t.Fatalf("DecodeReply accepted %s", in)
		}
		if _, fast := hostsim.DecodeReplyFastOnly(d, in); fast {
			t.Fatalf("fast path accepted %s", in)
		}
		if _, err := d.Decode(in); err == nil || err.Error() != werr.Error() {
			t.Fatalf("%s: Decode %v, DecodeReply %v", in, err, werr)
		}
	}
	if _, err := hostsim.NewReplyDecoder(ipc.AttemptBinding{}, 0); err == nil {
		t.Fatal("NewReplyDecoder accepted an empty binding")
	}
}

// fuzzReplyBinding is the binding the seed replies do not carry, so the
// fuzz target also runs the decoder with a binding that never matches.
var fuzzReplyBinding = ipc.AttemptBinding{OrganizationID: "org-z", ProjectID: "project-z", SeatID: "seat-z",
	RuntimeBindingID: "runtime-z", PacketID: "packet-z", OperationID: "op-z", AttemptID: "attempt-z", FencingGeneration: 7,
	CapabilityID: "example.echo@1.0.0", RequestDigest: canon.Digest("sha256:" + strings.Repeat("2", 64)),
	ManifestDigest: canon.Digest("sha256:" + strings.Repeat("3", 64))}

// sameReplyDecoding fails t unless a ReplyDecoder expecting binding b
// decodes in exactly as DecodeReply did (rep, err), and its fast path, when
// it decides, agrees too.
func sameReplyDecoding(t *testing.T, in []byte, rep *ipc.Reply, err error, b ipc.AttemptBinding) {
	t.Helper()
	d, derr := hostsim.NewReplyDecoder(b, 0)
	if derr != nil {
		t.Fatalf("NewReplyDecoder(%+v): %v", b, derr)
	}
	frep, ferr := d.Decode(in)
	if (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
		t.Fatalf("DecodeReply: %v; ReplyDecoder: %v", err, ferr)
	}
	if diff := cmp.Diff(rep, frep); diff != "" {
		t.Fatalf("DecodeReply vs ReplyDecoder (-+):\n%s", diff)
	}
	if fast, ok := hostsim.DecodeReplyFastOnly(d, in); ok {
		if err != nil {
			t.Fatalf("fast path accepted what DecodeReply refuses: %v", err)
		}
		if diff := cmp.Diff(rep, fast); diff != "" {
			t.Fatalf("DecodeReply vs fast path (-+):\n%s", diff)
		}
	}
}

// FuzzReplyDecoder: the simulated host's reply decoder decodes exactly as
// ipc.DecodeReply does, whether it expects the reply's own binding (the
// fast path) or another one, and its fast path never decides otherwise.
func FuzzReplyDecoder(f *testing.F) {
	_, reps := testvectors.Frames(f)
	for _, b := range reps {
		f.Add(b)
	}
	f.Add([]byte(`{"data":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := ipc.DecodeReply(in, 0)
		sameReplyDecoding(t, in, rep, err, fuzzReplyBinding)
		if err == nil {
			sameReplyDecoding(t, in, rep, err, rep.Binding)
		}
	})
}
