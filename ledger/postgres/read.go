package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// viewRow is one row of viewSQL: the operation's columns and one array per
// column of its attempts, bootstrap ids and effects.
type viewRow struct {
	capID, cancelReason, curAttempt, curController []byte
	request, manifest, state                       string
	budget, used, gen                              int64
	dlSec                                          *int64
	dlNsec                                         *int32
	resultDigest                                   *string
	resultRef                                      []byte
	resultGen                                      *int64

	attemptIDs         [][]byte
	attemptGen         []int64
	admitted           []bool
	attemptControllers [][]byte

	bootIDs      [][]byte
	bootGen      []int64
	bootLaunch   []string
	bootPID      []int64
	bootSessions [][]byte

	effIDs      [][]byte
	effDigests  []string
	effAuths    []string
	effStates   []string
	effReceipts [][]byte
	effReasons  []string
	effGen      []int64
	effOrdinals []int64
	effCtrls    [][]byte
}

func (r *viewRow) dest() []any {
	return []any{&r.capID, &r.request, &r.manifest, &r.budget, &r.dlSec, &r.dlNsec,
		&r.state, &r.cancelReason, &r.used, &r.curAttempt, &r.gen,
		&r.resultDigest, &r.resultRef, &r.resultGen, &r.curController,
		&r.attemptIDs, &r.attemptGen, &r.admitted, &r.attemptControllers,
		&r.bootIDs, &r.bootGen, &r.bootLaunch, &r.bootPID, &r.bootSessions,
		&r.effIDs, &r.effDigests, &r.effAuths, &r.effStates, &r.effReceipts, &r.effReasons, &r.effGen, &r.effOrdinals, &r.effCtrls}
}

