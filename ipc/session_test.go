package ipc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

const testNonce = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// env is a request envelope the tests can bend.
type env struct {
	Binding         any    `json:"binding"`
	HostNonce       string `json:"host_nonce"`
	Method          string `json:"method"`
	Payload         any    `json:"payload"`
	ProtocolVersion any    `json:"protocol_version"`
	Sequence        int64  `json:"sequence"`
}

// fixture holds what a test Session expects.
type fixture struct {
	binding ipc.AttemptBinding
	launch  canon.Digest
	pid     int
}

func newFixture(t testing.TB) fixture {
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	return fixture{binding: workedBinding(t), launch: w.LaunchDigest, pid: os.Getpid()}
}

func (f fixture) config() ipc.SessionConfig {
	return ipc.SessionConfig{ChildPID: f.pid, Binding: f.binding, BootstrapID: "bootstrap-a",
		LaunchDigest: f.launch, Deadline: time.Now().Add(time.Minute), RPCTimeout: 5 * time.Second}
}

func (f fixture) env(seq int64, m ipc.Method, payload any) env {
	return env{Binding: f.binding, HostNonce: testNonce, Method: string(m), Payload: payload, ProtocolVersion: 1, Sequence: seq}
}

func (f fixture) bootstrap() map[string]any {
	return map[string]any{"bootstrap_id": "bootstrap-a", "launch_digest": string(f.launch), "pid": int64(f.pid)}
}

func admitPayload() map[string]any {
	return map[string]any{"arguments": map[string]any{"organization_id": "org-a", "text": "hello"}}
}

func effectPayload(id string) map[string]any {
	return map[string]any{"logical_effect_id": id, "connection_ref": "connection-a",
		"connector_revision": "sha256:" + strings.Repeat("1", 64), "operation": "read", "arguments": map[string]any{}}
}

func publishPayload(t fatalT) map[string]any {
	data := map[string]any{"text": "hello"}
	d, err := canon.DigestOf(data)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"data": data, "data_digest": string(d)}
}

func body(t fatalT, e any) []byte {
	t.Helper()
	b, err := canon.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// step is one thing the simulated host does.
type step struct {
	raw       []byte         // bytes to write (a whole frame unless the test bends it)
	wantState ipc.ReplyState // "" = no reply expected
}

// runScript serves a Session with h and plays the steps as the host; the
// host closes its end after the last step. It returns Serve's error and
// the replies read.
func runScript(t *testing.T, cfg ipc.SessionConfig, h ipc.Handler, steps []step) ([]*ipc.Reply, error) {
	t.Helper()
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, cfg)
	wait := serve(t, s, h)
	var replies []*ipc.Reply
	for i, st := range steps {
		if _, err := host.Write(st.raw); err != nil {
			t.Fatalf("step %d: write: %v", i, err)
		}
		if st.wantState == "" {
			continue
		}
		if err := host.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		b, err := ipc.ReadFrame(host, 0)
		if err != nil {
			t.Fatalf("step %d: reading reply: %v (Serve: %v)", i, err, wait())
		}
		rep, err := ipc.DecodeReply(b, 0)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if rep.State != st.wantState {
			t.Fatalf("step %d: state %s, want %s", i, rep.State, st.wantState)
		}
		replies = append(replies, rep)
	}
	host.CloseWrite()
	err := wait()
	// Whatever happened, the Session closed its end: the host reads EOF.
	if err2 := host.SetReadDeadline(time.Now().Add(10 * time.Second)); err2 != nil {
		t.Fatal(err2)
	}
	// (ECONNRESET when the Session closed with unread bytes queued.)
	if n, rerr := host.Read(make([]byte, 1)); n != 0 || rerr != io.EOF && !errors.Is(rerr, syscall.ECONNRESET) {
		t.Errorf("after Serve: host read %d bytes, %v; want EOF", n, rerr)
	}
	return replies, err
}

func frame(t fatalT, e any) []byte { return frameBytes(body(t, e)) }

// fatalT is the part of testing.TB that *rapid.T also has.
type fatalT interface {
	Helper()
	Fatal(args ...any)
}

