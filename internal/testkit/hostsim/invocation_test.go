package hostsim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/ipc"
)

const testLaunchDigest canon.Digest = "sha256:3ac64e6752f729f5a1afbc204aa7d7d6683307bef3f38be648fb0a92fef56aeb"

// echoInvocation is the upstream conformance fixture as plain inputs.
func echoInvocation() *hostsim.Invocation {
	return &hostsim.Invocation{
		Binding: testBinding, ProviderManifestDigest: testBinding.ManifestDigest,
		AdmittedCapabilities: []string{"example.echo@1.0.0"}, BootstrapID: "bootstrap-a",
		LaunchDigest: testLaunchDigest, Deadline: time.Now().Add(time.Minute),
		CapabilityID: "example.echo@1.0.0", Arguments: map[string]any{"text": "hello"},
		Normalize: func(args map[string]any) (map[string]any, error) {
			if _, ok := args["text"].(string); !ok {
				return nil, errors.New("text must be a string")
			}
			return orgDefault(args)
		},
		Provider: hostsim.Echo(),
	}
}

func sessionConfig(inv *hostsim.Invocation) ipc.SessionConfig {
	return ipc.SessionConfig{ChildPID: os.Getpid(), Binding: inv.Binding, BootstrapID: inv.BootstrapID,
		LaunchDigest: inv.LaunchDigest, Deadline: inv.Deadline.Add(time.Second), Credentials: ipc.CredentialsRequired}
}

type want struct {
	state       string
	frames      int
	code        string // "" = null
	disposition string
	refs        []string
}

// runWithSession runs inv against a real ipc.Session (credential check
// on: this process is the "child") and checks the result.
func runWithSession(t *testing.T, inv *hostsim.Invocation, h ipc.Handler, w want, wantServe error) {
	t.Helper()
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, sessionConfig(inv))
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), h) }()
	rep := inv.Run(context.Background(), host)
	err := <-done
	if wantServe == nil && err != nil || wantServe != nil && !errors.Is(err, wantServe) {
		t.Errorf("Serve = %v, want %v", err, wantServe)
	}
	checkReport(t, rep, w, inv.Binding)
	if got := len(s.Summary().Exchanges); got != w.frames && wantServe == nil {
		t.Errorf("Session answered %d requests, hostsim sent %d", got, w.frames)
	}
}

func checkReport(t *testing.T, rep hostsim.Report, w want, binding ...ipc.AttemptBinding) {
	t.Helper()
	r := rep.Result
	if w.disposition == "" {
		w.disposition = hostsim.DispositionNone
	}
	if w.refs == nil {
		w.refs = []string{}
	}
	got := want{state: r.State, frames: len(rep.Methods), disposition: r.EffectDisposition, refs: r.ArtifactRefs}
	if r.ErrorCode != nil {
		got.code = *r.ErrorCode
	}
	if diff := cmp.Diff(w, got, cmp.AllowUnexported(want{})); diff != "" {
		t.Errorf("result (-want +got):\n%s\n(err: %v)", diff, rep.Err)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("result invalid: %v", err)
	}
	wantBinding := testBinding
	if len(binding) > 0 {
		wantBinding = binding[0]
	}
	if r.Binding == nil || wantBinding.Diff(*r.Binding) != "" {
		t.Errorf("result binding %+v", r.Binding)
	}
	if r.ExitCode() != hostsim.ExitCode(r.State) || r.ExitCode() < 0 {
		t.Errorf("exit code %d for %s", r.ExitCode(), r.State)
	}
}

