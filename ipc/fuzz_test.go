package ipc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// FuzzReadFrame: ReadFrame never panics, never returns more than the
// limit, returns io.EOF only for empty input, and round-trips through
// WriteFrame.
func FuzzReadFrame(f *testing.F) {
	reqs, _ := testvectors.Frames(f)
	for _, b := range reqs {
		f.Add(frameBytes(b), 0)
	}
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF}, 0)
	f.Add([]byte{0, 0, 0, 0}, 1024)
	f.Add([]byte{0, 0, 4, 1, 'x'}, 1024)
	f.Add([]byte{0, 0}, 0)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		body, err := ipc.ReadFrame(bytes.NewReader(in), max)
		limit := max
		if limit <= 0 || limit > ipc.MaxMessageBytes {
			limit = ipc.MaxMessageBytes
		}
		if err != nil {
			if body != nil {
				t.Fatal("body with an error")
			}
			if errors.Is(err, io.EOF) && len(in) != 0 {
				t.Fatalf("io.EOF after %d bytes", len(in))
			}
			return
		}
		if len(body) == 0 || len(body) > limit {
			t.Fatalf("body of %d bytes with limit %d", len(body), limit)
		}
		if n := binary.BigEndian.Uint32(in); int(n) != len(body) || !bytes.Equal(body, in[4:4+n]) {
			t.Fatal("body differs from the input")
		}
		var out bytes.Buffer
		if err := ipc.WriteFrame(&out, body, max); err != nil || !bytes.Equal(out.Bytes(), in[:4+len(body)]) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzDecodeRequest: decoding never panics; whatever it accepts is
// canonical, digests to Sum(body), has a known method, and every payload
// decoder can run on it without panicking. The Session's fast decoder
// (no Value tree) agrees with DecodeRequest on every input: the same
// refusal, or the same request and the same result from every payload
// decoder.
func FuzzDecodeRequest(f *testing.F) {
	wb := workedBinding(f)
	reqs, reps := testvectors.Frames(f)
	for _, b := range append(reqs, reps...) {
		f.Add(b)
	}
	f.Add(largeEffect(f, wb, 20<<10)) // hashed on two goroutines
	f.Add([]byte(`{}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"binding":{},"host_nonce":"","method":"bootstrap","payload":{},"protocol_version":1,"sequence":1}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		req, d, err := ipc.DecodeRequest(in, 0)
		fastBinding := wb
		if err == nil {
			fastBinding = req.Binding
		}
		sameDecoding(t, in, req, d, err, fastBinding)
		if err != nil {
			var v *ipc.ViolationError
			if !errors.As(err, &v) {
				t.Fatalf("error %T is not a *ViolationError", err)
			}
			return
		}
		if c, err := canon.Canonicalize(in); err != nil || !bytes.Equal(c, in) {
			t.Fatal("accepted a non-canonical body")
		}
		if d != canon.Sum(in) || !req.Method.Valid() || req.Sequence < 1 || req.Binding.Validate() != nil {
			t.Fatalf("accepted %+v", req)
		}
		_, _ = req.DecodeBootstrap()
		_, _ = req.DecodeAdmit()
		if e, fp, err := req.DecodeEffect(); err == nil {
			if d2, err := e.Digest(); err != nil || d2 != fp {
				t.Fatalf("effect fingerprint %s vs %s (%v)", fp, d2, err)
			}
		}
		if p, dd, err := req.DecodePublish(); err == nil {
			if d2, err := canon.DigestOf(p.Data); err != nil || d2 != dd {
				t.Fatalf("data digest %s vs %s (%v)", dd, d2, err)
			}
		}
	})
}

// FuzzDecodeReply: the host-side reply decoder never panics, and what it
// accepts has valid fields and object data.
func FuzzDecodeReply(f *testing.F) {
	_, reps := testvectors.Frames(f)
	for _, b := range reps {
		f.Add(b)
	}
	f.Add([]byte(`{"data":null}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := ipc.DecodeReply(in, 0)
		if err != nil {
			return
		}
		if _, ok := rep.Data.(map[string]any); !ok || !rep.State.Valid() || rep.Binding.Validate() != nil || rep.RequestDigest.Validate() != nil {
			t.Fatalf("accepted %+v", rep)
		}
	})
}

// sameDecoding fails t unless the Session's decoder, knowing binding b,
// decodes in exactly as DecodeRequest did (req, d, err).
func sameDecoding(t *testing.T, in []byte, req *ipc.Request, d canon.Digest, err error, b ipc.AttemptBinding) {
	t.Helper()
	freq, fd, ferr := ipc.DecodeRequestFast(in, 0, b)
	if (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
		t.Fatalf("DecodeRequest: %v; Session decoder: %v", err, ferr)
	}
	if err != nil {
		return
	}
	if d != fd || req.Binding != freq.Binding || req.HostNonce != freq.HostNonce || req.Method != freq.Method ||
		req.ProtocolVersion != freq.ProtocolVersion || req.Sequence != freq.Sequence {
		t.Fatalf("DecodeRequest: %+v %s; Session decoder: %+v %s", req, d, freq, fd)
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	same := func(what string, a, b any, ea, eb error) {
		if errText(ea) != errText(eb) || ea == nil && !cmp.Equal(a, b) {
			t.Fatalf("%s: DecodeRequest gives %v, %v; Session decoder %v, %v", what, a, ea, b, eb)
		}
	}
	// Each payload decoder gets its own fast-decoded request: one that
	// fails the fast path builds the tree for the next.
	fresh := func() *ipc.Request {
		r, _, _ := ipc.DecodeRequestFast(in, 0, b)
		return r
	}
	bp, be := req.DecodeBootstrap()
	fbp, fbe := freq.DecodeBootstrap()
	same("bootstrap", bp, fbp, be, fbe)
	ap, ae := req.DecodeAdmit()
	fap, fae := fresh().DecodeAdmit()
	same("admit", ap, fap, ae, fae)
	ep, efp, ee := req.DecodeEffect()
	fep, fefp, fee := fresh().DecodeEffect()
	same("effect", []any{ep, efp}, []any{fep, fefp}, ee, fee)
	pp, pd, pe := req.DecodePublish()
	fpp, fpd, fpe := fresh().DecodePublish()
	same("publish", []any{pp, pd}, []any{fpp, fpd}, pe, fpe)
}

// largeEffect returns a canonical effect.request body with binding b and
// an argument string of n bytes.
func largeEffect(f *testing.F, b ipc.AttemptBinding, n int) []byte {
	body, err := canon.Marshal(map[string]any{
		"binding": b, "host_nonce": strings.Repeat("ab", 32), "method": ipc.MethodEffect, "protocol_version": 1, "sequence": 3,
		"payload": ipc.EffectRequest{LogicalEffectID: "effect-1", ConnectionRef: "connection-a",
			ConnectorRevision: canon.Digest("sha256:" + strings.Repeat("1", 64)), Operation: "write",
			Arguments: map[string]any{"blob": strings.Repeat("a\n\u0001", n/3), "n": 1.5}},
	})
	if err != nil {
		f.Fatal(err)
	}
	return body
}
