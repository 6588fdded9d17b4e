package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// RecordAttempt implements [ledger.Ledger]. One statement. The evidence
// is stored as its normalized encoding/json form, so equal evidence is
// equal text.
func (l *Ledger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	const op = "RecordAttempt"
	if err := l.enter(ctx, op); err != nil {
		return ledger.AttemptEvidence{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateRecordAttempt(f, ev); err != nil {
		return ledger.AttemptEvidence{}, err
	}
	doc, err := json.Marshal(core.NormEvidence(f, ev))
	if err != nil {
		return ledger.AttemptEvidence{}, fmt.Errorf("ledger/postgres: %s: encoding evidence: %w", op, err)
	}
	var (
		code   string
		stored []byte
	)
	if err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.recordAttempt, append(fenceArgs(f), json.RawMessage(doc)), &code, &stored); err != nil {
		return ledger.AttemptEvidence{}, err
	}
	switch code {
	case "ok":
		return decodeEvidence(op, f, stored)
	case "not_found":
		return ledger.AttemptEvidence{}, core.OperationNotFound(op, f.Scope, f.OperationID)
	case "no_attempt":
		return ledger.AttemptEvidence{}, core.NoSuchAttempt(op, f)
	case "changed":
		return ledger.AttemptEvidence{}, core.OtherEvidence(op, f)
	}
	return ledger.AttemptEvidence{}, unknownCode(op, code)
}

func decodeEvidence(op string, f ledger.Fence, doc []byte) (ledger.AttemptEvidence, error) {
	var ev ledger.AttemptEvidence
	if err := json.Unmarshal(doc, &ev); err != nil {
		return ledger.AttemptEvidence{}, fmt.Errorf("ledger/postgres: %s: evidence of operation %q: %w: %v", op, f.OperationID, ledger.ErrCorrupt, err)
	}
	return core.NormEvidence(ledger.Fence{AttemptID: ev.AttemptID, Generation: ev.Generation}, ev), nil
}

// Evidence implements [ledger.Ledger]. One statement.
func (l *Ledger) Evidence(ctx context.Context, s ledger.Scope, opID string) ([]ledger.AttemptEvidence, error) {
	const op = "Evidence"
	if err := l.enter(ctx, op); err != nil {
		return nil, err
	}
	defer l.inflight.Done()
	if err := core.ValidateEvidence(s, opID); err != nil {
		return nil, err
	}
	var (
		docs  [][]byte
		found bool
	)
	err := l.run(ctx, op, func(c *pgxpool.Conn) error {
		docs, found = docs[:0], false
		rows, err := c.Query(ctx, l.sql.evidence, raw(s.OrganizationID), raw(s.ProjectID), raw(opID))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			found = true
			var doc []byte
			if err := rows.Scan(&doc); err != nil {
				return err
			}
			if doc != nil {
				docs = append(docs, doc)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, core.OperationNotFound(op, s, opID)
	}
	out := make([]ledger.AttemptEvidence, 0, len(docs))
	for _, doc := range docs {
		ev, err := decodeEvidence(op, ledger.Fence{OperationID: opID}, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// ListOperations implements [ledger.Ledger]. One statement, which walks
// the operations' unique index in its order.
func (l *Ledger) ListOperations(ctx context.Context, q ledger.OperationQuery) ([]ledger.Operation, error) {
	const op = "ListOperations"
	if err := l.enter(ctx, op); err != nil {
		return nil, err
	}
	defer l.inflight.Done()
	if err := core.ValidateListOperations(q); err != nil {
		return nil, err
	}
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Scope != (ledger.Scope{}) {
		where = append(where, "org_id = "+arg(raw(q.Scope.OrganizationID))+" AND project_id = "+arg(raw(q.Scope.ProjectID)))
	}
	if q.State != "" {
		where = append(where, "state = "+arg(string(q.State)))
	}
	if q.Orphaned {
		where = append(where, l.sql.orphaned)
	}
	if q.After != (ledger.OperationRef{}) {
		a := q.After
		where = append(where, "(org_id, project_id, operation_id) > ("+arg(raw(a.Scope.OrganizationID))+", "+
			arg(raw(a.Scope.ProjectID))+", "+arg(raw(a.OperationID))+")")
	}
	sql := l.sql.listOperations
	if len(where) > 0 {
		sql += "\nWHERE " + strings.Join(where, " AND ")
	}
	limit := q.Limit
	if limit == 0 {
		limit = ledger.DefaultListLimit
	}
	sql += "\nORDER BY org_id, project_id, operation_id LIMIT " + arg(limit)

	out := []ledger.Operation{}
	err := l.run(ctx, op, func(c *pgxpool.Conn) error {
		out = out[:0]
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				org, project, opID, capID, why, curID, ctrl []byte
				req, man, state                             string
				budget, used, gen                           int64
				dlSec                                       *int64
				dlNsec                                      *int32
			)
			if err := rows.Scan(&org, &project, &opID, &capID, &req, &man, &budget, &dlSec, &dlNsec, &state, &why, &used, &curID, &gen, &ctrl); err != nil {
				return err
			}
			out = append(out, ledger.Operation{
				Scope:       ledger.Scope{OrganizationID: string(org), ProjectID: string(project)},
				OperationID: string(opID), CapabilityID: string(capID),
				RequestDigest: canon.Digest(req), ManifestDigest: canon.Digest(man), EffectBudget: budget,
				Deadline: deadlineOf(dlSec, dlNsec), State: ledger.OperationState(state), CancelReason: string(why),
				EffectsUsed: used, CurrentAttemptID: string(curID), CurrentGeneration: gen, CurrentControllerID: string(ctrl),
			})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
