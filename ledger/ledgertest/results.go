package ledgertest

// Cases for results: accepted once, artifacts scoped, and cancellation.

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

func testResult(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 1)
	dd := Digest("data")
	art := []byte(`{"answer":42}`)
	r, err := l.AcceptResult(bg, f, dd, art)
	if err != nil {
		t.Fatal(err)
	}
	checkRefs(t, r.ArtifactRefs)
	if r.DataDigest != dd || r.AttemptID != "a1" || r.Generation != 1 {
		t.Fatalf("result = %+v", r)
	}
	art[0] = 'X' // the ledger keeps its own copy
	r2, err := l.AcceptResult(bg, f, dd, []byte(`{"answer":42}`))
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "repeated accept", r2, r)
	_, err = l.AcceptResult(bg, f, Digest("other"), []byte("x"))
	wantErr(t, "second result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.AcceptResult(bg, f, dd, []byte("other bytes"))
	wantErr(t, "same digest, other bytes", err, ledger.ErrChangedInput)
	a, err := l.Artifact(bg, scopeA, r.ArtifactRefs[0])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes, []byte(`{"answer":42}`)) || a.Digest != canon.Sum(a.Bytes) || a.OperationID != "op1" || a.Scope != scopeA {
		t.Fatalf("artifact = %+v", a)
	}
	a.Bytes[0] = 'Y'
	a2, _ := l.Artifact(bg, scopeA, r.ArtifactRefs[0])
	if a2.Bytes[0] != '{' {
		t.Fatal("artifact bytes are shared with the caller")
	}
	v := mustView(t, l, scopeA, "op1")
	if v.Operation.State != ledger.OperationCompleted || v.Result == nil {
		t.Fatalf("view = %+v", v)
	}
	diff(t, "view result", *v.Result, r)
	_, err = l.StartAttempt(bg, scopeA, "op1", "a2")
	wantErr(t, "new attempt after result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.Cancel(bg, scopeA, "op1", "late")
	wantErr(t, "cancel after result", err, ledger.ErrResultAlreadyAccepted)
	_, err = l.BeginEffect(bg, f, "late", Digest("late"))
	wantErr(t, "effect after result", err, ledger.ErrResultAlreadyAccepted)
	// Empty artifacts are fine.
	f2 := newOp(t, l, "op2", 0)
	r3, err := l.AcceptResult(bg, f2, Digest("empty"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := l.Artifact(bg, scopeA, r3.ArtifactRefs[0]); err != nil || len(a.Bytes) != 0 {
		t.Fatalf("empty artifact = %+v, %v", a, err)
	}
	Check(t, l, f, f2)
}

func testArtifactScope(t *testing.T, l ledger.Ledger) {
	f := newOp(t, l, "op1", 0)
	r, err := l.AcceptResult(bg, f, Digest("d"), []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	ref := r.ArtifactRefs[0]
	for _, s := range []ledger.Scope{scopeB, scopeC} {
		_, err := l.Artifact(bg, s, ref)
		wantErr(t, fmt.Sprintf("artifact from %v", s), err, ledger.ErrOutOfScope)
	}
	_, err = l.Artifact(bg, scopeA, ref+"x")
	wantErr(t, "unknown ref", err, ledger.ErrNotFound)
	if _, err := l.Artifact(bg, scopeA, ref); err != nil {
		t.Fatal(err)
	}
}

func testCancel(t *testing.T, l ledger.Ledger) {
	sp := spec(scopeA, "op1", 5)
	mustCreate(t, l, sp)
	f := mustStart(t, l, scopeA, "op1", "a1")
	if _, err := issue(l, f, "boot", Digest("launch")); err != nil {
		t.Fatal(err)
	}
	ready(t, l, f)
	d := Digest("e")
	auth := mustBegin(t, l, f, "e", d)
	o, err := l.Cancel(bg, scopeA, "op1", "user asked")
	if err != nil || o.State != ledger.OperationCancelled || o.CancelReason != "user asked" {
		t.Fatalf("Cancel = %+v, %v", o, err)
	}
	o, err = l.Cancel(bg, scopeA, "op1", "again")
	if err != nil || o.CancelReason != "user asked" {
		t.Fatalf("second Cancel = %+v, %v", o, err)
	}
	refusals := map[string]func() error{
		"StartAttempt":  func() error { _, err := l.StartAttempt(bg, scopeA, "op1", "a2"); return err },
		"LaunchAttempt": func() error { _, err := issue(l, f, "boot2", Digest("launch")); return err },
		"RedeemBootstrap": func() error {
			_, err := l.RedeemBootstrap(bg, f, ledger.Redemption{BootstrapID: "boot", LaunchDigest: Digest("launch"), PID: 1, SessionID: "s"})
			return err
		},
		"Admit":        func() error { _, err := l.Admit(bg, f, sp.RequestDigest); return err },
		"BeginEffect":  func() error { _, err := l.BeginEffect(bg, f, "new", d); return err },
		"AcceptResult": func() error { _, err := l.AcceptResult(bg, f, Digest("data"), nil); return err },
	}
	for name, c := range refusals {
		wantErr(t, name+" after cancel", c(), ledger.ErrOperationCancelled)
	}
	// The truth about an effect already authorized is still recorded.
	if g := mustBegin(t, l, f, "e", d); !g.Redelivery || g.Effect.AuthorizationID != auth.Effect.AuthorizationID {
		t.Fatalf("redelivery after cancel = %+v", g)
	}
	if _, err := l.ConfirmEffect(bg, f, "e", d, "rcpt"); err != nil {
		t.Fatalf("confirm after cancel: %v", err)
	}
	_, err = l.Cancel(bg, scopeA, "missing", "")
	wantErr(t, "cancel missing", err, ledger.ErrNotFound)
	Check(t, l, f)
}