func TestSessionRules(t *testing.T) {
	f := newFixture(t)
	boot := step{frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap())), ipc.StateAllowed}
	admit := step{frame(t, f.env(2, ipc.MethodAdmit, admitPayload())), ipc.StateAllowed}
	bad := func(e env) step { return step{raw: frame(t, e)} }
	with := func(seq int64, m ipc.Method, p any, mut func(*env)) step {
		e := f.env(seq, m, p)
		mut(&e)
		return bad(e)
	}
	otherBinding := func(mut func(*ipc.AttemptBinding)) ipc.AttemptBinding {
		b := f.binding
		mut(&b)
		return b
	}
	bootWith := func(k string, v any) map[string]any {
		p := f.bootstrap()
		p[k] = v
		return p
	}
	long := strings.Repeat("é", 257)
	tests := []struct {
		name  string
		steps []step
		rule  error // nil: clean end
	}{
		{"no frames at all", nil, nil},
		{"bootstrap only", []step{boot}, nil},
		{"full happy path", []step{boot, admit,
			{frame(t, f.env(3, ipc.MethodEffect, effectPayload("e1"))), ipc.StateAllowed},
			{frame(t, f.env(4, ipc.MethodEffect, effectPayload("e1"))), ipc.StateAllowed}, // redelivery
			{frame(t, f.env(5, ipc.MethodPublish, publishPayload(t))), ipc.StateAllowed}}, nil},
		// sequence
		{"first sequence 2", []step{bad(f.env(2, ipc.MethodBootstrap, f.bootstrap()))}, ipc.ErrSequence},
		{"sequence 99 (vector override)", []step{boot, bad(f.env(99, ipc.MethodAdmit, admitPayload()))}, ipc.ErrSequence},
		{"sequence repeated", []step{boot, bad(f.env(1, ipc.MethodAdmit, admitPayload()))}, ipc.ErrSequence},
		{"sequence 0", []step{bad(f.env(0, ipc.MethodBootstrap, f.bootstrap()))}, ipc.ErrSequence},
		// nonce
		{"nonce other (vector override)", []step{boot, with(2, ipc.MethodAdmit, admitPayload(), func(e *env) { e.HostNonce = "other" })}, ipc.ErrNonce},
		{"nonce changed", []step{boot, with(2, ipc.MethodAdmit, admitPayload(), func(e *env) { e.HostNonce = strings.Repeat("f", 64) })}, ipc.ErrNonce},
		{"nonce upper-case at bootstrap", []step{with(1, ipc.MethodBootstrap, f.bootstrap(), func(e *env) { e.HostNonce = strings.ToUpper(testNonce) })}, ipc.ErrNonce},
		// binding
		{"binding attempt_id old (vector override)", []step{boot, with(2, ipc.MethodAdmit, admitPayload(), func(e *env) {
			e.Binding = otherBinding(func(b *ipc.AttemptBinding) { b.AttemptID = "old" })
		})}, ipc.ErrBinding},
		{"binding fencing_generation 2 at bootstrap", []step{with(1, ipc.MethodBootstrap, f.bootstrap(), func(e *env) {
			e.Binding = otherBinding(func(b *ipc.AttemptBinding) { b.FencingGeneration = 2 })
		})}, ipc.ErrBinding},
		{"binding with an extra key", []step{with(1, ipc.MethodBootstrap, f.bootstrap(), func(e *env) {
			m := map[string]any{}
			for k, v := range mustMap(t, f.binding) {
				m[k] = v
			}
			m["extra"] = "x"
			e.Binding = m
		})}, ipc.ErrMalformed},
		// bootstrap order and payload
		{"admit first", []step{bad(f.env(1, ipc.MethodAdmit, admitPayload()))}, ipc.ErrBootstrapOrder},
		{"second bootstrap", []step{boot, bad(f.env(2, ipc.MethodBootstrap, f.bootstrap()))}, ipc.ErrBootstrapOrder},
		{"bootstrap pid other", []step{bad(f.env(1, ipc.MethodBootstrap, bootWith("pid", int64(f.pid+1))))}, ipc.ErrBootstrap},
		{"bootstrap id other", []step{bad(f.env(1, ipc.MethodBootstrap, bootWith("bootstrap_id", "bootstrap-b")))}, ipc.ErrBootstrap},
		{"bootstrap launch digest other", []step{bad(f.env(1, ipc.MethodBootstrap, bootWith("launch_digest", "sha256:"+strings.Repeat("f", 64))))}, ipc.ErrBootstrap},
		{"bootstrap pid as float", []step{bad(f.env(1, ipc.MethodBootstrap, bootWith("pid", 1.5)))}, ipc.ErrPayload},
		{"bootstrap payload extra key", []step{bad(f.env(1, ipc.MethodBootstrap, bootWith("x", 1)))}, ipc.ErrPayload},
		// envelope shape
		{"protocol_version 2", []step{with(1, ipc.MethodBootstrap, f.bootstrap(), func(e *env) { e.ProtocolVersion = 2 })}, ipc.ErrProtocolVersion},
		{"protocol_version true", []step{with(1, ipc.MethodBootstrap, f.bootstrap(), func(e *env) { e.ProtocolVersion = true })}, ipc.ErrMalformed},
		{"protocol_version 1.0", []step{{raw: frameBytes([]byte(strings.Replace(string(body(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))), `"protocol_version":1`, `"protocol_version":1.0`, 1)))}}, ipc.ErrNotCanonical},
		{"unknown method", []step{bad(f.env(1, "invoke.run", f.bootstrap()))}, ipc.ErrMethod},
		{"payload array", []step{bad(f.env(1, ipc.MethodBootstrap, []any{}))}, ipc.ErrPayload},
		{"not canonical: whitespace", []step{{raw: frameBytes(append(body(t, f.env(1, ipc.MethodBootstrap, f.bootstrap())), ' '))}}, ipc.ErrNotCanonical},
		{"not canonical: key order", []step{{raw: frameBytes([]byte(`{"host_nonce":"x","binding":{}}`))}}, ipc.ErrNotCanonical},
		{"not JSON", []step{{raw: frameBytes([]byte(`{"a":`))}}, ipc.ErrMalformed},
		{"duplicate key", []step{{raw: frameBytes([]byte(`{"a":1,"a":1}`))}}, ipc.ErrMalformed},
		{"top-level array", []step{{raw: frameBytes([]byte(`[]`))}}, ipc.ErrMalformed},
		// admit
		{"admit changed arguments", []step{boot, bad(f.env(2, ipc.MethodAdmit, map[string]any{"arguments": map[string]any{"text": "hello"}}))}, ipc.ErrDigest},
		{"admit twice", []step{boot, admit, bad(f.env(3, ipc.MethodAdmit, admitPayload()))}, ipc.ErrOrder},
		{"effect before admit", []step{boot, bad(f.env(2, ipc.MethodEffect, effectPayload("e1")))}, ipc.ErrOrder},
		{"publish before admit", []step{boot, bad(f.env(2, ipc.MethodPublish, publishPayload(t)))}, ipc.ErrOrder},
		// effect
		{"effect id of 257 code points", []step{boot, admit, bad(f.env(3, ipc.MethodEffect, func() map[string]any {
			p := effectPayload("x")
			p["logical_effect_id"] = long
			return p
		}()))}, ipc.ErrPayload},
		{"effect digest with newline", []step{boot, admit, bad(f.env(3, ipc.MethodEffect, func() map[string]any {
			p := effectPayload("x")
			p["connector_revision"] = "sha256:" + strings.Repeat("1", 64) + "\n"
			return p
		}()))}, ipc.ErrPayload},
		{"effect missing arguments", []step{boot, admit, bad(f.env(3, ipc.MethodEffect, func() map[string]any {
			p := effectPayload("x")
			delete(p, "arguments")
			return p
		}()))}, ipc.ErrPayload},
		// publish
		{"publish wrong data_digest", []step{boot, admit, bad(f.env(3, ipc.MethodPublish, map[string]any{"data": map[string]any{"text": "bye"}, "data_digest": publishPayload(t)["data_digest"]}))}, ipc.ErrDigest},
		{"publish twice", []step{boot, admit, {frame(t, f.env(3, ipc.MethodPublish, publishPayload(t))), ipc.StateAllowed}, bad(f.env(4, ipc.MethodPublish, publishPayload(t)))}, ipc.ErrOrder},
		{"effect after publish", []step{boot, admit, {frame(t, f.env(3, ipc.MethodPublish, publishPayload(t))), ipc.StateAllowed}, bad(f.env(4, ipc.MethodEffect, effectPayload("e")))}, ipc.ErrOrder},
		// framing
		{"oversize length", []step{boot, {raw: []byte{0, 0x10, 0, 1}}}, ipc.ErrFrameTooLarge},
		{"4 GiB length", []step{{raw: []byte{0xFF, 0xFF, 0xFF, 0xFF}}}, ipc.ErrFrameTooLarge},
		{"zero length", []step{boot, {raw: []byte{0, 0, 0, 0}}}, ipc.ErrEmptyFrame},
		{"EOF inside header", []step{boot, {raw: []byte{0, 0}}}, ipc.ErrTruncated},
		{"EOF inside body", []step{boot, {raw: frame(t, f.env(2, ipc.MethodAdmit, admitPayload()))[:100]}}, ipc.ErrTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runScript(t, f.config(), &allowAll{}, tt.steps)
			if tt.rule == nil {
				if err != nil {
					t.Fatalf("Serve = %v, want nil", err)
				}
				return
			}
			if !isRule(err, tt.rule) {
				t.Fatalf("Serve = %v, want rule %v", err, tt.rule)
			}
		})
	}
}

