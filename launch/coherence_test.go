package launch_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
)

// TestForgedResultsRefused checks the coherence rules on real host
// processes. A forged state — waiting_approval, cancelled, refused,
// needs_reconciliation, succeeded — is refused with ErrSessionMismatch
// both when the host writes it without a single frame and when the
// session's replies contradict it; the same states written by an honest
// host after the replies that cause them are accepted, and so are the
// host's own endings before any frame when they are true (a request out
// of the attempt's scope).
func TestForgedResultsRefused(t *testing.T) {
	f := newFixture(t)
	const (
		honest  = ""
		atOnce  = "claim-at-once"
		claimed = "claim"
	)
	outOfScope := func(inv *launch.Invocation) {
		req, err := launch.EncodeRequest("example.fail@1.0.0", map[string]any{"text": "hello"})
		if err != nil {
			t.Fatal(err)
		}
		inv.Request = req
	}
	cases := []struct {
		name     string
		scenario string
		claim    string // the state the scenario writes
		code     string // its error code, when not the usual one
		runtime  handler
		change   func(*launch.Invocation)
		want     launch.State // "" means ErrSessionMismatch
	}{
		{"waiting_approval without frames", atOnce, "waiting_approval", "", handler{}, nil, ""},
		{"cancelled without frames", atOnce, "cancelled", "", handler{}, nil, ""},
		{"refused without frames", atOnce, "refused", "", handler{}, nil, ""},
		{"refused ZEO_HOST_SCOPE without frames, in scope", atOnce, "refused", "ZEO_HOST_SCOPE", handler{}, nil, ""},
		{"needs_reconciliation without frames", atOnce, "needs_reconciliation", "", handler{}, nil, ""},
		{"succeeded without frames", atOnce, "succeeded", "", handler{}, nil, ""},
		{"timed_out without frames, deadline ahead", atOnce, "timed_out", "", handler{}, nil, ""},
		{"waiting_approval after every reply allowed", claimed, "waiting_approval", "", handler{}, nil, ""},
		{"cancelled after every reply allowed", claimed, "cancelled", "", handler{}, nil, ""},
		{"refused after every reply allowed", claimed, "refused", "", handler{}, nil, ""},
		{"needs_reconciliation after every reply allowed", claimed, "needs_reconciliation", "", handler{}, nil, ""},
		{"waiting_approval after admit answered cancelled", claimed, "waiting_approval", "", handler{admit: ipc.StateCancelled}, nil, ""},
		{"cancelled after admit answered refused", claimed, "cancelled", "", handler{admit: ipc.StateRefused}, nil, ""},
		{"refused after admit answered waiting_approval", claimed, "refused", "", handler{admit: ipc.StateWaitingApproval}, nil, ""},
		{"needs_reconciliation after bootstrap answered refused", claimed, "needs_reconciliation", "", handler{bootstrap: ipc.StateRefused}, nil, ""},
		{"succeeded after admit answered refused", claimed, "succeeded", "", handler{admit: ipc.StateRefused}, nil, ""},
		{"succeeded after publish answered waiting_approval", claimed, "succeeded", "", handler{publish: ipc.StateWaitingApproval}, nil, ""},
		// The controls: honest hosts.
		{"honest waiting_approval", honest, "", "", handler{admit: ipc.StateWaitingApproval}, nil, launch.StateWaitingApproval},
		{"honest cancelled", honest, "", "", handler{admit: ipc.StateCancelled}, nil, launch.StateCancelled},
		{"honest refused", honest, "", "", handler{bootstrap: ipc.StateRefused}, nil, launch.StateRefused},
		{"honest needs_reconciliation", honest, "", "", handler{publish: ipc.StateNeedsReconciliation}, nil, launch.StateNeedsReconciliation},
		{"honest succeeded", honest, "", "", handler{}, nil, launch.StateSucceeded},
		{"honest refused ZEO_HOST_SCOPE, out of scope", honest, "", "", handler{}, outOfScope, launch.StateRefused},
	}
	var table []string
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			env := []string{"ZEO_HOSTSIM_SCENARIO=" + tt.scenario, "ZEO_HOSTSIM_CLAIM=" + tt.claim}
			if tt.code != "" {
				env = append(env, "ZEO_HOSTSIM_CLAIM_CODE="+tt.code)
			}
			l, _ := newLauncher(t, env...)
			inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
			h := tt.runtime
			inv.Handler = &h
			if tt.change != nil {
				tt.change(&inv)
			}
			out, err := l.Invoke(testCtx(t), inv)
			if out == nil {
				t.Fatalf("no outcome: %v", err)
			}
			// What the result was judged against is in the Outcome.
			if out.OutOfScope != (tt.change != nil) || out.DeadlinePassed {
				t.Fatalf("Outcome.OutOfScope = %v, DeadlinePassed = %v; want %v, false", out.OutOfScope, out.DeadlinePassed, tt.change != nil)
			}
			got := "accepted as " + string(out.Result.State)
			var re *launch.ResultError
			if errors.As(err, &re) && re.Result != nil {
				got = fmt.Sprintf("refused (%v)", re.Err)
			} else if err != nil {
				got = "error: " + err.Error()
			}
			table = append(table, fmt.Sprintf("| %s | %d | %s |", tt.name, out.Session.Frames, got))
			if tt.want == "" {
				if !errors.Is(err, launch.ErrSessionMismatch) || !errors.Is(err, launch.ErrBadResult) || re == nil || string(re.Result.State) != tt.claim {
					t.Fatalf("forged %s after %d frames: %s, want ErrSessionMismatch", tt.claim, out.Session.Frames, got)
				}
				return
			}
			if err != nil || out.Result.State != tt.want {
				t.Fatalf("%s: want accepted as %s", got, tt.want)
			}
		})
	}
	t.Logf("forged and honest results:\n| case | frames | Invoke |\n|---|---|---|\n%s", strings.Join(table, "\n"))
}