// Operation implements [ledger.Ledger]. One statement, so the view is one
// snapshot.
func (l *Ledger) Operation(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationView, error) {
	const op = "Operation"
	if err := l.enter(ctx, op); err != nil {
		return ledger.OperationView{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateView(s, opID); err != nil {
		return ledger.OperationView{}, err
	}
	var r viewRow
	err := l.read(ctx, op, l.sql.view, []any{raw(s.OrganizationID), raw(s.ProjectID), raw(opID)}, r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.OperationView{}, core.OperationNotFound(op, s, opID)
	}
	if err != nil {
		return ledger.OperationView{}, err
	}
	return r.view(s, opID)
}

// view assembles the OperationView, refusing rows whose arrays disagree
// (a database row is input: it never makes the ledger panic).
func (r *viewRow) view(s ledger.Scope, opID string) (ledger.OperationView, error) {
	corrupt := func(what string) error {
		return fmt.Errorf("ledger/postgres: Operation: operation %q: %s: %w", opID, what, ledger.ErrCorrupt)
	}
	if !sameLen(len(r.attemptIDs), len(r.attemptGen), len(r.admitted), len(r.attemptControllers)) ||
		!sameLen(len(r.bootIDs), len(r.bootGen), len(r.bootLaunch), len(r.bootPID), len(r.bootSessions)) ||
		!sameLen(len(r.effIDs), len(r.effDigests), len(r.effAuths), len(r.effStates), len(r.effReceipts), len(r.effReasons), len(r.effGen), len(r.effOrdinals), len(r.effCtrls)) {
		return ledger.OperationView{}, corrupt("lists of unequal length")
	}
	v := ledger.OperationView{Operation: ledger.Operation{
		Scope: s, OperationID: opID, CapabilityID: string(r.capID),
		RequestDigest: canon.Digest(r.request), ManifestDigest: canon.Digest(r.manifest),
		EffectBudget: r.budget, Deadline: deadlineOf(r.dlSec, r.dlNsec), State: ledger.OperationState(r.state),
		CancelReason: string(r.cancelReason), EffectsUsed: r.used,
		CurrentAttemptID: string(r.curAttempt), CurrentGeneration: r.gen, CurrentControllerID: string(r.curController),
	}}
	attemptOf := make(map[int64]string, len(r.attemptIDs))
	for i, id := range r.attemptIDs {
		v.Attempts = append(v.Attempts, ledger.Attempt{AttemptID: string(id), Generation: r.attemptGen[i], Admitted: r.admitted[i],
			ControllerID: string(r.attemptControllers[i])})
		attemptOf[r.attemptGen[i]] = string(id)
	}
	attempt := func(gen int64) (string, error) {
		id, ok := attemptOf[gen]
		if !ok {
			return "", corrupt(fmt.Sprintf("no attempt of generation %d", gen))
		}
		return id, nil
	}
	for i, id := range r.bootIDs {
		a, err := attempt(r.bootGen[i])
		if err != nil {
			return ledger.OperationView{}, err
		}
		b := ledger.Bootstrap{BootstrapID: string(id), AttemptID: a, Generation: r.bootGen[i], LaunchDigest: canon.Digest(r.bootLaunch[i])}
		if r.bootPID[i] != 0 {
			b.Redeemed, b.RedeemedPID, b.RedeemedSessionID = true, int(r.bootPID[i]), string(r.bootSessions[i])
		}
		v.Bootstraps = append(v.Bootstraps, b)
	}
	for i, id := range r.effIDs {
		a, err := attempt(r.effGen[i])
		if err != nil {
			return ledger.OperationView{}, err
		}
		v.Effects = append(v.Effects, ledger.Effect{
			Scope: s, OperationID: opID, LogicalEffectID: string(id), RequestDigest: canon.Digest(r.effDigests[i]),
			AuthorizationID: r.effAuths[i], State: ledger.EffectState(r.effStates[i]), ReceiptID: string(r.effReceipts[i]),
			Reason: ledger.NotConsumedReason(r.effReasons[i]), AttemptID: a, Generation: r.effGen[i], Ordinal: r.effOrdinals[i],
			ControllerID: string(r.effCtrls[i]),
		})
	}
	if r.resultDigest != nil {
		a, err := attempt(val(r.resultGen))
		if err != nil {
			return ledger.OperationView{}, err
		}
		v.Result = &ledger.Result{DataDigest: canon.Digest(*r.resultDigest), ArtifactRefs: []string{string(r.resultRef)},
			AttemptID: a, Generation: val(r.resultGen)}
	}
	return v, nil
}

func sameLen(n ...int) bool {
	for _, m := range n {
		if m != n[0] {
			return false
		}
	}
	return true
}

// ListUnknown implements [ledger.Ledger]. One statement.
func (l *Ledger) ListUnknown(ctx context.Context) ([]ledger.Effect, error) {
	return l.listEffects(ctx, "ListUnknown", l.sql.listUnknown)
}

// ListInFlight implements [ledger.Ledger]. One statement.
func (l *Ledger) ListInFlight(ctx context.Context) ([]ledger.Effect, error) {
	return l.listEffects(ctx, "ListInFlight", l.sql.listInFlight)
}

// listEffects runs sql, a list of effects of listUnknownSQL's shape.
func (l *Ledger) listEffects(ctx context.Context, op, sql string) ([]ledger.Effect, error) {
	if err := l.enter(ctx, op); err != nil {
		return nil, err
	}
	defer l.inflight.Done()
	var out []ledger.Effect
	err := l.run(ctx, op, func(c *pgxpool.Conn) error {
		out = out[:0]
		rows, err := c.Query(ctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				org, project, opID, id, attempt, ctrl []byte
				digest, auth, state                   string
				gen, ordinal                          int64
			)
			if err := rows.Scan(&org, &project, &opID, &id, &digest, &auth, &state, &attempt, &gen, &ordinal, &ctrl); err != nil {
				return err
			}
			out = append(out, ledger.Effect{
				Scope:       ledger.Scope{OrganizationID: string(org), ProjectID: string(project)},
				OperationID: string(opID), LogicalEffectID: string(id), RequestDigest: canon.Digest(digest),
				AuthorizationID: auth, State: ledger.EffectState(state), AttemptID: string(attempt),
				Generation: gen, Ordinal: ordinal, ControllerID: string(ctrl),
			})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Artifact implements [ledger.Ledger]. One statement.
func (l *Ledger) Artifact(ctx context.Context, s ledger.Scope, ref string) (ledger.Artifact, error) {
	const op = "Artifact"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Artifact{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateArtifact(s, ref); err != nil {
		return ledger.Artifact{}, err
	}
	var (
		org, project, opID, data []byte
		digest                   string
	)
	err := l.read(ctx, op, l.sql.artifact, []any{raw(ref)}, &org, &project, &opID, &digest, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Artifact{}, core.ArtifactNotFound(ref)
	}
	if err != nil {
		return ledger.Artifact{}, err
	}
	a := ledger.Artifact{Ref: ref, Scope: ledger.Scope{OrganizationID: string(org), ProjectID: string(project)},
		OperationID: string(opID), Digest: canon.Digest(digest), Bytes: data}
	if a.Scope != s {
		return ledger.Artifact{}, core.ArtifactOutOfScope(ref, s)
	}
	if a.Bytes == nil {
		a.Bytes = []byte{}
	}
	return a, nil
}