func mustMap(t testing.TB, v any) map[string]any {
	var m map[string]any
	if err := canon.Unmarshal(body(t, v), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// stateHandler answers every method with fixed decisions.
type stateHandler struct {
	boot, admit ipc.Decision
	effect      ipc.EffectDecision
	publish     ipc.PublishDecision
	err         error
}

func (h stateHandler) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return h.boot, nil
}
func (h stateHandler) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return h.admit, nil
}
func (h stateHandler) Effect(context.Context, ipc.EffectCall) (ipc.EffectDecision, error) {
	return h.effect, h.err
}
func (h stateHandler) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return h.publish, h.err
}

// TestSessionHandlerDecisions checks what the Session sends for each kind
// of decision, and that it never claims "not consumed" when the handler
// could not decide.
func TestSessionHandlerDecisions(t *testing.T) {
	f := newFixture(t)
	allowed := ipc.Decision{State: ipc.StateAllowed}
	boot := step{frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap())), ipc.StateAllowed}
	admit := step{frame(t, f.env(2, ipc.MethodAdmit, admitPayload())), ipc.StateAllowed}
	eff := func(want ipc.ReplyState) step {
		return step{frame(t, f.env(3, ipc.MethodEffect, effectPayload("e1"))), want}
	}
	pub := func(want ipc.ReplyState) step {
		return step{frame(t, f.env(3, ipc.MethodPublish, publishPayload(t))), want}
	}
	boom := errors.New("ledger unavailable")
	tests := []struct {
		name  string
		h     stateHandler
		steps []step
		rule  error
		check func(t *testing.T, reps []*ipc.Reply)
	}{
		{"effect handler error is needs_reconciliation", stateHandler{boot: allowed, admit: allowed, err: boom},
			[]step{boot, admit, eff(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed effect without receipt id is needs_reconciliation", stateHandler{boot: allowed, admit: allowed,
			effect: ipc.EffectDecision{State: ipc.StateAllowed, AuthorizationID: "a"}},
			[]step{boot, admit, eff(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed effect without authorization id is needs_reconciliation", stateHandler{boot: allowed, admit: allowed,
			effect: ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "r"}},
			[]step{boot, admit, eff(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"effect state empty is needs_reconciliation", stateHandler{boot: allowed, admit: allowed},
			[]step{boot, admit, eff(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"effect result that cannot marshal is needs_reconciliation", stateHandler{boot: allowed, admit: allowed,
			effect: ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "r", AuthorizationID: "a", Result: map[string]any{"n": int64(1) << 60}}},
			[]step{boot, admit, eff(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed effect carries five keys and result", stateHandler{boot: allowed, admit: allowed,
			effect: ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "r", AuthorizationID: "a", Result: map[string]any{"rows": int64(3)}}},
			[]step{boot, admit, eff(ipc.StateAllowed)}, nil, func(t *testing.T, reps []*ipc.Reply) {
				d := reps[2].Data.(map[string]any)
				want := `{"authorization_id":"a","effect_disposition":"confirmed","effect_request_digest":"` + string(mustDigest(t, effectPayload("e1"))) +
					`","logical_effect_id":"e1","receipt_id":"r","result":{"rows":3}}`
				if got := string(body(t, d)); got != want {
					t.Errorf("effect data\n got %s\nwant %s", got, want)
				}
			}},
		{"refused effect passes through", stateHandler{boot: allowed, admit: allowed, effect: ipc.EffectDecision{State: ipc.StateRefused, Data: map[string]any{"reason": "policy"}}},
			[]step{boot, admit, eff(ipc.StateRefused)}, nil, nil},
		{"waiting_approval effect passes through", stateHandler{boot: allowed, admit: allowed, effect: ipc.EffectDecision{State: ipc.StateWaitingApproval}},
			[]step{boot, admit, eff(ipc.StateWaitingApproval)}, nil, nil},
		{"request after refused effect", stateHandler{boot: allowed, admit: allowed, effect: ipc.EffectDecision{State: ipc.StateRefused}},
			[]step{boot, admit, eff(ipc.StateRefused), {raw: frame(t, f.env(4, ipc.MethodPublish, publishPayload(t)))}}, ipc.ErrOrder, nil},
		{"request after refused bootstrap", stateHandler{boot: ipc.Decision{State: ipc.StateRefused}},
			[]step{{boot.raw, ipc.StateRefused}, {raw: frame(t, f.env(2, ipc.MethodAdmit, admitPayload()))}}, ipc.ErrOrder, nil},
		{"publish handler error is needs_reconciliation", stateHandler{boot: allowed, admit: allowed, err: boom},
			[]step{boot, admit, pub(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed publish without refs is needs_reconciliation", stateHandler{boot: allowed, admit: allowed, publish: ipc.PublishDecision{State: ipc.StateAllowed}},
			[]step{boot, admit, pub(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed publish with a 257-rune ref is needs_reconciliation", stateHandler{boot: allowed, admit: allowed,
			publish: ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: []string{strings.Repeat("😀", 257)}}},
			[]step{boot, admit, pub(ipc.StateNeedsReconciliation)}, ipc.ErrHandler, nil},
		{"allowed publish echoes digest and refs", stateHandler{boot: allowed, admit: allowed,
			publish: ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: []string{"b", "a"}}},
			[]step{boot, admit, pub(ipc.StateAllowed)}, nil, func(t *testing.T, reps []*ipc.Reply) {
				want := `{"artifact_refs":["b","a"],"data_digest":"` + publishPayload(t)["data_digest"].(string) + `"}`
				if got := string(body(t, reps[2].Data)); got != want {
					t.Errorf("publish data %s, want %s", got, want)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reps, err := runScript(t, f.config(), tt.h, tt.steps)
			if tt.rule == nil && err != nil || tt.rule != nil && !isRule(err, tt.rule) {
				t.Fatalf("Serve = %v, want %v", err, tt.rule)
			}
			if tt.rule == ipc.ErrHandler && tt.h.err != nil && !errors.Is(err, tt.h.err) {
				t.Errorf("Serve error %v does not wrap the handler's error", err)
			}
			for i, r := range reps {
				// Every reply echoes the request's correlation fields.
				if r.Sequence != int64(i+1) || r.HostNonce != testNonce || f.binding.Diff(r.Binding) != "" {
					t.Errorf("reply %d does not correlate: %+v", i, r)
				}
				if r.RequestDigest != canon.Sum(tt.steps[i].raw[4:]) {
					t.Errorf("reply %d request_digest %s", i, r.RequestDigest)
				}
			}
			if tt.check != nil {
				tt.check(t, reps)
			}
		})
	}
}

func mustDigest(t testing.TB, v any) canon.Digest {
	d, err := canon.DigestOf(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSessionConfig(t *testing.T) {
	f := newFixture(t)
	good := f.config()
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*ipc.SessionConfig){
		"zero config":        func(c *ipc.SessionConfig) { *c = ipc.SessionConfig{} },
		"pid 0":              func(c *ipc.SessionConfig) { c.ChildPID = 0 },
		"binding invalid":    func(c *ipc.SessionConfig) { c.Binding.FencingGeneration = 0 },
		"bootstrap id empty": func(c *ipc.SessionConfig) { c.BootstrapID = "" },
		"launch digest":      func(c *ipc.SessionConfig) { c.LaunchDigest = "sha256:x" },
		"rpc timeout 31s":    func(c *ipc.SessionConfig) { c.RPCTimeout = 31 * time.Second },
		"rpc timeout 1µs":    func(c *ipc.SessionConfig) { c.RPCTimeout = time.Microsecond },
		"max 1023":           func(c *ipc.SessionConfig) { c.MaxMessageBytes = 1023 },
		"max 1 MiB + 1":      func(c *ipc.SessionConfig) { c.MaxMessageBytes = ipc.MaxMessageBytes + 1 },
		"credentials 9":      func(c *ipc.SessionConfig) { c.Credentials = 9 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := good
			mut(&cfg)
			if err := cfg.Validate(); !errors.Is(err, ipc.ErrConfig) {
				t.Fatalf("Validate = %v", err)
			}
			rt, host := socketpair(t)
			if err := ipc.NewSession(rt, cfg).Serve(context.Background(), &allowAll{}); !errors.Is(err, ipc.ErrConfig) {
				t.Fatalf("Serve = %v", err)
			}
			wantClosed(t, host)
		})
	}
	t.Run("nil handler", func(t *testing.T) {
		rt, host := socketpair(t)
		if err := ipc.NewSession(rt, good).Serve(context.Background(), nil); !errors.Is(err, ipc.ErrConfig) {
			t.Fatal(err)
		}
		wantClosed(t, host)
	})
	t.Run("nil conn", func(t *testing.T) {
		if err := ipc.NewSession(nil, good).Serve(context.Background(), &allowAll{}); !errors.Is(err, ipc.ErrConfig) {
			t.Fatal(err)
		}
	})
	t.Run("credentials required on a non-unix conn", func(t *testing.T) {
		a, b := net.Pipe()
		defer b.Close()
		cfg := good
		cfg.Credentials = ipc.CredentialsRequired
		if err := ipc.NewSession(a, cfg).Serve(context.Background(), &allowAll{}); !errors.Is(err, ipc.ErrConfig) {
			t.Fatal(err)
		}
		wantClosed(t, b)
	})
	t.Run("serve twice", func(t *testing.T) {
		rt, host := socketpair(t)
		s := ipc.NewSession(rt, good)
		host.Close()
		if err := s.Serve(context.Background(), &allowAll{}); err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(context.Background(), &allowAll{}); !errors.Is(err, ipc.ErrPoisoned) {
			t.Fatalf("second Serve = %v", err)
		}
	})
}

// wantClosed fails unless the Session closed its end of the connection:
// the peer's read ends at once with EOF (a net.Pipe refuses the deadline), so
// a host is never left waiting for its own timeout.
func wantClosed(t *testing.T, peer net.Conn) {
	t.Helper()
	if err := peer.SetReadDeadline(time.Now().Add(10 * time.Second)); errors.Is(err, io.ErrClosedPipe) {
		return // net.Pipe: the other end is closed
	} else if err != nil {
		t.Fatal(err)
	}
	if n, err := peer.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("peer read after Serve = %d, %v; want EOF (the Session must close its end)", n, err)
	}
}

// TestSessionID: every Session gets its own 128-bit id, fixed at
// NewSession, in the form the ledger accepts as a session id.
func TestSessionID(t *testing.T) {
	f := newFixture(t)
	seen := map[string]bool{}
	for range 64 {
		rt, _ := socketpair(t)
		s := ipc.NewSession(rt, f.config())
		id := s.ID()
		if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("ID() = %q, want 32 lowercase hex digits", id)
		}
		if s.ID() != id {
			t.Fatalf("ID changed: %q then %q", id, s.ID())
		}
		if seen[id] {
			t.Fatalf("ID %q given to two Sessions", id)
		}
		seen[id] = true
	}
	// The Handler is told the ID with every request, to redeem with.
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, f.config())
	h := &allowAll{}
	wait := serve(t, s, h)
	if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
		t.Fatal(err)
	}
	if _, err := ipc.ReadFrame(host, ipc.MaxMessageBytes); err != nil {
		t.Fatal(err)
	}
	host.Close()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if len(h.calls) != 1 || h.calls[0].SessionID != s.ID() {
		t.Fatalf("calls %+v, want one with SessionID %q", h.calls, s.ID())
	}
}

// TestSessionDribble: a request dribbled one byte every 20 ms against a
// 60 ms exchange bound fails with ErrTimeout (upstream ipc_dribble_timeout,
// from the Runtime's side).
func TestSessionDribble(t *testing.T) {
	f := newFixture(t)
	v := testvectors.Inline[vectors](t).Upstream.IPCDribbleTimeout
	cfg := f.config()
	cfg.RPCTimeout = time.Duration(v.RPCTimeoutMS) * time.Millisecond
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, cfg)
	wait := serve(t, s, &allowAll{})
	raw := frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))
	go func() {
		for _, b := range raw {
			if _, err := host.Write([]byte{b}); err != nil {
				return // the Session gave up and closed its end
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := wait()
	if !isRule(err, ipc.ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Serve = %v, want ErrTimeout", err)
	}
	if s.Summary().Frames != 0 {
		t.Errorf("a dribbled frame was counted")
	}
}

// TestSessionIdleWaitIsNotBoundedByRPCTimeout: between exchanges the host
// may take much longer than the rpc timeout.
func TestSessionIdleWaitIsNotBoundedByRPCTimeout(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	cfg.RPCTimeout = 20 * time.Millisecond
	rt, host := socketpair(t)
	wait := serve(t, ipc.NewSession(rt, cfg), &allowAll{})
	time.Sleep(100 * time.Millisecond) // five rpc timeouts of idleness
	if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
		t.Fatal(err)
	}
	if _, err := ipc.ReadFrame(host, 0); err != nil {
		t.Fatalf("no reply after an idle wait: %v (Serve: %v)", err, wait())
	}
	host.Close()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
}

// TestSessionAttemptDeadline: a request after the attempt deadline, and an
// idle wait that reaches it, both end the session with ErrDeadline.
func TestSessionAttemptDeadline(t *testing.T) {
	f := newFixture(t)
	t.Run("late frame", func(t *testing.T) {
		cfg := f.config()
		cfg.Deadline = time.Now().Add(-time.Millisecond)
		rt, host := socketpair(t)
		s := ipc.NewSession(rt, cfg)
		// The whole request is already queued when Serve starts.
		if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
			t.Fatal(err)
		}
		if err := s.Serve(context.Background(), &allowAll{}); !isRule(err, ipc.ErrDeadline) {
			t.Fatalf("Serve = %v", err)
		}
		if s.Summary().Frames != 0 {
			t.Error("a frame after the deadline was read")
		}
	})
	t.Run("idle until deadline", func(t *testing.T) {
		cfg := f.config()
		cfg.Deadline = time.Now().Add(50 * time.Millisecond)
		rt, _ := socketpair(t)
		err := ipc.NewSession(rt, cfg).Serve(context.Background(), &allowAll{})
		if !isRule(err, ipc.ErrDeadline) {
			t.Fatalf("Serve = %v", err)
		}
	})
	t.Run("handler runs past the deadline", func(t *testing.T) {
		cfg := f.config()
		cfg.Deadline = time.Now().Add(300 * time.Millisecond)
		h := &slowHandler{}
		_, err := runScript(t, cfg, h, []step{{raw: frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))}})
		if !isRule(err, ipc.ErrTimeout) {
			t.Fatalf("Serve = %v", err)
		}
	})
}

