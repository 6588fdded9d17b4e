package ledgertest

import (
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// sampleEvidence is an AttemptEvidence with every field set, told apart by
// state.
func sampleEvidence(state string) ledger.AttemptEvidence {
	at := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 7200))
	return ledger.AttemptEvidence{
		SeatID: "seat", RuntimeBindingID: "binding", PacketID: "packet",
		BootstrapID: "boot-1", LaunchDigest: Digest("launch"),
		State: state, Reason: "why, in words", Launched: true, PID: 4242, ExitCode: -1, Signal: "killed",
		HostResult: []byte("{\"state\":\"x\"}\n\xff"), StdoutBytes: 99, StderrTail: []byte("trace\x00back"),
		Session: ledger.SessionEvidence{
			SessionID: "sess", HostNonce: "nonce", Frames: 3, DroppedExchanges: 1, Error: "ipc: broken",
			Exchanges: []ledger.ExchangeEvidence{
				{Sequence: 1, Method: "bootstrap", State: "allowed", RequestDigest: Digest("req1")},
				{Sequence: 2, Method: "invoke.admit", State: "refused", RequestDigest: Digest("req2")},
			},
		},
		StartedAt: at, EndedAt: at.Add(time.Second),
	}
}

// wantEvidence is what the ledger returns for e recorded through f.
func wantEvidence(f ledger.Fence, e ledger.AttemptEvidence) ledger.AttemptEvidence {
	e.AttemptID, e.Generation = f.AttemptID, f.Generation
	e.StartedAt, e.EndedAt = e.StartedAt.UTC(), e.EndedAt.UTC()
	return e
}

