package ipc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// decisionHandler answers with the decisions the test pushes, one per
// call; "error" makes it fail.
type decisionHandler struct{ next chan ipc.ReplyState }

var errDecide = errors.New("model handler failure")

func (h decisionHandler) take(ctx context.Context) (ipc.ReplyState, error) {
	select {
	case s := <-h.next:
		if s == "error" {
			return "", errDecide
		}
		return s, nil
	case <-ctx.Done():
		return "", fmt.Errorf("no decision pushed (the model expected no call): %w", ctx.Err())
	}
}

func (h decisionHandler) Bootstrap(ctx context.Context, _ ipc.BootstrapRequest) (ipc.Decision, error) {
	s, err := h.take(ctx)
	return ipc.Decision{State: s}, err
}
func (h decisionHandler) Admit(ctx context.Context, _ ipc.AdmitRequest) (ipc.Decision, error) {
	s, err := h.take(ctx)
	return ipc.Decision{State: s}, err
}
func (h decisionHandler) Effect(ctx context.Context, r ipc.EffectCall) (ipc.EffectDecision, error) {
	s, err := h.take(ctx)
	return ipc.EffectDecision{State: s, ReceiptID: "r-" + r.Effect.LogicalEffectID, AuthorizationID: "a"}, err
}
func (h decisionHandler) Publish(ctx context.Context, _ ipc.PublishRequest) (ipc.PublishDecision, error) {
	s, err := h.take(ctx)
	return ipc.PublishDecision{State: s, ArtifactRefs: []string{"artifact-a"}}, err
}

// sessionModel is what the Session should have done so far.
type sessionModel struct {
	next                              int64
	bootstrapped, admitSeen, admitted bool
	published, ended                  bool
	exchanges                         []ipc.Exchange
	dead                              error // the rule Serve must return; nil while alive
}

// expectFor returns the rule a well-formed request for method m breaks in
// the model's state, or nil if the Session must answer it.
func (m *sessionModel) expectFor(method ipc.Method) error {
	if !m.bootstrapped {
		if method != ipc.MethodBootstrap {
			return ipc.ErrBootstrapOrder
		}
		return nil
	}
	switch {
	case method == ipc.MethodBootstrap:
		return ipc.ErrBootstrapOrder
	case m.ended:
		return ipc.ErrOrder
	case method == ipc.MethodAdmit && m.admitSeen:
		return ipc.ErrOrder
	case (method == ipc.MethodEffect || method == ipc.MethodPublish) && (!m.admitted || m.published):
		return ipc.ErrOrder
	}
	return nil
}

