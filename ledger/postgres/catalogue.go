package postgres

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// The catalogue's records (cataloguestore.Store) are decided by the
// shared core over the catalogue table (migrations/0004_catalogue.sql):
// each call is one SERIALIZABLE transaction of a few statements, run again
// on a serialization failure like every other call. Deadlines (reservation
// liveness) are judged by the server's clock at the transaction's start.

var _ cataloguestore.Store = (*Ledger)(nil)

// catTx is the core.CatTx of one transaction. The first database error is
// kept in failed, so that catCall tells it from the core's refusals.
type catTx struct {
	ctx    context.Context
	tx     pgx.Tx
	schema string // quoted
	now    time.Time
	failed error
}

func (t *catTx) fail(err error) error {
	if t.failed == nil {
		t.failed = err
	}
	return err
}

func (t *catTx) Rec(kind core.Kind, key string) ([]byte, bool, error) {
	var v []byte
	err := t.tx.QueryRow(t.ctx, "SELECT value FROM "+t.schema+".catalogue WHERE kind = $1 AND key = $2", int16(kind), []byte(key)).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, t.fail(err)
	}
	return v, true, nil
}

func (t *catTx) PutRec(kind core.Kind, key string, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	_, err := t.tx.Exec(t.ctx, "INSERT INTO "+t.schema+".catalogue (kind, key, value) VALUES ($1, $2, $3) ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value",
		int16(kind), []byte(key), v)
	if err != nil {
		return t.fail(err)
	}
	return nil
}

func (t *catTx) DelRec(kind core.Kind, key string) error {
	if _, err := t.tx.Exec(t.ctx, "DELETE FROM "+t.schema+".catalogue WHERE kind = $1 AND key = $2", int16(kind), []byte(key)); err != nil {
		return t.fail(err)
	}
	return nil
}

// prefixEnd is the least byte string greater than every string with
// prefix p, or nil if there is none (p is empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

func (t *catTx) ScanRecs(kind core.Kind, prefix string, fn func(string, []byte) bool) error {
	p := []byte(prefix)
	q := "SELECT key, value FROM " + t.schema + ".catalogue WHERE kind = $1 AND key >= $2"
	args := []any{int16(kind), p}
	if end := prefixEnd(p); end != nil {
		q += " AND key < $3"
		args = append(args, end)
	}
	rows, err := t.tx.Query(t.ctx, q+" ORDER BY key", args...)
	if err != nil {
		return t.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return t.fail(err)
		}
		if !fn(string(k), v) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return t.fail(err)
	}
	return nil
}

func (t *catTx) Operation(k core.OpKey) (ledger.Operation, bool, error) {
	var (
		state        string
		cancelReason []byte
		curAttempt   []byte
		gen          int64
		dlSec        *int64
		dlNsec       *int32
	)
	err := t.tx.QueryRow(t.ctx, "SELECT state, cancel_reason, attempt_id, generation, deadline_sec, deadline_nsec FROM "+t.schema+
		".operations WHERE org_id = $1 AND project_id = $2 AND operation_id = $3", raw(k.Org), raw(k.Project), raw(k.Op)).
		Scan(&state, &cancelReason, &curAttempt, &gen, &dlSec, &dlNsec)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.Operation{}, false, nil
	}
	if err != nil {
		return ledger.Operation{}, false, t.fail(err)
	}
	return ledger.Operation{Scope: k.Scope(), OperationID: k.Op, State: ledger.OperationState(state), CancelReason: string(cancelReason),
		CurrentAttemptID: string(curAttempt), CurrentGeneration: gen, Deadline: deadlineOf(dlSec, dlNsec)}, true, nil
}

func (t *catTx) Now() time.Time { return t.now }

// Lock takes a transaction-scoped advisory lock named by the schema, kind
// and key (a 64-bit hash: two names that collide only take turns).
func (t *catTx) Lock(kind core.Kind, key string) error {
	h := fnv.New64a()
	h.Write([]byte("runtimeipc catalogue\x00"))
	h.Write([]byte(t.schema))
	h.Write([]byte{0, byte(kind)})
	h.Write([]byte(key))
	if _, err := t.tx.Exec(t.ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return t.fail(err)
	}
	return nil
}

// catCall runs fn in one SERIALIZABLE transaction, again after a
// serialization failure or a deadlock (at most l.retries times). fn's own
// error (a refusal decided by the core) rolls the transaction back and is
// returned as it is; a database error is reported as every other call
// reports it (writeErr, readErr).
func catCall[T any](l *Ledger, ctx context.Context, op string, write bool, fn func(core.CatTx) (T, error)) (T, error) {
	var zero T
	if err := l.enter(ctx, op); err != nil {
		return zero, err
	}
	defer l.inflight.Done()
	schema := pgx.Identifier{l.schema}.Sanitize()
	mode := pgx.ReadOnly
	if write {
		mode = pgx.ReadWrite
	}
	for try := 0; ; try++ {
		var out T
		var refused error
		err := l.once(ctx, func(c *pgxpool.Conn) error {
			return pgx.BeginTxFunc(ctx, c, pgx.TxOptions{IsoLevel: pgx.Serializable, AccessMode: mode}, func(tx pgx.Tx) error {
				ct := &catTx{ctx: ctx, tx: tx, schema: schema}
				if err := tx.QueryRow(ctx, "SELECT now()").Scan(&ct.now); err != nil {
					return err
				}
				var err error
				out, err = fn(ct)
				switch {
				case ct.failed != nil:
					return ct.failed
				case err != nil:
					refused = err
					return errRefused
				}
				return nil
			})
		})
		switch {
		case refused != nil && errors.Is(err, errRefused):
			return zero, refused
		case err == nil:
			return out, nil
		case try < l.retries && retryable(err) && ctx.Err() == nil:
			// Transactions that failed each other's serialization would
			// meet again if they retried at once.
			if err := backoff(ctx, try); err != nil {
				return zero, writeErr(ctx, op, err, try)
			}
			continue
		case write:
			return zero, writeErr(ctx, op, err, try)
		default:
			return zero, readErr(ctx, op, err)
		}
	}
}