// TestHistoryCheck covers the coherence rules that need a history no host
// process produces on demand: effects, a broken session, the launcher's
// stops, the deadline.
func TestHistoryCheck(t *testing.T) {
	code := func(s string) *string { return &s }
	ex := func(ms ...ipc.Method) []ipc.Exchange {
		var out []ipc.Exchange
		for _, m := range ms {
			out = append(out, ipc.Exchange{Method: m, State: ipc.StateAllowed})
		}
		return out
	}
	summary := func(last ipc.ReplyState, ms ...ipc.Method) ipc.Summary {
		s := ipc.Summary{Frames: len(ms), Methods: map[ipc.Method]int{}, States: map[ipc.ReplyState]int{}, Exchanges: ex(ms...)}
		for i, m := range ms {
			st := ipc.StateAllowed
			if i == len(ms)-1 && last != "" {
				st = last
				s.Exchanges[i].State = st
			}
			s.Methods[m]++
			s.States[st]++
			if m == ipc.MethodPublish && st == ipc.StateAllowed {
				s.Published = true
			}
		}
		return s
	}
	boot, admit, eff, pub := ipc.MethodBootstrap, ipc.MethodAdmit, ipc.MethodEffect, ipc.MethodPublish
	broken := errors.New("session broke")
	cases := []struct {
		name string
		h    launch.History
		r    launch.HostResult
		ok   bool
	}{
		{"needs_reconciliation: the session broke after admit", launch.History{Session: summary("", boot, admit, eff), SessionErr: broken},
			launch.HostResult{State: launch.StateNeedsReconciliation, EffectDisposition: launch.EffectUnknown}, true},
		{"needs_reconciliation: an effect reply the host may have lost", launch.History{Session: summary("", boot, admit, eff)},
			launch.HostResult{State: launch.StateNeedsReconciliation, EffectDisposition: launch.EffectUnknown}, true},
		{"needs_reconciliation: broken before admit", launch.History{Session: summary("", boot), SessionErr: broken},
			launch.HostResult{State: launch.StateNeedsReconciliation, EffectDisposition: launch.EffectUnknown}, false},
		{"refused by an effect reply, one effect confirmed before", launch.History{Session: summary(ipc.StateRefused, boot, admit, eff, eff)},
			launch.HostResult{State: launch.StateRefused, EffectDisposition: launch.EffectConfirmed, ErrorCode: code("ZEO_HOST_REFUSED")}, true},
		{"confirmed with no effect allowed", launch.History{Session: summary(ipc.StateRefused, boot, admit, eff)},
			launch.HostResult{State: launch.StateRefused, EffectDisposition: launch.EffectConfirmed, ErrorCode: code("ZEO_HOST_REFUSED")}, false},
		{"succeeded over a broken session", launch.History{Session: summary("", boot, admit, pub), SessionErr: broken},
			launch.HostResult{State: launch.StateSucceeded, EffectDisposition: launch.EffectNone}, false},
		{"failed: the capability failed after admit", launch.History{Session: summary("", boot, admit, eff)},
			launch.HostResult{State: launch.StateFailed, EffectDisposition: launch.EffectConfirmed, ErrorCode: code("ZEO_CAP_UNEXPECTED")}, true},
		{"failed after publish", launch.History{Session: summary("", boot, admit, pub)},
			launch.HostResult{State: launch.StateFailed, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_CAP_UNEXPECTED")}, false},
		{"unavailable ZEO_HOST_REQUIREMENTS after bootstrap", launch.History{Session: summary("", boot)},
			launch.HostResult{State: launch.StateUnavailable, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_HOST_REQUIREMENTS")}, true},
		{"invalid_request after admit", launch.History{Session: summary("", boot, admit)},
			launch.HostResult{State: launch.StateInvalidRequest, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_HOST_INVALID_REQUEST")}, false},
		{"timed_out: stopped at the deadline", launch.History{Session: summary("", boot, admit), Stopped: launch.StopDeadline},
			launch.HostResult{State: launch.StateTimedOut, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_HOST_DEADLINE")}, true},
		{"timed_out: deadline passed before the host began", launch.History{Session: summary(""), DeadlinePassed: true},
			launch.HostResult{State: launch.StateTimedOut, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_HOST_DEADLINE")}, true},
		{"cancelled: stopped on a cancel", launch.History{Session: summary("", boot), SessionErr: broken, Stopped: launch.StopCancelled},
			launch.HostResult{State: launch.StateCancelled, EffectDisposition: launch.EffectNone}, true},
		{"refused ZEO_HOST_ORGANIZATION after bootstrap", launch.History{Session: summary("", boot)},
			launch.HostResult{State: launch.StateRefused, EffectDisposition: launch.EffectNone, ErrorCode: code("ZEO_HOST_ORGANIZATION")}, true},
		{"protocol_error whatever happened", launch.History{Session: summary("", boot, admit, pub)},
			launch.HostResult{State: launch.StateProtocolError, EffectDisposition: launch.EffectUnknown, ErrorCode: code("ZEO_HOST_PROTOCOL")}, true},
		{"queued", launch.History{Session: summary("", boot, admit)},
			launch.HostResult{State: launch.StateQueued, EffectDisposition: launch.EffectNone}, false},
		{"running", launch.History{Session: summary("", boot, admit)},
			launch.HostResult{State: launch.StateRunning, EffectDisposition: launch.EffectNone}, false},
	}
	for _, tt := range cases {
		if err := tt.h.Check(tt.r); (err == nil) != tt.ok {
			t.Errorf("%s: Check = %v, want coherent %v", tt.name, err, tt.ok)
		}
	}
	// A full exchange record: more than ipc.MaxSummaryExchanges effects,
	// then a refusal of the last one.
	s := summary(ipc.StateRefused, boot, admit)
	s.States = map[ipc.ReplyState]int{ipc.StateAllowed: 2}
	s.Exchanges[1].State = ipc.StateAllowed
	s.Methods[eff] = ipc.MaxSummaryExchanges + 10
	s.States[ipc.StateAllowed] += ipc.MaxSummaryExchanges + 9
	s.States[ipc.StateRefused] = 1
	s.DroppedExchanges = 12
	s.Frames = 2 + ipc.MaxSummaryExchanges + 10
	h := launch.History{Session: s}
	if err := h.Check(launch.HostResult{State: launch.StateRefused, EffectDisposition: launch.EffectConfirmed, ErrorCode: code("ZEO_HOST_REFUSED")}); err != nil {
		t.Errorf("refused by the last of %d effects: %v", s.Methods[eff], err)
	}
	if err := h.Check(launch.HostResult{State: launch.StateWaitingApproval, EffectDisposition: launch.EffectConfirmed}); err == nil {
		t.Error("waiting_approval after a refused effect accepted")
	}
}
