package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Controller leases (migrations/0007_controller_leases.sql). A lease's
// liveness is judged by the server's clock inside the transaction that
// depends on it; a decision that a lease is not live is made under a FOR
// SHARE lock of its row, which a renewal (FOR NO KEY UPDATE, then the
// clock) waits for.
//
// The lease writes (AcquireLease, RenewLease, ReleaseLease) do not go
// through the committers: each is one function call in a transaction of
// its own, which locks nothing but the lease's row. A batch of the
// committers may hold operation rows while it waits for a lease row (a
// Resolve that waits for a renewal under way); if renewals shared those
// batches, a renewal could hold a lease row while its batch waited for an
// operation row, and two batches could deadlock. A controller renews a
// few times per ttl, so a commit of its own per renewal costs little
// (BENCHMARKS.md, "ledger/postgres: controller leases").

// leaseAnswer is the record the lease functions answer with.
type leaseAnswer struct {
	code              string
	acquired, expires *time.Time
	ttl, renewals     *int64
	released, live    *bool
}

func (a *leaseAnswer) dest() []any {
	return []any{&a.code, &a.acquired, &a.expires, &a.ttl, &a.renewals, &a.released, &a.live}
}

func (a *leaseAnswer) lease(id string) ledger.Lease {
	return ledger.Lease{ControllerID: id, Acquired: utc(a.acquired), Expires: utc(a.expires),
		TTL: time.Duration(val(a.ttl)), Renewals: val(a.renewals), Released: val(a.released), Live: val(a.live)}
}

// utc is *t in UTC, or the zero time for NULL.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// leaseRefusal is the *ledger.LeaseError of a call refused because of
// controller id's lease, which expires at *expires (nil: no lease), in
// the words of the shared core.
func leaseRefusal(op, id string, expires *time.Time, sentinel error) error {
	refuse := core.LeaseExpired
	switch sentinel {
	case ledger.ErrLeaseHeld:
		refuse = core.LeaseHeld
	case ledger.ErrOwnerLive:
		refuse = core.OwnerLive
	case ledger.ErrInFlight:
		refuse = core.InFlight
	}
	return refuse(op, id, utc(expires))
}