// TestInvocationSequences covers upstream invocation_sequences and the
// zeocreator host scenarios that an ipc.Session can play.
func TestInvocationSequences(t *testing.T) {
	boom := errors.New("activation failed")
	tests := []struct {
		name string
		mut  func(*hostsim.Invocation)
		peer *peer
		want want
	}{
		{"success", nil, &peer{}, want{state: "succeeded", frames: 3, refs: []string{"artifact-a"}}},
		{"other capability (scope)", func(i *hostsim.Invocation) { i.CapabilityID = "example.other@1.0.0" }, &peer{}, want{state: "refused", code: "ZEO_HOST_SCOPE"}},
		{"capability not admitted (scope)", func(i *hostsim.Invocation) { i.AdmittedCapabilities = nil }, &peer{}, want{state: "refused", code: "ZEO_HOST_SCOPE"}},
		{"manifest digest differs (scope)", func(i *hostsim.Invocation) {
			i.ProviderManifestDigest = canon.Digest("sha256:" + strings.Repeat("0", 64))
		}, &peer{}, want{state: "refused", code: "ZEO_HOST_SCOPE"}},
		{"changed request", func(i *hostsim.Invocation) { i.Arguments = map[string]any{"text": "changed"} }, &peer{}, want{state: "refused", frames: 1, code: "ZEO_HOST_REQUEST_BINDING"}},
		{"invalid arguments", func(i *hostsim.Invocation) { i.Arguments = map[string]any{"text": int64(4)} }, &peer{}, want{state: "invalid_request", frames: 1, code: "ZEO_HOST_INVALID_REQUEST"}},
		{"admit refused", nil, &peer{admitState: ipc.StateRefused}, want{state: "refused", frames: 2, code: "ZEO_HOST_REFUSED"}},
		{"admit cancelled", nil, &peer{admitState: ipc.StateCancelled}, want{state: "cancelled", frames: 2}},
		{"admit waiting_approval", nil, &peer{admitState: ipc.StateWaitingApproval}, want{state: "waiting_approval", frames: 2}},
		{"admit needs_reconciliation", nil, &peer{admitState: ipc.StateNeedsReconciliation}, want{state: "needs_reconciliation", frames: 2, disposition: "unknown"}},
		{"wrong organization", func(i *hostsim.Invocation) {
			i.Arguments = map[string]any{"text": "hello", "organization_id": "org-b"}
			d, _ := ipc.RequestDigest(i.CapabilityID, i.Arguments)
			i.Binding.RequestDigest = d
		}, &peer{}, want{state: "refused", frames: 1, code: "ZEO_HOST_ORGANIZATION"}},
		{"bootstrap refused", nil, &peer{bootState: ipc.StateRefused}, want{state: "refused", frames: 1, code: "ZEO_HOST_REFUSED"}},
		{"wrong version (activation)", func(i *hostsim.Invocation) { i.Activate = func() error { return boom } }, &peer{}, want{state: "protocol_error", frames: 1, code: "ZEO_HOST_PROTOCOL"}},
		{"missing service (requirements)", func(i *hostsim.Invocation) { i.Requirements = func() error { return boom } }, &peer{}, want{state: "unavailable", frames: 1, code: "ZEO_HOST_REQUIREMENTS"}},
		{"domain failure", func(i *hostsim.Invocation) {
			i.Provider = func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
				return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZC_DOMAIN"}
			}
		}, &peer{}, want{state: "failed", frames: 2, code: "ZC_DOMAIN"}},
		{"capability unavailable without code", func(i *hostsim.Invocation) {
			i.Provider = func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
				return hostsim.Outcome{Status: hostsim.OutcomeUnavailable}
			}
		}, &peer{}, want{state: "unavailable", frames: 2, code: "ZEO_HOST_CAPABILITY_FAILED"}},
		{"capability cancelled", func(i *hostsim.Invocation) {
			i.Provider = func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
				return hostsim.Outcome{Status: hostsim.OutcomeCancelled, ErrorCode: "ZEO_CAP_CANCELLED"}
			}
		}, &peer{}, want{state: "cancelled", frames: 2, code: "ZEO_CAP_CANCELLED"}},
		{"provider panics", func(i *hostsim.Invocation) {
			i.Provider = func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome { panic("boom") }
		}, &peer{}, want{state: "failed", frames: 2, code: "ZEO_CAP_UNEXPECTED"}},
		{"error code over 256", func(i *hostsim.Invocation) {
			i.Provider = func(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
				return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZC_" + strings.Repeat("X", 300)}
			}
		}, &peer{}, want{state: "protocol_error", frames: 2, code: "ZEO_HOST_PROTOCOL"}},
		{"response fails its schema", func(i *hostsim.Invocation) { i.ValidateResponse = func(map[string]any) error { return boom } }, &peer{}, want{state: "protocol_error", frames: 2, code: "ZEO_HOST_PROTOCOL"}},
		{"publication refused", nil, &peer{pubState: ipc.StateRefused}, want{state: "refused", frames: 3, code: "ZEO_HOST_REFUSED"}},
		{"publication waiting", nil, &peer{pubState: ipc.StateWaitingApproval}, want{state: "waiting_approval", frames: 3}},
		{"two refs in order", nil, &peer{refs: []string{"b", "a"}}, want{state: "succeeded", frames: 3, refs: []string{"b", "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := echoInvocation()
			if tt.mut != nil {
				tt.mut(inv)
			}
			runWithSession(t, inv, tt.peer, tt.want, nil)
		})
	}
	t.Run("deadline 1 ms after the epoch", func(t *testing.T) {
		inv := echoInvocation()
		inv.Deadline = time.UnixMilli(1)
		// The Session has the same past deadline: it stops waiting at once.
		runWithSession(t, inv, &peer{}, want{state: "timed_out", code: "ZEO_HOST_DEADLINE"}, ipc.ErrDeadline)
	})
}