func testEvidence(t *testing.T, l ledger.Ledger) {
	mustCreate(t, l, spec(scopeA, "op1", 1))
	f1 := mustStart(t, l, scopeA, "op1", "a1")
	f2 := mustStart(t, l, scopeA, "op1", "a2")
	got, err := l.Evidence(bg, scopeA, "op1")
	if err != nil || len(got) != 0 || got == nil {
		t.Fatalf("Evidence before any record = %#v, %v; want an empty list", got, err)
	}
	// The newer attempt first: order is by generation, not by recording.
	e2 := sampleEvidence("succeeded")
	r2, err := l.RecordAttempt(bg, f2, e2)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "recorded evidence", r2, wantEvidence(f2, e2))
	// An attempt that a newer one fenced off still records how it ended.
	e1 := sampleEvidence("protocol_error")
	e1.BootstrapID, e1.LaunchDigest = "", ""
	e1.Session = ledger.SessionEvidence{}
	if _, err := l.RecordAttempt(bg, f1, e1); err != nil {
		t.Fatalf("RecordAttempt for the fenced attempt: %v", err)
	}
	// The same evidence again returns the record; other evidence is
	// changed input.
	again, err := l.RecordAttempt(bg, f2, e2)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "repeated evidence", again, r2)
	other := e2
	other.Reason = "another story"
	_, err = l.RecordAttempt(bg, f2, other)
	wantErr(t, "other evidence for a recorded attempt", err, ledger.ErrChangedInput)
	got, err = l.Evidence(bg, scopeA, "op1")
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "Evidence", got, []ledger.AttemptEvidence{wantEvidence(f1, e1), wantEvidence(f2, e2)})

	// Refusals.
	for name, f := range map[string]ledger.Fence{
		"unknown attempt":  {Scope: scopeA, OperationID: "op1", AttemptID: "zz", Generation: 1},
		"wrong generation": {Scope: scopeA, OperationID: "op1", AttemptID: "a1", Generation: 2},
		"other scope":      {Scope: scopeB, OperationID: "op1", AttemptID: "a1", Generation: 1},
		"missing op":       {Scope: scopeA, OperationID: "nope", AttemptID: "a1", Generation: 1},
	} {
		_, err := l.RecordAttempt(bg, f, e1)
		wantErr(t, "RecordAttempt: "+name, err, ledger.ErrNotFound)
	}
	for name, mut := range map[string]func(*ledger.AttemptEvidence){
		"no seat":                   func(e *ledger.AttemptEvidence) { e.SeatID = "" },
		"no state":                  func(e *ledger.AttemptEvidence) { e.State = "" },
		"other attempt id":          func(e *ledger.AttemptEvidence) { e.AttemptID = "a1" },
		"other generation":          func(e *ledger.AttemptEvidence) { e.Generation = 1 },
		"bootstrap without digest":  func(e *ledger.AttemptEvidence) { e.LaunchDigest = "" },
		"result longer than stdout": func(e *ledger.AttemptEvidence) { e.StdoutBytes = 1 },
		"process of no launch":      func(e *ledger.AttemptEvidence) { e.Launched = false },
		"ends before it starts":     func(e *ledger.AttemptEvidence) { e.EndedAt = e.StartedAt.Add(-1) },
		"too many exchanges": func(e *ledger.AttemptEvidence) {
			e.Session.Exchanges = make([]ledger.ExchangeEvidence, ledger.MaxEvidenceExchanges+1)
		},
	} {
		e := sampleEvidence("failed")
		mut(&e)
		f3 := f2
		_, err := l.RecordAttempt(bg, f3, e)
		wantErr(t, "RecordAttempt with "+name, err, ledger.ErrInvalid)
	}
	_, err = l.Evidence(bg, scopeA, "nope")
	wantErr(t, "Evidence of a missing operation", err, ledger.ErrNotFound)

	// Recording the truth is allowed whatever became of the operation.
	fc := newOp(t, l, "op-cancelled", 0)
	if _, err := l.Cancel(bg, scopeA, "op-cancelled", "stop"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordAttempt(bg, fc, sampleEvidence("cancelled")); err != nil {
		t.Fatalf("RecordAttempt after Cancel: %v", err)
	}
	fr := newOp(t, l, "op-done", 0)
	if _, err := l.AcceptResult(bg, fr, Digest("data"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordAttempt(bg, fr, sampleEvidence("succeeded")); err != nil {
		t.Fatalf("RecordAttempt after AcceptResult: %v", err)
	}
	Check(t, l, f2, fc, fr)
}

func testListOperations(t *testing.T, l ledger.Ledger) {
	got, err := l.ListOperations(bg, ledger.OperationQuery{})
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ListOperations of an empty ledger = %#v, %v; want an empty list", got, err)
	}
	// Created out of order, over three scopes.
	type ref struct {
		S  ledger.Scope
		Op string
	}
	for _, r := range []ref{{scopeC, "z"}, {scopeA, "b"}, {scopeB, "a"}, {scopeA, "a"}, {scopeA, "c"}, {scopeC, "a"}} {
		mustCreate(t, l, spec(r.S, r.Op, 0))
	}
	fd := mustStart(t, l, scopeA, "c", "a1")
	ready(t, l, fd)
	if _, err := l.AcceptResult(bg, fd, Digest("data"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Cancel(bg, scopeB, "a", "stop"); err != nil {
		t.Fatal(err)
	}
	// scopeA is (org-a, proj-1), scopeC (org-a, proj-2), scopeB (org-b, proj-1).
	all := []ref{{scopeA, "a"}, {scopeA, "b"}, {scopeA, "c"}, {scopeC, "a"}, {scopeC, "z"}, {scopeB, "a"}}
	refs := func(ops []ledger.Operation) []ref {
		out := []ref{}
		for _, o := range ops {
			out = append(out, ref{o.Scope, o.OperationID})
		}
		return out
	}
	list := func(q ledger.OperationQuery) []ledger.Operation {
		t.Helper()
		ops, err := l.ListOperations(bg, q)
		if err != nil {
			t.Fatalf("ListOperations(%+v): %v", q, err)
		}
		return ops
	}
	ops := list(ledger.OperationQuery{})
	diff(t, "ListOperations order", refs(ops), all)
	for _, o := range ops {
		diff(t, "listed operation "+o.OperationID, o, mustView(t, l, o.Scope, o.OperationID).Operation)
	}
	diff(t, "one scope", refs(list(ledger.OperationQuery{Scope: scopeA})), all[:3])
	diff(t, "completed", refs(list(ledger.OperationQuery{State: ledger.OperationCompleted})), []ref{{scopeA, "c"}})
	diff(t, "cancelled", refs(list(ledger.OperationQuery{State: ledger.OperationCancelled})), []ref{{scopeB, "a"}})
	diff(t, "open in scope C", refs(list(ledger.OperationQuery{Scope: scopeC, State: ledger.OperationOpen})), all[3:5])
	// Pages of two, each after the last of the previous, make the whole.
	var paged []ref
	q := ledger.OperationQuery{Limit: 2}
	for {
		page := list(q)
		paged = append(paged, refs(page)...)
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.After = ledger.OperationRef{Scope: last.Scope, OperationID: last.OperationID}
	}
	diff(t, "paged list", paged, all)
	// After names a position, not necessarily an operation that exists.
	diff(t, "after a missing id", refs(list(ledger.OperationQuery{After: ledger.OperationRef{Scope: scopeA, OperationID: "bb"}})), all[2:])
	diff(t, "after, within a scope", refs(list(ledger.OperationQuery{Scope: scopeC, After: ledger.OperationRef{Scope: scopeA, OperationID: "a"}})), all[3:5])
	for name, q := range map[string]ledger.OperationQuery{
		"negative limit":   {Limit: -1},
		"limit too large":  {Limit: ledger.MaxListLimit + 1},
		"unknown state":    {State: "running"},
		"half a scope":     {Scope: ledger.Scope{OrganizationID: "org-a"}},
		"after without id": {After: ledger.OperationRef{Scope: scopeA}},
	} {
		_, err := l.ListOperations(bg, q)
		wantErr(t, "ListOperations with "+name, err, ledger.ErrInvalid)
	}
	Check(t, l, fd)
}
