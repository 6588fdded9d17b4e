package hostsim_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

var testBinding = ipc.AttemptBinding{
	OrganizationID: "org-a", ProjectID: "project-a", SeatID: "seat-a", RuntimeBindingID: "runtime-a",
	PacketID: "packet-a", OperationID: "op-a", AttemptID: "attempt-a", FencingGeneration: 1,
	CapabilityID:   "example.echo@1.0.0",
	RequestDigest:  "sha256:3728323797a91381fc9531abaaece040023f2ce3860adfd65224b16b33f1c342",
	ManifestDigest: "sha256:94501004599aee07455038e0ddac8a4799b49bb6771cbbfe5260541806d24210",
}

// fakeRuntime answers each request frame with whatever reply returns
// (nil: close the connection instead). It stops at EOF.
func fakeRuntime(t *testing.T, conn net.Conn, reply func(i int, req *ipc.Request, digest canon.Digest) []byte) <-chan int {
	t.Helper()
	n := make(chan int, 1)
	go func() {
		i := 0
		defer func() { n <- i }()
		for {
			body, err := ipc.ReadFrame(conn, 0)
			if err != nil {
				return
			}
			req, d, err := ipc.DecodeRequest(body, 0)
			if err != nil {
				t.Errorf("hostsim sent an invalid request: %v", err)
				return
			}
			i++
			out := reply(i, req, d)
			if out == nil {
				conn.Close()
				return
			}
			if _, err := conn.Write(out); err != nil {
				return
			}
		}
	}()
	return n
}