// TestInvocationBrokenPeer covers the zeocreator scenarios that need a
// Runtime misbehaving on the wire, which an ipc.Session never does.
func TestInvocationBrokenPeer(t *testing.T) {
	tests := []struct {
		name  string
		reply func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte
		want  want
	}{
		{"stale reply (binding fencing_generation 2)", func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte {
			b := r.Binding
			b.FencingGeneration = 2
			return replyFor(t, r, d, map[string]any{"binding": b})
		}, want{state: "protocol_error", frames: 1, code: "ZEO_HOST_PROTOCOL"}},
		{"lost publication reply", func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodPublish {
				return nil
			}
			return replyFor(t, r, d, nil)
		}, want{state: "protocol_error", frames: 3, code: "ZEO_HOST_PROTOCOL"}},
		{"wrong artifact digest", func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodPublish {
				return replyFor(t, r, d, map[string]any{"data": map[string]any{"data_digest": "sha256:" + strings.Repeat("0", 64), "artifact_refs": []string{"a"}}})
			}
			return replyFor(t, r, d, nil)
		}, want{state: "protocol_error", frames: 3, code: "ZEO_HOST_PROTOCOL"}},
		{"empty artifact refs", func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodPublish {
				p, _, _ := r.DecodePublish()
				return replyFor(t, r, d, map[string]any{"data": map[string]any{"data_digest": string(p.DataDigest), "artifact_refs": []string{}}})
			}
			return replyFor(t, r, d, nil)
		}, want{state: "protocol_error", frames: 3, code: "ZEO_HOST_PROTOCOL"}},
		{"artifact ref over 256", func(t *testing.T, i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodPublish {
				p, _, _ := r.DecodePublish()
				return replyFor(t, r, d, map[string]any{"data": map[string]any{"data_digest": string(p.DataDigest), "artifact_refs": []string{strings.Repeat("r", 257)}}})
			}
			return replyFor(t, r, d, nil)
		}, want{state: "protocol_error", frames: 3, code: "ZEO_HOST_PROTOCOL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt, host := socketpair(t)
			fakeRuntime(t, rt, func(i int, r *ipc.Request, d canon.Digest) []byte { return tt.reply(t, i, r, d) })
			checkReport(t, echoInvocation().Run(context.Background(), host), tt.want)
		})
	}
}

func effectReq(id string, args map[string]any) ipc.EffectRequest {
	if args == nil {
		args = map[string]any{}
	}
	return ipc.EffectRequest{LogicalEffectID: id, ConnectionRef: "connection-a", ConnectorRevision: hostsim.DemoConnectorRevision, Operation: "read", Arguments: args}
}

