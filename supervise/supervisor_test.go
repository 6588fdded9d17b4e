package supervise_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
)

// TestSuccessNoEffects: echo succeeds; its data is the operation's
// artifact; the attempt's evidence is recorded; invoking the operation
// again returns the accepted result without launching.
func TestSuccessNoEffects(t *testing.T) {
	t.Parallel()
	ctx, l, d, s := setup(t, nil)
	c := call("op-echo", "example.echo@1.0.0", map[string]any{"text": "hello"}, 0)
	o, err := s.Invoke(ctx, c)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if !o.Launched || o.Reconnected || o.Result == nil || len(o.Result.ArtifactRefs) != 1 || d.total() != 0 {
		t.Fatalf("outcome %+v, %d dispatches", o, d.total())
	}
	if o.Host == nil || o.Host.State != launch.StateSucceeded || o.Host.ArtifactRefs[0] != o.Result.ArtifactRefs[0] {
		t.Fatalf("host result %+v, accepted %+v", o.Host, o.Result)
	}
	a, err := s.Artifact(ctx, scope, o.Result.ArtifactRefs[0])
	if err != nil || !bytes.Equal(a.Bytes, []byte(`{"text":"hello"}`)) || a.Digest != canon.Sum(a.Bytes) {
		t.Fatalf("artifact %+v, %v", a, err)
	}
	if o.Evidence == nil || o.EvidenceErr != nil || o.Evidence.State != "succeeded" || o.Evidence.Session.Frames != 3 ||
		o.Evidence.PID != o.Launch.Process.PID || !bytes.Equal(o.Evidence.HostResult, o.Launch.Process.Stdout) {
		t.Fatalf("evidence %+v, err %v", o.Evidence, o.EvidenceErr)
	}
	// The recorded evidence rebuilds the attempt's binding, and the host's
	// result parses against it.
	evs, err := l.Evidence(ctx, scope, "op-echo")
	if err != nil || len(evs) != 1 {
		t.Fatalf("evidence %+v, %v", evs, err)
	}
	view, err := l.Operation(ctx, scope, "op-echo")
	if err != nil {
		t.Fatal(err)
	}
	ev := evs[0]
	b := handler.BindingOf(view.Operation, ev)
	if b != *o.Host.Binding {
		t.Fatalf("rebuilt binding %+v, the attempt's %+v", b, *o.Host.Binding)
	}
	if _, err := launch.ParseResult(ev.HostResult, ev.ExitCode, b); err != nil {
		t.Fatalf("ParseResult against the rebuilt binding: %v", err)
	}
	// Same operation again: the accepted result, nothing launched.
	again, err := s.Invoke(ctx, c)
	wantState(t, again, err, launch.StateSucceeded, nil)
	if again.Launched || !again.Reconnected || again.Result.ArtifactRefs[0] != o.Result.ArtifactRefs[0] {
		t.Fatalf("reconnect %+v", again)
	}
	if v, _ := l.Operation(ctx, scope, "op-echo"); len(v.Attempts) != 1 {
		t.Fatalf("%d attempts after the reconnect, want 1", len(v.Attempts))
	}
}

// TestSuccessTwoEffects: each effect is dispatched once, confirmed with
// its receipt, and the budget is spent.
func TestSuccessTwoEffects(t *testing.T) {
	t.Parallel()
	ctx, _, d, s := setup(t, nil)
	o, err := s.Invoke(ctx, call("op-two", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2))
	wantState(t, o, err, launch.StateSucceeded, nil)
	if d.count("effect-1") != 1 || d.count("effect-2") != 1 || o.BudgetUsed != 2 || o.Budget != 2 {
		t.Fatalf("dispatches %v, budget %d/%d", d.calls, o.BudgetUsed, o.Budget)
	}
	for _, e := range o.Effects {
		if e.State != ledger.EffectConfirmed || e.ReceiptID != "rcpt-"+e.LogicalEffectID || e.AttemptID != o.AttemptID {
			t.Fatalf("effect %+v", e)
		}
	}
	if o.Host.EffectDisposition != launch.EffectConfirmed {
		t.Fatalf("host disposition %s", o.Host.EffectDisposition)
	}
	a, err := s.Artifact(ctx, scope, o.Result.ArtifactRefs[0])
	if err != nil || !bytes.Equal(a.Bytes, []byte(`{"receipts":["rcpt-effect-1","rcpt-effect-2"],"target":"doc-1"}`)) {
		t.Fatalf("artifact %q, %v", a.Bytes, err)
	}
}

