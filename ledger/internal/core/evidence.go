package core

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// NormEvidence returns e in the form the ledger stores and compares: the
// attempt named by f, times at nanosecond precision in UTC, and nil for
// empty slices. Its encoding/json form is the stored document; two
// records are the same evidence when their forms are equal.
func NormEvidence(f ledger.Fence, e ledger.AttemptEvidence) ledger.AttemptEvidence {
	e.AttemptID, e.Generation = f.AttemptID, f.Generation
	norm := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return t.Round(0).UTC()
	}
	e.StartedAt, e.EndedAt = norm(e.StartedAt), norm(e.EndedAt)
	if len(e.HostResult) == 0 {
		e.HostResult = nil
	} else {
		e.HostResult = bytes.Clone(e.HostResult)
	}
	if len(e.StderrTail) == 0 {
		e.StderrTail = nil
	} else {
		e.StderrTail = bytes.Clone(e.StderrTail)
	}
	if len(e.Session.Exchanges) == 0 {
		e.Session.Exchanges = nil
	} else {
		e.Session.Exchanges = slices.Clone(e.Session.Exchanges)
	}
	return e
}

// sameEvidence compares two normalized records by their encoding, which
// is how every backend stores them.
func sameEvidence(a, b ledger.AttemptEvidence) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// RecordAttempt implements ledger.Ledger.RecordAttempt.
func RecordAttempt(tx Tx, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	const op = "RecordAttempt"
	if err := ValidateRecordAttempt(f, ev); err != nil {
		return ledger.AttemptEvidence{}, err
	}
	rec, err := loadOp(tx, op, f.Scope, f.OperationID)
	if err != nil {
		return ledger.AttemptEvidence{}, err
	}
	if !slices.ContainsFunc(rec.Attempts, func(a ledger.Attempt) bool { return a.AttemptID == f.AttemptID && a.Generation == f.Generation }) {
		return ledger.AttemptEvidence{}, NoSuchAttempt(op, f)
	}
	ev = NormEvidence(f, ev)
	k := KeyOf(f.Scope, f.OperationID)
	old, ok, err := tx.Evidence(k, f.AttemptID)
	if err != nil {
		return ledger.AttemptEvidence{}, err
	}
	if ok {
		if !sameEvidence(old, ev) {
			return ledger.AttemptEvidence{}, OtherEvidence(op, f)
		}
		return old, nil
	}
	if err := tx.PutEvidence(k, ev); err != nil {
		return ledger.AttemptEvidence{}, err
	}
	return NormEvidence(f, ev), nil
}

// Evidence implements ledger.Ledger.Evidence.
func Evidence(tx Tx, s ledger.Scope, opID string) ([]ledger.AttemptEvidence, error) {
	const op = "Evidence"
	if err := ValidateEvidence(s, opID); err != nil {
		return nil, err
	}
	if _, err := loadOp(tx, op, s, opID); err != nil {
		return nil, err
	}
	out, err := tx.Evidences(KeyOf(s, opID))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b ledger.AttemptEvidence) int { return cmp.Compare(a.Generation, b.Generation) })
	if out == nil {
		out = []ledger.AttemptEvidence{}
	}
	return out, nil
}

// ListOperations implements ledger.Ledger.ListOperations at now (which
// judges the leases q.Orphaned asks about).
func ListOperations(tx Tx, q ledger.OperationQuery, now time.Time) ([]ledger.Operation, error) {
	if err := ValidateListOperations(q); err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = ledger.DefaultListLimit
	}
	out := []ledger.Operation{}
	var after *OpKey
	if q.After != (ledger.OperationRef{}) {
		k := KeyOf(q.After.Scope, q.After.OperationID)
		after = &k
	}
	var scope *ledger.Scope
	if q.Scope != (ledger.Scope{}) {
		scope = &q.Scope
	}
	ls := newLeases(tx, now)
	var leaseErr error
	err := tx.ScanOps(scope, after, func(r OpRecord) bool {
		if q.State != "" && r.Op.State != q.State {
			return true
		}
		if q.Orphaned {
			if r.Op.State != ledger.OperationOpen || r.Op.CurrentAttemptID == "" {
				return true
			}
			_, live, err := ls.live(r.Op.CurrentControllerID)
			if err != nil {
				leaseErr = err
				return false
			}
			if live {
				return true
			}
		}
		out = append(out, r.Op)
		return len(out) < limit
	})
	if err == nil {
		err = leaseErr
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CompareKeys orders operation keys as ListOperations lists them.
func CompareKeys(a, b OpKey) int {
	return cmp.Or(strings.Compare(a.Org, b.Org), strings.Compare(a.Project, b.Project), strings.Compare(a.Op, b.Op))
}