// slowHandler waits for its context to end, then allows: the reply comes
// too late to be sent.
type slowHandler struct{ allowAll }

func (*slowHandler) Bootstrap(ctx context.Context, _ ipc.BootstrapRequest) (ipc.Decision, error) {
	<-ctx.Done()
	return ipc.Decision{State: ipc.StateAllowed}, nil
}

// TestSessionContextCancel: cancelling Serve's context while it waits for
// the host's next request ends it with ErrStopped wrapping the cause. The
// host completes one exchange first, so Serve is known to be serving (and
// back in, or on its way to, the idle wait) when the context is cancelled.
func TestSessionContextCancel(t *testing.T) {
	f := newFixture(t)
	rt, host := socketpair(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("supervisor shutting down")
	s := ipc.NewSession(rt, f.config()) // before the host writes: SO_PASSCRED
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, &allowAll{}) }()
	if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
		t.Fatal(err)
	}
	if _, err := ipc.ReadFrame(host, 0); err != nil {
		t.Fatalf("no bootstrap reply: %v (Serve: %v)", err, <-done)
	}
	cancel(cause)
	err := <-done
	if !isRule(err, ipc.ErrStopped) || !errors.Is(err, cause) {
		t.Fatalf("Serve = %v, want ErrStopped wrapping the cause", err)
	}
	wantClosed(t, host)
}