// backoff sleeps a random time below 2^try milliseconds (at most 64), or
// until ctx ends.
func backoff(ctx context.Context, try int) error {
	t := time.NewTimer(time.Duration(rand.Int64N(int64(time.Millisecond) << min(try, 6))))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// errRefused rolls back a transaction whose call the core refused.
var errRefused = errors.New("ledger/postgres: refused")

// AdmitProvider implements [cataloguestore.Store].
func (l *Ledger) AdmitProvider(ctx context.Context, rec cataloguestore.ProviderRecord) (cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "AdmitProvider", true, func(tx core.CatTx) (cataloguestore.ProviderRecord, error) { return core.AdmitProvider(tx, rec) })
}

// ProviderGeneration implements [cataloguestore.Store].
func (l *Ledger) ProviderGeneration(ctx context.Context, p cataloguestore.ProviderKey, gen int64) (cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGeneration", false, func(tx core.CatTx) (cataloguestore.ProviderRecord, error) {
		return core.ProviderGeneration(tx, p, gen)
	})
}

// ProviderGenerations implements [cataloguestore.Store].
func (l *Ledger) ProviderGenerations(ctx context.Context, p cataloguestore.ProviderKey) ([]cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGenerations", false, func(tx core.CatTx) ([]cataloguestore.ProviderRecord, error) {
		return core.ProviderGenerations(tx, p)
	})
}

// LatestProviders implements [cataloguestore.Store].
func (l *Ledger) LatestProviders(ctx context.Context) (cataloguestore.Snapshot, error) {
	return catCall(l, ctx, "LatestProviders", false, core.LatestProviders)
}

// CatalogueRevision implements [cataloguestore.Store].
func (l *Ledger) CatalogueRevision(ctx context.Context) (int64, error) {
	return catCall(l, ctx, "CatalogueRevision", false, core.CatalogueRevision)
}

// PinOperation implements [cataloguestore.Store].
func (l *Ledger) PinOperation(ctx context.Context, p cataloguestore.OperationPin) (cataloguestore.OperationPin, error) {
	return catCall(l, ctx, "PinOperation", true, func(tx core.CatTx) (cataloguestore.OperationPin, error) { return core.PinOperation(tx, p) })
}

// OperationPin implements [cataloguestore.Store].
func (l *Ledger) OperationPin(ctx context.Context, s ledger.Scope, opID string) (cataloguestore.OperationPin, error) {
	return catCall(l, ctx, "OperationPin", false, func(tx core.CatTx) (cataloguestore.OperationPin, error) { return core.GetPin(tx, s, opID) })
}

// GrantConsent implements [cataloguestore.Store].
func (l *Ledger) GrantConsent(ctx context.Context, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return catCall(l, ctx, "GrantConsent", true, func(tx core.CatTx) (cataloguestore.Consent, error) { return core.GrantConsent(tx, c) })
}

// RevokeConsent implements [cataloguestore.Store].
func (l *Ledger) RevokeConsent(ctx context.Context, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return catCall(l, ctx, "RevokeConsent", true, func(tx core.CatTx) (cataloguestore.Consent, error) { return core.RevokeConsent(tx, c) })
}

// Consents implements [cataloguestore.Store].
func (l *Ledger) Consents(ctx context.Context, s ledger.Scope) ([]cataloguestore.Consent, error) {
	return catCall(l, ctx, "Consents", false, func(tx core.CatTx) ([]cataloguestore.Consent, error) { return core.Consents(tx, s) })
}

// Reserve implements [cataloguestore.Store].
func (l *Ledger) Reserve(ctx context.Context, f ledger.Fence, claims []cataloguestore.Claim) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "Reserve", true, func(tx core.CatTx) ([]cataloguestore.Reservation, error) { return core.Reserve(tx, f, claims) })
}

// HeldBy implements [cataloguestore.Store].
func (l *Ledger) HeldBy(ctx context.Context, f ledger.Fence) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "HeldBy", false, func(tx core.CatTx) ([]cataloguestore.Reservation, error) { return core.HeldBy(tx, f) })
}

// Release implements [cataloguestore.Store].
func (l *Ledger) Release(ctx context.Context, f ledger.Fence) (int, error) {
	return catCall(l, ctx, "Release", true, func(tx core.CatTx) (int, error) { return core.Release(tx, f) })
}

// Reservations implements [cataloguestore.Store].
func (l *Ledger) Reservations(ctx context.Context, s ledger.Scope) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "Reservations", false, func(tx core.CatTx) ([]cataloguestore.Reservation, error) { return core.Reservations(tx, s) })
}
