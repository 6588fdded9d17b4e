package ipc_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// workedSession is the Runtime's Session of the derived worked example
// over rt.
func workedSession(t *testing.T, rt *net.UnixConn) *ipc.Session {
	t.Helper()
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	return ipc.NewSession(rt, ipc.SessionConfig{
		ChildPID: w.PID, Binding: workedBinding(t), BootstrapID: "bootstrap-a",
		LaunchDigest: w.LaunchDigest, Deadline: time.Now().Add(time.Minute),
		Credentials: ipc.CredentialsOff, // pid 4242 is not this process
	})
}

// TestWorkedExample replays the three request frames of the derived worked
// example over a real socketpair and checks, byte for byte, the length
// prefixes, the request digests and the reply frames the Session writes.
func TestWorkedExample(t *testing.T) {
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	rt, host := socketpair(t)
	s := workedSession(t, rt)
	h := &allowAll{}
	wait := serve(t, s, h)
	for i, f := range w.Frames {
		body := []byte(f.Body)
		if len(body) != f.Length {
			t.Fatalf("frame %d: body is %d bytes, vector says %d", i, len(body), f.Length)
		}
		if got := canon.Sum(body); got != f.RequestDigest {
			t.Errorf("frame %d: digest %s, want %s", i, got, f.RequestDigest)
		}
		var frame bytes.Buffer
		if err := ipc.WriteFrame(&frame, body, 0); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(frame.Bytes()[:4]); got != f.PrefixHex {
			t.Errorf("frame %d: prefix %s, want %s", i, got, f.PrefixHex)
		}
		if _, err := host.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
		var hdr [4]byte
		if _, err := io.ReadFull(host, hdr[:]); err != nil {
			t.Fatal(err)
		}
		reply := make([]byte, int(hdr[0])<<24|int(hdr[1])<<16|int(hdr[2])<<8|int(hdr[3]))
		if _, err := io.ReadFull(host, reply); err != nil {
			t.Fatal(err)
		}
		if len(reply) != f.ReplyLength {
			t.Errorf("frame %d: reply length %d, want %d", i, len(reply), f.ReplyLength)
		}
		if diff := cmp.Diff(f.ReplyBody, string(reply)); diff != "" {
			t.Errorf("frame %d (%s): reply differs (-want +got):\n%s", i, f.Method, diff)
		}
	}
	host.Close()
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	sum := s.Summary()
	want := []ipc.Exchange{}
	for i, f := range w.Frames {
		want = append(want, ipc.Exchange{Sequence: int64(i + 1), Method: f.Method, RequestDigest: f.RequestDigest,
			State: ipc.StateAllowed, RequestBytes: f.Length, ReplyBytes: f.ReplyLength})
	}
	if diff := cmp.Diff(want, sum.Exchanges); diff != "" {
		t.Errorf("summary exchanges (-want +got):\n%s", diff)
	}
	if sum.Frames != 3 || sum.HostNonce != w.HostNonce || sum.States[ipc.StateAllowed] != 3 {
		t.Errorf("summary %+v", sum)
	}
}

// TestWorkedEffectMessage checks the effect.request message of the worked
// example: its digest, and the EffectRequest fingerprint.
func TestWorkedEffectMessage(t *testing.T) {
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	req, digest, err := ipc.DecodeRequest([]byte(w.EffectMessage), 0)
	if err != nil {
		t.Fatal(err)
	}
	if digest != w.EffectMsgDigest {
		t.Errorf("message digest %s, want %s", digest, w.EffectMsgDigest)
	}
	if req.Method != ipc.MethodEffect || req.Sequence != 3 {
		t.Errorf("method %s sequence %d", req.Method, req.Sequence)
	}
	eff, fp, err := req.DecodeEffect()
	if err != nil {
		t.Fatal(err)
	}
	if fp != w.EffectDigest {
		t.Errorf("fingerprint %s, want %s", fp, w.EffectDigest)
	}
	if d, err := eff.Digest(); err != nil || d != w.EffectDigest {
		t.Errorf("EffectRequest.Digest = %s, %v; want %s", d, err, w.EffectDigest)
	}
	if c, err := canon.Marshal(eff); err != nil || string(c) != w.EffectPayload {
		t.Errorf("canonical EffectRequest = %s, %v", c, err)
	}
	args := map[string]any{"organization_id": "org-a", "text": "hello"}
	if d, err := ipc.RequestDigest("example.echo@1.0.0", args); err != nil || d != w.RequestDigest {
		t.Errorf("RequestDigest = %s, %v; want %s", d, err, w.RequestDigest)
	}
}

// TestRequestBuiltByHand: a Request decoded by canon.Unmarshal (not
// DecodeRequest) has no body to slice; its payload digests are computed by
// re-encoding and must agree.
func TestRequestBuiltByHand(t *testing.T) {
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	var req ipc.Request
	if err := canon.Unmarshal([]byte(w.EffectMessage), &req); err != nil {
		t.Fatal(err)
	}
	if _, fp, err := req.DecodeEffect(); err != nil || fp != w.EffectDigest {
		t.Fatalf("DecodeEffect = %s, %v; want %s", fp, err, w.EffectDigest)
	}
	var pub ipc.Request
	if err := canon.Unmarshal([]byte(w.Frames[2].Body), &pub); err != nil {
		t.Fatal(err)
	}
	p, dd, err := pub.DecodePublish()
	if err != nil || dd != w.DataDigest || p.DataDigest != w.DataDigest {
		t.Fatalf("DecodePublish = %s, %v; want %s", dd, err, w.DataDigest)
	}
	// The same through DecodeRequest, which slices the body.
	req2, _, err := ipc.DecodeRequest([]byte(w.Frames[2].Body), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, dd2, err := req2.DecodePublish(); err != nil || dd2 != dd {
		t.Fatalf("sliced data digest %s, re-encoded %s (%v)", dd2, dd, err)
	}
}