func TestViolationErrorText(t *testing.T) {
	err := &ipc.ViolationError{Err: ipc.ErrSequence, Sequence: 3, Method: ipc.MethodEffect, Detail: "sequence is 5, want 3", Cause: io.EOF}
	want := "ipc: unexpected sequence (request sequence 3 method effect.request): sequence is 5, want 3: EOF"
	if err.Error() != want {
		t.Errorf("got %q", err.Error())
	}
	if !errors.Is(err, ipc.ErrSequence) || !errors.Is(err, io.EOF) {
		t.Error("errors.Is does not see Err and Cause")
	}
	_ = fmt.Sprint(err)
}

// TestSummaryBounded: a host may redeliver one effect any number of times
// within its deadline; the summary keeps the first MaxSummaryExchanges
// exchanges and counts the rest.
func TestSummaryBounded(t *testing.T) {
	f := newFixture(t)
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, f.config())
	wait := serve(t, s, &allowAll{})
	const effects = ipc.MaxSummaryExchanges + 50
	frames := [][]byte{frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap())), frame(t, f.env(2, ipc.MethodAdmit, admitPayload()))}
	for i := range effects {
		frames = append(frames, frame(t, f.env(int64(3+i), ipc.MethodEffect, effectPayload("effect-a"))))
	}
	// The publish falls past the listed exchanges; the summary still says
	// it was allowed.
	frames = append(frames, frame(t, f.env(int64(3+effects), ipc.MethodPublish, publishPayload(t))))
	for i, fr := range frames {
		if _, err := host.Write(fr); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if err := host.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := ipc.ReadFrame(host, 0); err != nil {
			t.Fatalf("reply %d: %v (Serve: %v)", i, err, wait())
		}
	}
	host.CloseWrite()
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	sum := s.Summary()
	if !sum.Published || sum.Methods[ipc.MethodPublish] != 1 {
		t.Errorf("summary: published %v, %d publish requests; want true, 1", sum.Published, sum.Methods[ipc.MethodPublish])
	}
	if sum.Frames != len(frames) || sum.Methods[ipc.MethodEffect] != effects || sum.States[ipc.StateAllowed] != len(frames) {
		t.Errorf("summary counts frames %d, effects %d, allowed %d; want %d, %d, %d",
			sum.Frames, sum.Methods[ipc.MethodEffect], sum.States[ipc.StateAllowed], len(frames), effects, len(frames))
	}
	if len(sum.Exchanges) != ipc.MaxSummaryExchanges || sum.DroppedExchanges != len(frames)-ipc.MaxSummaryExchanges {
		t.Errorf("summary lists %d exchanges and drops %d; want %d and %d",
			len(sum.Exchanges), sum.DroppedExchanges, ipc.MaxSummaryExchanges, len(frames)-ipc.MaxSummaryExchanges)
	}
	if last := sum.Exchanges[len(sum.Exchanges)-1]; last.Sequence != ipc.MaxSummaryExchanges {
		t.Errorf("last listed exchange has sequence %d, want %d", last.Sequence, ipc.MaxSummaryExchanges)
	}
}

