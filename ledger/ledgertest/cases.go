package ledgertest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
)

var bg = context.Background()

func testCreateOperation(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 3)
	o := mustCreate(t, l, sp)
	want := ledger.Operation{
		Scope: sp.Scope, OperationID: "op1", CapabilityID: sp.CapabilityID,
		RequestDigest: sp.RequestDigest, ManifestDigest: sp.ManifestDigest,
		EffectBudget: 3, Deadline: sp.Deadline, State: ledger.OperationOpen,
	}
	diff(t, "created operation", o, want)
	// A deadline in another time zone is the same instant.
	sp2 := sp
	sp2.Deadline = sp.Deadline.In(time.FixedZone("x", 3600))
	diff(t, "repeated create", mustCreate(t, l, sp2), want)
	for name, mut := range map[string]func(*ledger.OperationSpec){
		"capability": func(s *ledger.OperationSpec) { s.CapabilityID = "cap.other" },
		"request":    func(s *ledger.OperationSpec) { s.RequestDigest = Digest("other") },
		"manifest":   func(s *ledger.OperationSpec) { s.ManifestDigest = Digest("other") },
		"budget":     func(s *ledger.OperationSpec) { s.EffectBudget = 4 },
		"deadline":   func(s *ledger.OperationSpec) { s.Deadline = s.Deadline.Add(time.Nanosecond) },
	} {
		s := sp
		mut(&s)
		_, err := l.CreateOperation(bg, s)
		wantErr(t, "create with changed "+name, err, ledger.ErrChangedInput)
	}
	v := mustView(t, l, scopeA, "op1")
	diff(t, "view", v, ledger.OperationView{Operation: want, Attempts: v.Attempts, Bootstraps: v.Bootstraps, Effects: v.Effects})
	if len(v.Attempts)+len(v.Bootstraps)+len(v.Effects) != 0 || v.Result != nil {
		t.Fatalf("fresh operation view has records: %+v", v)
	}
	_, err := l.Operation(bg, scopeA, "nope")
	wantErr(t, "Operation(missing)", err, ledger.ErrNotFound)
	_, err = l.StartAttempt(bg, scopeA, "nope", "a1")
	wantErr(t, "StartAttempt(missing)", err, ledger.ErrNotFound)
}

func testInvalid(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	d := Digest("x")
	long := strings.Repeat("é", protocol.MaxIdentifierRunes+1)
	bad := func(m func(*ledger.OperationSpec)) ledger.OperationSpec { s := spec(scopeA, "op2", 1); m(&s); return s }
	badFence := f
	badFence.Generation = 0
	cases := []struct {
		name string
		call func() error
	}{
		{"empty org", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.Scope.OrganizationID = "" }))
			return err
		}},
		{"long op id", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.OperationID = long }))
			return err
		}},
		{"invalid utf8", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.CapabilityID = "\xff" }))
			return err
		}},
		{"bad digest", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.RequestDigest = "sha256:XYZ" }))
			return err
		}},
		{"negative budget", func() error {
			_, err := l.CreateOperation(bg, bad(func(s *ledger.OperationSpec) { s.EffectBudget = -1 }))
			return err
		}},
		{"empty attempt", func() error { _, err := l.StartAttempt(bg, scopeA, "op1", ""); return err }},
		{"zero generation", func() error { _, err := l.BeginEffect(bg, badFence, "e", d); return err }},
		{"empty effect id", func() error { _, err := l.BeginEffect(bg, f, "", d); return err }},
		{"empty receipt", func() error { _, err := l.ConfirmEffect(bg, f, "e", d, ""); return err }},
		{"bad reason", func() error { _, err := l.MarkNotConsumed(bg, f, "e", d, "because"); return err }},
		{"bad resolution", func() error {
			_, err := l.Resolve(bg, scopeA, "op1", "e", d, ledger.Resolution{State: ledger.EffectUnknown})
			return err
		}},
		{"resolution without receipt", func() error {
			_, err := l.Resolve(bg, scopeA, "op1", "e", d, ledger.Resolution{State: ledger.EffectConfirmed})
			return err
		}},
		{"zero pid", func() error {
			_, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "b", LaunchDigest: d, SessionID: "s"})
			return err
		}},
		{"bad data digest", func() error { _, err := l.AcceptResult(bg, f, "", nil); return err }},
		{"huge artifact", func() error {
			_, err := l.AcceptResult(bg, f, d, make([]byte, ledger.MaxArtifactBytes+1))
			return err
		}},
		{"empty ref", func() error { _, err := l.Artifact(bg, scopeA, ""); return err }},
		{"bad cancel reason", func() error { _, err := l.Cancel(bg, scopeA, "op1", "\xff"); return err }},
	}
	for _, c := range cases {
		wantErr(t, c.name, c.call(), ledger.ErrInvalid)
	}
	Check(t, l, f)
	if v := mustView(t, l, scopeA, "op1"); len(v.Effects) != 0 || v.Result != nil || v.Operation.State != ledger.OperationOpen {
		t.Fatalf("refused calls wrote something: %+v", v)
	}
}