// replyFor builds a valid allowed reply to req, then applies overrides.
func replyFor(t *testing.T, req *ipc.Request, d canon.Digest, override map[string]any) []byte {
	t.Helper()
	m := map[string]any{"protocol_version": 1, "sequence": req.Sequence, "host_nonce": req.HostNonce,
		"binding": req.Binding, "request_digest": string(d), "state": "allowed", "data": map[string]any{}}
	for k, v := range override {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := canon.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return frameOf(b)
}

func frameOf(b []byte) []byte {
	return append([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
}

func newChannel(t *testing.T, conn net.Conn, mut func(*hostsim.ChannelConfig)) *hostsim.Channel {
	t.Helper()
	cfg := hostsim.ChannelConfig{Binding: testBinding, Deadline: time.Now().Add(time.Minute)}
	if mut != nil {
		mut(&cfg)
	}
	ch, err := hostsim.NewChannel(conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func bootPayload() ipc.BootstrapPayload {
	return ipc.BootstrapPayload{BootstrapID: "bootstrap-a", LaunchDigest: canon.Digest("sha256:" + strings.Repeat("3", 64)), PID: os.Getpid()}
}

type overridesFile struct {
	Upstream struct {
		Overrides struct {
			Overrides []map[string]any `json:"overrides"`
		} `json:"reply_binding_mismatch_overrides"`
	} `json:"upstream_inline"`
}

// TestReplyBindingMismatchOverrides: each upstream override applied to an
// otherwise valid bootstrap reply makes the exchange fail and poisons the
// channel; a second bootstrap is refused without sending anything.
func TestReplyBindingMismatchOverrides(t *testing.T) {
	v := testvectors.Inline[overridesFile](t)
	if len(v.Upstream.Overrides.Overrides) != 4 {
		t.Fatalf("%d overrides in the vectors", len(v.Upstream.Overrides.Overrides))
	}
	for _, ov := range v.Upstream.Overrides.Overrides {
		ov := ov
		if _, ok := ov["binding"]; ok { // the vector describes it in prose
			old := testBinding
			old.AttemptID = "old"
			ov = map[string]any{"binding": old}
		}
		t.Run(string(mustJSON(ov)), func(t *testing.T) {
			rt, host := socketpair(t)
			frames := fakeRuntime(t, rt, func(_ int, req *ipc.Request, d canon.Digest) []byte { return replyFor(t, req, d, ov) })
			ch := newChannel(t, host, nil)
			_, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload())
			if !errors.Is(err, hostsim.ErrExchange) || !errors.Is(err, hostsim.ErrCorrelation) {
				t.Fatalf("bootstrap = %v, want ErrCorrelation", err)
			}
			if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload()); !errors.Is(err, hostsim.ErrBroken) {
				t.Fatalf("second bootstrap = %v, want ErrBroken", err)
			}
			if _, err := ch.Call(context.Background(), ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{}}); !errors.Is(err, hostsim.ErrBroken) {
				t.Fatalf("admit = %v, want ErrBroken", err)
			}
			ch.Close()
			if n := <-frames; n != 1 {
				t.Fatalf("the Runtime received %d frames, want 1", n)
			}
		})
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestChannelReplyChecks(t *testing.T) {
	tests := []struct {
		name string
		rep  func(t *testing.T, req *ipc.Request, d canon.Digest) []byte
		want error // nil: accepted
	}{
		{"canonical", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte { return replyFor(t, r, d, nil) }, nil},
		{"data absent is {}", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			return replyFor(t, r, d, map[string]any{"data": nil})
		}, nil},
		{"not canonical but valid", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			b := replyFor(t, r, d, nil)[4:]
			var m map[string]any
			_ = json.Unmarshal(b, &m)
			pretty, _ := json.MarshalIndent(m, " ", "\t")
			return frameOf(pretty)
		}, nil},
		{"extra key", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			return replyFor(t, r, d, map[string]any{"extra": 1})
		}, hostsim.ErrReply},
		{"data null", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			b := string(replyFor(t, r, d, nil)[4:])
			return frameOf([]byte(strings.Replace(b, `"data":{}`, `"data":null`, 1)))
		}, hostsim.ErrReply},
		{"protocol_version 1.0", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			b := string(replyFor(t, r, d, nil)[4:])
			return frameOf([]byte(strings.Replace(b, `"protocol_version":1`, `"protocol_version":1.0`, 1)))
		}, hostsim.ErrReply},
		{"state unknown", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			return replyFor(t, r, d, map[string]any{"state": "ok"})
		}, hostsim.ErrReply},
		{"duplicate key", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			b := string(replyFor(t, r, d, nil)[4:])
			return frameOf([]byte(strings.Replace(b, `"data":{}`, `"data":{},"data":{}`, 1)))
		}, hostsim.ErrReply},
		{"zero length", func(*testing.T, *ipc.Request, canon.Digest) []byte { return []byte{0, 0, 0, 0} }, hostsim.ErrReplyTooLarge},
		{"over max", func(*testing.T, *ipc.Request, canon.Digest) []byte { return []byte{0, 0x10, 0, 1} }, hostsim.ErrReplyTooLarge},
		{"disconnect", func(*testing.T, *ipc.Request, canon.Digest) []byte { return nil }, hostsim.ErrDisconnected},
		{"cut mid-frame", func(t *testing.T, r *ipc.Request, d canon.Digest) []byte {
			return replyFor(t, r, d, nil)[:50]
		}, hostsim.ErrDisconnected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, host := socketpair(t)
			fakeRuntime(t, rt, func(_ int, r *ipc.Request, d canon.Digest) []byte {
				out := tt.rep(t, r, d)
				if tt.name == "cut mid-frame" {
					rt.Write(out)
					rt.Close()
					return nil
				}
				return out
			})
			ch := newChannel(t, host, nil)
			rep, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload())
			if tt.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := rep.Data.(map[string]any); !ok {
					t.Errorf("data %T", rep.Data)
				}
				return
			}
			if !errors.Is(err, tt.want) || !errors.Is(err, hostsim.ErrExchange) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if ch.Broken() == nil {
				t.Error("channel not broken")
			}
		})
	}
}

// TestChannelDribbledReply is upstream's ipc_dribble_timeout: after the
// bootstrap frame the Runtime sends length 1000 and then one space every
// 20 ms; with rpc_timeout_ms 60 the exchange fails long before 20 bytes.
func TestChannelDribbledReply(t *testing.T) {
	rt, host := socketpair(t)
	sent := make(chan int, 1)
	go func() {
		n := 0
		defer func() { sent <- n }()
		if _, err := ipc.ReadFrame(rt, 0); err != nil {
			return
		}
		if _, err := rt.Write([]byte{0, 0, 0x03, 0xE8}); err != nil {
			return
		}
		for range 1000 {
			if _, err := rt.Write([]byte(" ")); err != nil {
				return
			}
			n++
			time.Sleep(20 * time.Millisecond)
			if n >= 20 {
				return
			}
		}
	}()
	ch := newChannel(t, host, func(c *hostsim.ChannelConfig) { c.RPCTimeout = 60 * time.Millisecond })
	_, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload())
	if !errors.Is(err, hostsim.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	host.Close()
	if n := <-sent; n >= 20 {
		t.Errorf("the host waited for %d dribbled bytes", n)
	}
}

