package ipc_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/sockettest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// socketpair returns a fresh socketpair, closed at the end of the test.
func socketpair(t testing.TB) (runtimeEnd, hostEnd *net.UnixConn) { return sockettest.Pair(t) }

// vectors is the part of zeo-inline-vectors.json the ipc tests read.
type vectors struct {
	Upstream struct {
		ReplyBindingMismatchOverrides struct {
			Overrides []map[string]any `json:"overrides"`
		} `json:"reply_binding_mismatch_overrides"`
		EffectPort struct {
			EffectRequest    map[string]any `json:"effect_request"`
			AllowedReplyData map[string]any `json:"allowed_reply_data"`
		} `json:"effect_port"`
		IPCDribbleTimeout struct {
			RPCTimeoutMS int `json:"rpc_timeout_ms"`
		} `json:"ipc_dribble_timeout"`
	} `json:"upstream_inline"`
	Derived struct {
		WorkedExample workedExample `json:"worked_example"`
	} `json:"derived"`
}

type workedExample struct {
	LaunchDigest    canon.Digest `json:"launch_digest"`
	HostNonce       string       `json:"host_nonce"`
	PID             int          `json:"pid"`
	RequestDigest   canon.Digest `json:"request_digest"`
	DataDigest      canon.Digest `json:"result_publish_data_digest"`
	EffectPayload   string       `json:"effect_request_payload_canonical"`
	EffectDigest    canon.Digest `json:"effect_request_digest"`
	EffectMessage   string       `json:"effect_request_message_canonical_seq3"`
	EffectMsgDigest canon.Digest `json:"effect_request_message_digest_seq3"`
	Frames          []struct {
		Method        ipc.Method   `json:"method"`
		Body          string       `json:"request_frame_body"`
		Length        int          `json:"request_frame_length"`
		PrefixHex     string       `json:"request_length_prefix_hex"`
		RequestDigest canon.Digest `json:"request_digest"`
		ReplyBody     string       `json:"reply_frame_body"`
		ReplyLength   int          `json:"reply_frame_length"`
	} `json:"frames"`
}

// workedBinding is the AttemptBinding of the derived worked example.
func workedBinding(t testing.TB) ipc.AttemptBinding {
	t.Helper()
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	req, _, err := ipc.DecodeRequest([]byte(w.Frames[0].Body), 0)
	if err != nil {
		t.Fatal(err)
	}
	return req.Binding
}

// allowAll is a Handler that allows everything, recording what it saw.
type allowAll struct {
	mu      sync.Mutex
	calls   []ipc.Call
	effects []ipc.EffectCall
	refs    []string
	result  map[string]any
}

func (h *allowAll) note(c ipc.Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

func (h *allowAll) Bootstrap(_ context.Context, r ipc.BootstrapRequest) (ipc.Decision, error) {
	h.note(r.Call)
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (h *allowAll) Admit(_ context.Context, r ipc.AdmitRequest) (ipc.Decision, error) {
	h.note(r.Call)
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (h *allowAll) Effect(_ context.Context, r ipc.EffectCall) (ipc.EffectDecision, error) {
	h.note(r.Call)
	h.mu.Lock()
	h.effects = append(h.effects, r)
	h.mu.Unlock()
	id := r.Effect.LogicalEffectID
	return ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "receipt-" + id, AuthorizationID: "auth-" + id, Result: h.result}, nil
}
func (h *allowAll) Publish(_ context.Context, r ipc.PublishRequest) (ipc.PublishDecision, error) {
	h.note(r.Call)
	refs := h.refs
	if refs == nil {
		refs = []string{"artifact-a"}
	}
	return ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: refs}, nil
}

// serve runs s.Serve in a goroutine and returns a func that waits for its
// result.
func serve(t testing.TB, s *ipc.Session, h ipc.Handler) func() error {
	t.Helper()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- s.Serve(ctx, h) }()
	t.Cleanup(func() { cancel(); e := <-done; done <- e })
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() { err = <-done; done <- err })
		return err
	}
}

func isRule(err, rule error) bool {
	var v *ipc.ViolationError
	return errors.As(err, &v) && v.Err == rule
}