// TestEffectPort covers upstream effect_port behaviours through a real
// Session and through a Runtime that loses replies.
func TestEffectPort(t *testing.T) {
	admitted := func(t *testing.T, h ipc.Handler, budget int64) (*hostsim.EffectPort, *hostsim.Channel, func() error) {
		inv := echoInvocation()
		rt, host := socketpair(t)
		s := ipc.NewSession(rt, sessionConfig(inv))
		done := make(chan error, 1)
		go func() { done <- s.Serve(context.Background(), h) }()
		ch, err := hostsim.NewChannel(host, hostsim.ChannelConfig{Binding: testBinding, Deadline: inv.Deadline})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Call(context.Background(), ipc.MethodBootstrap, ipc.BootstrapPayload{BootstrapID: "bootstrap-a", LaunchDigest: testLaunchDigest, PID: os.Getpid()}); err != nil {
			t.Fatal(err)
		}
		if _, err := ch.Call(context.Background(), ipc.MethodAdmit, ipc.AdmitPayload{Arguments: map[string]any{"organization_id": "org-a", "text": "hello"}}); err != nil {
			t.Fatal(err)
		}
		return hostsim.NewEffectPort(ch, budget), ch, func() error { ch.Close(); return <-done }
	}
	ctx := context.Background()
	t.Run("redelivery, changed input, budget", func(t *testing.T) {
		p, ch, end := admitted(t, &peer{}, 1)
		a, err := p.Request(ctx, effectReq("effect-a", nil))
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.Request(ctx, effectReq("effect-a", nil))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("redelivery returned other data:\n%s", diff)
		}
		if ch.Sent() != 4 || p.Distinct() != 1 {
			t.Errorf("sent %d frames, %d distinct effects; want 4 and 1", ch.Sent(), p.Distinct())
		}
		if _, err := p.Request(ctx, effectReq("effect-a", map[string]any{"changed": true})); !errors.Is(err, hostsim.ErrChangedInput) {
			t.Errorf("changed input: %v", err)
		}
		if _, err := p.Request(ctx, effectReq("effect-b", nil)); !errors.Is(err, hostsim.ErrBudget) {
			t.Errorf("over budget: %v", err)
		}
		if ch.Sent() != 4 || p.Disposition() != "confirmed" {
			t.Errorf("local refusals sent frames (%d) or disposition %s", ch.Sent(), p.Disposition())
		}
		if err := end(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Run("budget zero", func(t *testing.T) {
		p, ch, end := admitted(t, &peer{}, 0)
		if _, err := p.Request(ctx, effectReq("effect-a", nil)); !errors.Is(err, hostsim.ErrBudget) || ch.Sent() != 2 {
			t.Errorf("err %v, sent %d", err, ch.Sent())
		}
		end()
	})
	for _, st := range []ipc.ReplyState{ipc.StateRefused, ipc.StateCancelled, ipc.StateWaitingApproval, ipc.StateNeedsReconciliation} {
		t.Run("reply "+string(st), func(t *testing.T) {
			p, ch, end := admitted(t, &peer{effectState: map[string]ipc.ReplyState{"effect-a": st}}, 2)
			_, err := p.Request(ctx, effectReq("effect-a", nil))
			var na *hostsim.NotAllowedError
			if !errors.As(err, &na) || na.State != st {
				t.Fatalf("err = %v", err)
			}
			if p.Pending() == nil || p.Unknown() != (st == ipc.StateNeedsReconciliation) {
				t.Errorf("pending %v unknown %v", p.Pending(), p.Unknown())
			}
			if _, err := p.Request(ctx, effectReq("effect-b", nil)); !errors.Is(err, hostsim.ErrEffectsBlocked) || ch.Sent() != 3 {
				t.Errorf("after %s: %v, sent %d", st, err, ch.Sent())
			}
			end()
		})
	}
	t.Run("lost reply stays unknown", func(t *testing.T) {
		rt, host := socketpair(t)
		fakeRuntime(t, rt, func(i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodEffect {
				return nil
			}
			return replyFor(t, r, d, nil)
		})
		inv := echoInvocation()
		inv.Budget = 2
		inv.Provider = hostsim.Effects([]ipc.EffectRequest{effectReq("effect-a", nil), effectReq("effect-b", nil)}, nil, "ZC_EFFECT")
		checkReport(t, inv.Run(ctx, host), want{state: "needs_reconciliation", frames: 3, disposition: "unknown"})
	})
	t.Run("unbound receipt stays unknown", func(t *testing.T) {
		rt, host := socketpair(t)
		fakeRuntime(t, rt, func(i int, r *ipc.Request, d canon.Digest) []byte {
			if r.Method == ipc.MethodEffect {
				e, _, _ := r.DecodeEffect()
				return replyFor(t, r, d, map[string]any{"data": map[string]any{"logical_effect_id": e.LogicalEffectID,
					"effect_request_digest": "sha256:" + strings.Repeat("9", 64), "receipt_id": "r", "authorization_id": "a", "effect_disposition": "confirmed"}})
			}
			return replyFor(t, r, d, nil)
		})
		inv := echoInvocation()
		inv.Budget = 1
		inv.Provider = func(ctx context.Context, _ map[string]any, p *hostsim.EffectPort) hostsim.Outcome {
			_, err := p.Request(ctx, effectReq("effect-a", nil))
			if !errors.Is(err, hostsim.ErrReceipt) {
				t.Errorf("err = %v, want ErrReceipt", err)
			}
			return hostsim.Outcome{Status: hostsim.OutcomeSuccess, Response: map[string]any{"text": "x"}}
		}
		checkReport(t, inv.Run(ctx, host), want{state: "needs_reconciliation", frames: 3, disposition: "unknown"})
	})
	t.Run("refused effect ends refused without publish", func(t *testing.T) {
		inv := echoInvocation()
		inv.Budget = 1
		inv.Provider = hostsim.Effects([]ipc.EffectRequest{effectReq("effect-a", nil)}, map[string]any{"text": "x"}, "ZC_EFFECT")
		runWithSession(t, inv, &peer{effectState: map[string]ipc.ReplyState{"effect-a": ipc.StateRefused}},
			want{state: "refused", frames: 3, code: "ZEO_HOST_REFUSED"}, nil)
	})
	t.Run("confirmed effect then success", func(t *testing.T) {
		inv := echoInvocation()
		inv.Budget = 1
		inv.Provider = hostsim.Effects([]ipc.EffectRequest{effectReq("effect-a", nil), effectReq("effect-a", nil)}, map[string]any{"text": "x"}, "ZC_EFFECT")
		runWithSession(t, inv, &peer{}, want{state: "succeeded", frames: 5, disposition: "confirmed", refs: []string{"artifact-a"}}, nil)
	})
	t.Run("Runtime handler fails on effect", func(t *testing.T) {
		inv := echoInvocation()
		inv.Budget = 1
		inv.Provider = hostsim.Effects([]ipc.EffectRequest{effectReq("effect-a", nil)}, map[string]any{"text": "x"}, "ZC_EFFECT")
		runWithSession(t, inv, &failingEffects{}, want{state: "needs_reconciliation", frames: 3, disposition: "unknown"}, ipc.ErrHandler)
	})
}

type failingEffects struct{ peer }

func (*failingEffects) Effect(context.Context, ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{}, fmt.Errorf("dispatcher timed out")
}

func TestResultLineAndExitCodes(t *testing.T) {
	for state, code := range map[string]int{"succeeded": 0, "invalid_request": 2, "refused": 3, "unavailable": 4, "failed": 5,
		"cancelled": 6, "timed_out": 7, "protocol_error": 8, "queued": 10, "running": 10, "waiting_approval": 10,
		"needs_reconciliation": 10, "bogus": -1} {
		if got := hostsim.ExitCode(state); got != code {
			t.Errorf("ExitCode(%s) = %d, want %d", state, got, code)
		}
	}
	line, err := hostsim.ProtocolErrorResult().Line()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"artifact_refs":[],"binding":null,"data":null,"effect_disposition":"unknown","error_code":"ZEO_HOST_PROTOCOL","protocol_version":1,"state":"protocol_error"}` + "\n"
	if string(line) != want {
		t.Errorf("line %s", line)
	}
}