// AcquireLease implements [ledger.Ledger]. One statement, in a
// transaction of its own.
func (l *Ledger) AcquireLease(ctx context.Context, controllerID string, ttl time.Duration) (ledger.Lease, error) {
	const op = "AcquireLease"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Lease{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateAcquireLease(controllerID, ttl); err != nil {
		return ledger.Lease{}, err
	}
	var a leaseAnswer
	if err := l.writeAlone(ctx, op, l.sql.acquireLease, []any{raw(controllerID), int64(ttl)}, a.dest()...); err != nil {
		return ledger.Lease{}, err
	}
	rec := a.lease(controllerID)
	switch a.code {
	case "ok":
		return rec, nil
	case "expired":
		return ledger.Lease{}, leaseRefusal(op, controllerID, a.expires, ledger.ErrLeaseExpired)
	case "held":
		return ledger.Lease{}, leaseRefusal(op, controllerID, a.expires, ledger.ErrLeaseHeld)
	}
	return ledger.Lease{}, unknownCode(op, a.code)
}

// RenewLease implements [ledger.Ledger]. One statement, in a transaction
// of its own.
func (l *Ledger) RenewLease(ctx context.Context, controllerID string, ttl time.Duration) (ledger.Lease, error) {
	const op = "RenewLease"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Lease{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateRenewLease(controllerID, ttl); err != nil {
		return ledger.Lease{}, err
	}
	var a leaseAnswer
	if err := l.writeAlone(ctx, op, l.sql.renewLease, []any{raw(controllerID), int64(ttl)}, a.dest()...); err != nil {
		return ledger.Lease{}, err
	}
	switch a.code {
	case "ok":
		return a.lease(controllerID), nil
	case "expired":
		return ledger.Lease{}, leaseRefusal(op, controllerID, a.expires, ledger.ErrLeaseExpired)
	case "not_found":
		return ledger.Lease{}, core.LeaseNotFound(op, controllerID)
	}
	return ledger.Lease{}, unknownCode(op, a.code)
}

// ReleaseLease implements [ledger.Ledger]. One statement, in a
// transaction of its own.
func (l *Ledger) ReleaseLease(ctx context.Context, controllerID string) (ledger.Lease, error) {
	const op = "ReleaseLease"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Lease{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateReleaseLease(controllerID); err != nil {
		return ledger.Lease{}, err
	}
	var a leaseAnswer
	if err := l.writeAlone(ctx, op, l.sql.releaseLease, []any{raw(controllerID)}, a.dest()...); err != nil {
		return ledger.Lease{}, err
	}
	switch a.code {
	case "ok":
		return a.lease(controllerID), nil
	case "not_found":
		return ledger.Lease{}, core.LeaseNotFound(op, controllerID)
	}
	return ledger.Lease{}, unknownCode(op, a.code)
}

// Leases implements [ledger.Ledger]. One statement.
func (l *Ledger) Leases(ctx context.Context) ([]ledger.Lease, error) {
	const op = "Leases"
	if err := l.enter(ctx, op); err != nil {
		return nil, err
	}
	defer l.inflight.Done()
	out := []ledger.Lease{}
	err := l.run(ctx, op, func(c *pgxpool.Conn) error {
		out = out[:0]
		rows, err := c.Query(ctx, l.sql.leases)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id                []byte
				acquired, expires time.Time
				ttl, renewals     int64
				released, live    bool
			)
			if err := rows.Scan(&id, &acquired, &expires, &ttl, &renewals, &released, &live); err != nil {
				return err
			}
			out = append(out, ledger.Lease{ControllerID: string(id), Acquired: acquired.UTC(), Expires: expires.UTC(),
				TTL: time.Duration(ttl), Renewals: renewals, Released: released, Live: live})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TakeOver implements [ledger.Ledger]. One statement: take_over locks the
// operation, checks it and both leases (the orphaned attempt's
// controller's under lease_check's lock, so that a renewal under way is
// seen), starts the new attempt and moves the fence, in one transaction.
func (l *Ledger) TakeOver(ctx context.Context, t ledger.Takeover) (ledger.Fence, error) {
	const op = "TakeOver"
	if err := l.enter(ctx, op); err != nil {
		return ledger.Fence{}, err
	}
	defer l.inflight.Done()
	if err := core.ValidateTakeOver(t); err != nil {
		return ledger.Fence{}, err
	}
	f := t.From
	var (
		h            head
		leaseID      []byte
		leaseExpires *time.Time
		attemptGen   *int64
	)
	err := l.write(ctx, op, keyOf(f.Scope, f.OperationID), l.sql.takeOver,
		[]any{raw(f.Scope.OrganizationID), raw(f.Scope.ProjectID), raw(f.OperationID), raw(f.AttemptID), f.Generation,
			raw(t.AttemptID), raw(t.ControllerID)},
		h.dest(&leaseID, &leaseExpires, &attemptGen)...)
	if err != nil {
		return ledger.Fence{}, err
	}
	next := ledger.Fence{Scope: f.Scope, OperationID: f.OperationID, AttemptID: t.AttemptID, Generation: f.Generation + 1}
	switch h.code {
	case "ok":
		return next, nil
	case "attempt_exists":
		// As StartAttempt names an earlier attempt.
		earlier := ledger.Fence{Scope: f.Scope, OperationID: f.OperationID, AttemptID: t.AttemptID, Generation: val(attemptGen)}
		return ledger.Fence{}, core.StaleFence(op, earlier, string(h.curAttempt), val(h.curGen))
	case "owner_live":
		return ledger.Fence{}, leaseRefusal(op, string(leaseID), leaseExpires, ledger.ErrOwnerLive)
	case "lease_expired":
		return ledger.Fence{}, leaseRefusal(op, t.ControllerID, leaseExpires, ledger.ErrLeaseExpired)
	}
	return ledger.Fence{}, h.refusal(op, f)
}

// writeAlone runs one write in a transaction of its own on a pooled
// connection, outside the committers, again after a serialization failure
// or a deadlock (at most l.retries times); its failures are reported as
// every write's (writeErr).
func (l *Ledger) writeAlone(ctx context.Context, op, sql string, args []any, dest ...any) error {
	for try := 0; ; try++ {
		if ctx.Err() != nil {
			return notApplied(ctx, op)
		}
		err := l.once(ctx, func(c *pgxpool.Conn) error { return c.QueryRow(ctx, sql, args...).Scan(dest...) })
		if err == nil {
			return nil
		}
		if try < l.retries && retryable(err) && ctx.Err() == nil {
			continue
		}
		return writeErr(ctx, op, err, try)
	}
}