func TestAttemptBindingDiff(t *testing.T) {
	want := newFixture(t).binding
	if d := want.Diff(want); d != "" {
		t.Errorf("equal bindings: Diff = %q, want empty", d)
	}
	got := want
	got.AttemptID, got.FencingGeneration = "attempt-old", want.FencingGeneration+1
	wantDiff := fmt.Sprintf("attempt_id got attempt-old, want %s; fencing_generation got %d, want %d",
		want.AttemptID, want.FencingGeneration+1, want.FencingGeneration)
	if d := want.Diff(got); d != wantDiff {
		t.Errorf("Diff = %q\nwant   %q", d, wantDiff)
	}
}

// TestAttemptBindingValidate: Validate names every field that is wrong,
// not only the first, so that launch can report a bad context at once.
func TestAttemptBindingValidate(t *testing.T) {
	good := newFixture(t).binding
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.OrganizationID = ""
	bad.SeatID = strings.Repeat("é", ipc.MaxIdentifierRunes+1)
	bad.CapabilityID = "a\xffb"
	bad.FencingGeneration = 0
	bad.ManifestDigest = "sha256:x"
	err := bad.Validate()
	if !errors.Is(err, ipc.ErrPayload) {
		t.Fatalf("Validate = %v, want ErrPayload", err)
	}
	for _, field := range []string{"organization_id", "seat_id", "capability_id", "fencing_generation", "manifest_digest"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate does not name %s: %v", field, err)
		}
	}
	for _, field := range []string{"project_id", "attempt_id", "request_digest"} {
		if strings.Contains(err.Error(), field) {
			t.Errorf("Validate names the valid %s: %v", field, err)
		}
	}
}