// TestSessionStateMachine drives a Session over a real socketpair with
// random legal and illegal host behaviour and checks every outcome (reply
// state and correlation, Serve's error rule, the summary) against a model.
func TestSessionStateMachine(t *testing.T) {
	f := newFixture(t)
	methods := []ipc.Method{ipc.MethodBootstrap, ipc.MethodAdmit, ipc.MethodEffect, ipc.MethodPublish}
	decisions := []ipc.ReplyState{ipc.StateAllowed, ipc.StateAllowed, ipc.StateAllowed, ipc.StateRefused,
		ipc.StateCancelled, ipc.StateWaitingApproval, ipc.StateNeedsReconciliation, "error"}
	actions := []string{"request", "request", "request", "request", "request", "wrong sequence", "changed binding",
		"changed nonce", "non-canonical", "second bootstrap", "oversize length", "zero length", "early EOF",
		"late frame", "bad bootstrap pid", "bad admit digest", "bad publish digest", "clean close"}
	outcomes := map[string]int{} // how runs ended, logged for the record
	defer func() { t.Logf("outcomes: %v", outcomes) }()
	rapid.Check(t, func(rt *rapid.T) {
		// One run in ten may send a late frame; only those runs use a
		// short exchange bound, so that a loaded machine does not make
		// the legal exchanges of the other runs time out.
		lateRun := rapid.IntRange(0, 9).Draw(rt, "late run") == 0
		rpc := 5 * time.Second
		if lateRun {
			rpc = 250 * time.Millisecond
		}
		cfg := f.config()
		cfg.RPCTimeout = rpc
		runtimeEnd, host := socketpair(t)
		s := ipc.NewSession(runtimeEnd, cfg)
		h := decisionHandler{next: make(chan ipc.ReplyState, 1)}
		done := make(chan error, 1)
		go func() { done <- s.Serve(context.Background(), h) }()
		defer func() { host.Close(); <-done }()
		m := &sessionModel{next: 1}

		payloadFor := func(method ipc.Method, seq int64) any {
			switch method {
			case ipc.MethodBootstrap:
				return f.bootstrap()
			case ipc.MethodAdmit:
				return admitPayload()
			case ipc.MethodEffect:
				return effectPayload(fmt.Sprintf("effect-%d", seq%3))
			}
			return publishPayload(rt)
		}
		// legalMethod draws a method that is well formed for the model's
		// state most of the time (bootstrap first).
		drawMethod := func() ipc.Method {
			if !m.bootstrapped {
				return ipc.MethodBootstrap
			}
			return rapid.SampledFrom(methods[1:]).Draw(rt, "method")
		}
		closed := false
		steps := rapid.IntRange(1, 10).Draw(rt, "steps")
		for i := 0; i < steps && m.dead == nil && !closed; i++ {
			action := rapid.SampledFrom(actions).Draw(rt, "action")
			method := drawMethod()
			e := f.env(m.next, method, payloadFor(method, m.next))
			var raw []byte
			var rule error // the violation this action must cause; nil = answered
			switch action {
			case "request":
				rule = m.expectFor(method)
			case "wrong sequence":
				e.Sequence = m.next + int64(rapid.SampledFrom([]int{-2, -1, 1, 2, 98}).Draw(rt, "delta"))
				rule = ipc.ErrSequence
			case "changed binding":
				b := f.binding
				switch rapid.IntRange(0, 2).Draw(rt, "field") {
				case 0:
					b.AttemptID = "old"
				case 1:
					b.FencingGeneration++
				default:
					b.RequestDigest = canon.Digest("sha256:" + strings.Repeat("e", 64))
				}
				e.Binding = b
				rule = ipc.ErrBinding
			case "changed nonce":
				if !m.bootstrapped {
					continue
				}
				e.HostNonce = strings.Repeat("9", 64)
				rule = ipc.ErrNonce
			case "non-canonical":
				raw = frameBytes(append([]byte(" "), body(rt, e)...))
				rule = ipc.ErrNotCanonical
			case "second bootstrap":
				if !m.bootstrapped {
					continue
				}
				e = f.env(m.next, ipc.MethodBootstrap, f.bootstrap())
				rule = ipc.ErrBootstrapOrder
			case "oversize length":
				raw = []byte{0, 0x10, 0, 1}
				rule = ipc.ErrFrameTooLarge
			case "zero length":
				raw = []byte{0, 0, 0, 0}
				rule = ipc.ErrEmptyFrame
			case "early EOF":
				full := frame(rt, e)
				raw = full[:rapid.IntRange(1, len(full)-1).Draw(rt, "cut")]
				rule = ipc.ErrTruncated
			case "late frame":
				if !lateRun {
					continue
				}
				full := frame(rt, e)
				raw = full[:len(full)/2]
				rule = ipc.ErrTimeout
			case "bad bootstrap pid":
				if m.bootstrapped {
					continue
				}
				p := f.bootstrap()
				p["pid"] = int64(1)
				e.Payload = p
				rule = ipc.ErrBootstrap
			case "bad admit digest":
				if !m.bootstrapped {
					continue
				}
				e.Method = string(ipc.MethodAdmit)
				e.Payload = map[string]any{"arguments": map[string]any{"text": "changed"}}
				if rule = m.expectFor(ipc.MethodAdmit); rule == nil {
					rule = ipc.ErrDigest
				}
			case "bad publish digest":
				if !m.bootstrapped {
					continue
				}
				e.Method = string(ipc.MethodPublish)
				p := publishPayload(rt)
				p["data"] = map[string]any{"text": "other"}
				e.Payload = p
				if rule = m.expectFor(ipc.MethodPublish); rule == nil {
					rule = ipc.ErrDigest
				}
			case "clean close":
				closed = true
				continue
			}
			if raw == nil {
				raw = frame(rt, e)
			}
			if rule == nil {
				// The Session must answer: push the handler's decision.
				d := rapid.SampledFrom(decisions).Draw(rt, "decision")
				h.next <- d
				if _, err := host.Write(raw); err != nil {
					rt.Fatalf("write: %v", err)
				}
				_ = host.SetReadDeadline(time.Now().Add(10 * time.Second))
				b, err := ipc.ReadFrame(host, 0)
				if err != nil {
					host.Close()
					serr := <-done
					done <- serr
					rt.Fatalf("%s %s: no reply: %v (Serve: %v)", action, method, err, serr)
				}
				rep, err := ipc.DecodeReply(b, 0)
				if err != nil {
					rt.Fatal(err)
				}
				want := d
				if d == "error" {
					want = ipc.StateNeedsReconciliation
				}
				if rep.State != want || rep.Sequence != m.next || rep.RequestDigest != canon.Sum(raw[4:]) || f.binding.Diff(rep.Binding) != "" {
					rt.Fatalf("reply %+v, want state %s sequence %d", rep, want, m.next)
				}
				m.exchanges = append(m.exchanges, ipc.Exchange{Sequence: m.next, Method: method, RequestDigest: canon.Sum(raw[4:]),
					State: want, RequestBytes: len(raw) - 4, ReplyBytes: len(b)})
				m.next++
				switch method {
				case ipc.MethodBootstrap:
					m.bootstrapped = true
				case ipc.MethodAdmit:
					m.admitSeen, m.admitted = true, want == ipc.StateAllowed
				case ipc.MethodPublish:
					m.published = true
				}
				if want != ipc.StateAllowed {
					m.ended = true
				}
				if d == "error" {
					m.dead = ipc.ErrHandler
				}
				continue
			}
			if _, err := host.Write(raw); err != nil {
				rt.Fatalf("write: %v", err)
			}
			switch action {
			case "early EOF":
				host.CloseWrite()
			case "late frame":
				time.Sleep(2 * rpc)
			}
			m.dead = rule
		}
		if m.dead == nil {
			host.CloseWrite()
		}
		err := <-done
		done <- err
		if m.dead == nil {
			outcomes["clean end"]++
		} else {
			outcomes[m.dead.Error()]++
		}
		if m.dead == nil && err != nil {
			rt.Fatalf("Serve = %v, want a clean end", err)
		}
		if m.dead != nil && !isRule(err, m.dead) {
			rt.Fatalf("Serve = %v, want rule %v", err, m.dead)
		}
		if m.dead == nil || m.dead == ipc.ErrHandler {
			// Nothing is left unread: the next read is EOF.
			_ = host.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, rerr := host.Read(make([]byte, 1)); rerr != io.EOF {
				rt.Errorf("host read %v after Serve, want EOF", rerr)
			}
		}
		sum := s.Summary()
		if diff := cmp.Diff(m.exchanges, sum.Exchanges); diff != "" {
			rt.Fatalf("summary exchanges (-model +session):\n%s", diff)
		}
		for _, st := range []ipc.ReplyState{ipc.StateAllowed, ipc.StateRefused, ipc.StateCancelled, ipc.StateWaitingApproval, ipc.StateNeedsReconciliation} {
			n := 0
			for _, x := range m.exchanges {
				if x.State == st {
					n++
				}
			}
			if sum.States[st] != n {
				rt.Fatalf("summary counts %d %s, model %d", sum.States[st], st, n)
			}
		}
	})
}