func testScopes(t *testing.T, l ledger.Ledger) {
	fa := newOp(t, l, "op", 1)
	mustCreate(t, l, spec(scopeB, "op", 1))
	fb := mustStart(t, l, scopeB, "op", "a1")
	ready(t, l, fb)
	if fa.Generation != 1 || fb.Generation != 1 {
		t.Fatalf("generations %d %d", fa.Generation, fb.Generation)
	}
	ga := mustBegin(t, l, fa, "e", Digest("a"))
	gb := mustBegin(t, l, fb, "e", Digest("b")) // same ids, other scope: a new effect
	if gb.Redelivery || ga.Effect.AuthorizationID == gb.Effect.AuthorizationID {
		t.Fatalf("scopes share effects: %+v %+v", ga, gb)
	}
	// A fence is only valid in its own scope.
	cross := fa
	cross.Scope = scopeC
	_, err := l.BeginEffect(bg, cross, "e", Digest("a"))
	wantErr(t, "fence in a scope without the operation", err, ledger.ErrNotFound)
	Check(t, l, fa, fb)
}

func testContextDone(t *testing.T, l ledger.Ledger) {
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := l.CreateOperation(ctx, spec(scopeA, "op1", 1))
	wantErr(t, "CreateOperation with a cancelled context", err, context.Canceled)
	_, err = l.LaunchAttempt(ctx, launchOf(scopeA, "op1", "a1", 1))
	wantErr(t, "LaunchAttempt with a cancelled context", err, context.Canceled)
	_, err = l.Operation(ctx, scopeA, "op1")
	wantErr(t, "Operation with a cancelled context", err, context.Canceled)
	// A call refused before it started writes nothing.
	_, err = l.Operation(bg, scopeA, "op1")
	wantErr(t, "Operation", err, ledger.ErrNotFound)
}

func testClosed(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	if err := l.Close(bg); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(bg); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	calls := map[string]func() error{
		"CreateOperation": func() error { _, err := l.CreateOperation(bg, spec(scopeA, "op2", 1)); return err },
		"StartAttempt":    func() error { _, err := l.StartAttempt(bg, scopeA, "op1", "a2"); return err },
		"LaunchAttempt":   func() error { _, err := l.LaunchAttempt(bg, launchOf(scopeA, "op1", "a2", 2)); return err },
		"BeginEffect":     func() error { _, err := l.BeginEffect(bg, f, "e", Digest("e")); return err },
		"Operation":       func() error { _, err := l.Operation(bg, scopeA, "op1"); return err },
		"ListUnknown":     func() error { _, err := l.ListUnknown(bg); return err },
		"Artifact":        func() error { _, err := l.Artifact(bg, scopeA, "x"); return err },
		"ListOperations":  func() error { _, err := l.ListOperations(bg, ledger.OperationQuery{}); return err },
		"RecordAttempt":   func() error { _, err := l.RecordAttempt(bg, f, sampleEvidence("failed")); return err },
		"Evidence":        func() error { _, err := l.Evidence(bg, scopeA, "op1"); return err },
	}
	for name, c := range calls {
		wantErr(t, name+" after Close", c(), ledger.ErrClosed)
	}
	// Concurrent Close calls are safe too.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); _ = l.Close(bg) }()
	}
	wg.Wait()
}