// TestRedeliveryWithinAttempt: the host sends the same logical effect
// twice in one attempt; the second is answered from the ledger with the
// same authorization and receipt, and the dispatcher is not called again.
func TestRedeliveryWithinAttempt(t *testing.T) {
	t.Parallel()
	ctx, _, d, s := setup(t, nil)
	o, err := s.Invoke(ctx, call("op-redeliver", "example.redeliver@1.0.0", map[string]any{"target": "doc-1"}, 1))
	wantState(t, o, err, launch.StateSucceeded, nil)
	if d.count("effect-1") != 1 || o.BudgetUsed != 1 {
		t.Fatalf("dispatched %d times, budget used %d; want 1 and 1", d.count("effect-1"), o.BudgetUsed)
	}
	var effects []supervise.Event
	for _, ev := range o.Decisions {
		if ev.Method == ipc.MethodEffect {
			effects = append(effects, ev)
		}
	}
	if len(effects) != 2 || effects[0].Redelivery || !effects[0].Dispatched || !effects[1].Redelivery || effects[1].Dispatched ||
		effects[0].Effect.AuthorizationID != effects[1].Effect.AuthorizationID || effects[1].Effect.ReceiptID != "rcpt-effect-1" {
		t.Fatalf("effect decisions %+v", effects)
	}
	a, err := s.Artifact(ctx, scope, o.Result.ArtifactRefs[0])
	if err != nil || !bytes.Equal(a.Bytes, []byte(`{"receipts":["rcpt-effect-1","rcpt-effect-1"],"target":"doc-1"}`)) {
		t.Fatalf("artifact %q, %v", a.Bytes, err)
	}
}

// TestArtifactScope: an artifact is retrieved only under the organization
// and project of its operation.
func TestArtifactScope(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	s := newSupervisor(t, config(t, l, newLauncher(t, 0)))
	o, err := s.Invoke(ctx, call("op-scope", "example.echo@1.0.0", map[string]any{"text": "secret"}, 0))
	wantState(t, o, err, launch.StateSucceeded, nil)
	ref := o.Result.ArtifactRefs[0]
	for _, other := range []ledger.Scope{
		{OrganizationID: "org-b", ProjectID: scope.ProjectID},
		{OrganizationID: scope.OrganizationID, ProjectID: "project-b"},
	} {
		a, err := s.Artifact(ctx, other, ref)
		if !errors.Is(err, ledger.ErrOutOfScope) || a.Bytes != nil {
			t.Fatalf("Artifact from %+v = %q, %v; want ErrOutOfScope and no bytes", other, a.Bytes, err)
		}
	}
	if a, err := s.Artifact(ctx, scope, ref); err != nil || !strings.Contains(string(a.Bytes), "secret") {
		t.Fatalf("Artifact from its own scope = %q, %v", a.Bytes, err)
	}
}

// TestLedgerWritesPerInvocation counts the fsynced ledger writes of one
// invocation of a new operation, so that a change that adds one is seen:
// record the launch (operation, attempt, bootstrap id), redeem the
// bootstrap id, admit, accept the result, record the evidence; and two per
// effect (authorize, confirm). One at a time, each write is a commit.
func TestLedgerWritesPerInvocation(t *testing.T) {
	t.Parallel()
	ctx, l, _, s := setup(t, nil)
	// The controller registers its lease on first use: one write, once.
	if _, err := s.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		capability string
		args       map[string]any
		writes     int64
	}{
		{"example.echo@1.0.0", map[string]any{"text": "x"}, 5},
		{"example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 5 + 2*2},
	} {
		before := l.Stats()
		o, err := s.Invoke(ctx, call("op-count-"+tt.capability, tt.capability, tt.args, 2))
		wantState(t, o, err, launch.StateSucceeded, nil)
		after := l.Stats()
		if got := after.Writes - before.Writes; got != tt.writes {
			t.Errorf("%s: %d ledger writes, want %d", tt.capability, got, tt.writes)
		}
		if got := after.Commits - before.Commits; got != tt.writes {
			t.Errorf("%s: %d commits, want one per write (%d)", tt.capability, got, tt.writes)
		}
	}
}

// TestClip: text recorded as evidence is valid UTF-8 within its bound,
// whatever bytes a host's output put in it.
func TestClip(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"plain", 10, "plain"},
		{"a\xffb", 10, "a\uFFFDb"},
		{strings.Repeat("é", 10), 9, "ééé…"},
		{strings.Repeat("é", 10), 8, "éé…"},
		{strings.Repeat("x", 20), 8, "xxxxx…"},
	} {
		got := supervise.Clip(tt.in, tt.n)
		if got != tt.want || len(got) > tt.n || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