// TestChannelDeadlines: no call after the deadline (nothing sent), and a
// reply completing at the deadline is late.
func TestChannelDeadlines(t *testing.T) {
	t.Run("elapsed", func(t *testing.T) {
		rt, host := socketpair(t)
		frames := fakeRuntime(t, rt, func(_ int, r *ipc.Request, d canon.Digest) []byte { return replyFor(t, r, d, nil) })
		ch := newChannel(t, host, func(c *hostsim.ChannelConfig) { c.Deadline = time.Now().Add(-time.Second) })
		if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload()); !errors.Is(err, hostsim.ErrDeadline) {
			t.Fatalf("err = %v", err)
		}
		ch.Close()
		if n := <-frames; n != 0 {
			t.Errorf("%d frames sent after the deadline", n)
		}
	})
	t.Run("late reply", func(t *testing.T) {
		rt, host := socketpair(t)
		fakeRuntime(t, rt, func(_ int, r *ipc.Request, d canon.Digest) []byte { return replyFor(t, r, d, nil) })
		deadline := time.Now().Add(time.Minute)
		calls := 0
		ch := newChannel(t, host, func(c *hostsim.ChannelConfig) {
			c.Deadline = deadline
			c.Now = func() time.Time { // before the exchange, then exactly at the deadline
				calls++
				if calls == 1 {
					return deadline.Add(-time.Second)
				}
				return deadline
			}
		})
		if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload()); !errors.Is(err, hostsim.ErrLateReply) {
			t.Fatalf("err = %v, want ErrLateReply", err)
		}
	})
}

func TestChannelLocalRefusals(t *testing.T) {
	t.Run("admit before bootstrap", func(t *testing.T) {
		_, host := socketpair(t)
		ch := newChannel(t, host, nil)
		if _, err := ch.Call(context.Background(), ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{}}); !errors.Is(err, hostsim.ErrSessionUnavailable) {
			t.Fatal(err)
		}
	})
	t.Run("admit after refused bootstrap, second bootstrap", func(t *testing.T) {
		rt, host := socketpair(t)
		frames := fakeRuntime(t, rt, func(_ int, r *ipc.Request, d canon.Digest) []byte {
			return replyFor(t, r, d, map[string]any{"state": "refused"})
		})
		ch := newChannel(t, host, nil)
		rep, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload())
		if err != nil || rep.State != ipc.StateRefused {
			t.Fatal(rep, err)
		}
		if _, err := ch.Call(context.Background(), ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{}}); !errors.Is(err, hostsim.ErrSessionUnavailable) {
			t.Fatal(err)
		}
		if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload()); !errors.Is(err, hostsim.ErrBootstrapUsed) {
			t.Fatal(err)
		}
		ch.Close()
		if n := <-frames; n != 1 {
			t.Errorf("%d frames sent", n)
		}
	})
	t.Run("request too large", func(t *testing.T) {
		rt, host := socketpair(t)
		frames := fakeRuntime(t, rt, func(_ int, r *ipc.Request, d canon.Digest) []byte { return replyFor(t, r, d, nil) })
		ch := newChannel(t, host, func(c *hostsim.ChannelConfig) { c.MaxMessageBytes = 1024 })
		if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, bootPayload()); err != nil {
			t.Fatal(err)
		}
		_, err := ch.Call(context.Background(), ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{"x": strings.Repeat("a", 1024)}})
		if !errors.Is(err, hostsim.ErrRequestTooLarge) {
			t.Fatal(err)
		}
		if ch.Broken() == nil {
			t.Error("not broken")
		}
		ch.Close()
		if n := <-frames; n != 1 {
			t.Errorf("%d frames sent", n)
		}
	})
}
