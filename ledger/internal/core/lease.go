package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// Controller leases (ledger.Lease). A lease is one record per controller
// id, never deleted: an id whose lease ended is never live again, so a
// controller that was paused past its lease cannot come back under it.
// Every decision that depends on a lease is taken inside the transaction
// of the call, by the clock the backend passes in (time.Now for
// ledger/memory and ledger/bolt), so a lease cannot expire between the
// check and the write it guards.

// LeaseRecord is what a backend stores per controller: the lease as
// ledger.Lease reports it, without Live (computed when read), and the
// store handle that acquired it.
type LeaseRecord struct {
	ControllerID string        `json:"controller_id"`
	Acquired     time.Time     `json:"acquired"`
	Expires      time.Time     `json:"expires"`
	TTL          time.Duration `json:"ttl"`
	Renewals     int64         `json:"renewals,omitempty"`
	Released     bool          `json:"released,omitempty"`
	// Holder names the open store handle that acquired the lease
	// (Tx.Holder). A lease held under another handle is not live: see
	// Tx.Holder.
	Holder string `json:"holder,omitempty"`
}

// liveAt reports whether r is live at now for a transaction of the store
// handle holder.
func (r LeaseRecord) liveAt(now time.Time, holder string) bool {
	return !r.Released && r.Holder == holder && now.Before(r.Expires)
}

// lease returns r as ledger.Lease reports it at now.
func (r LeaseRecord) lease(now time.Time, holder string) ledger.Lease {
	return ledger.Lease{ControllerID: r.ControllerID, Acquired: r.Acquired, Expires: r.Expires, TTL: r.TTL,
		Renewals: r.Renewals, Released: r.Released, Live: r.liveAt(now, holder)}
}

// normTime is the form lease times are stored in: UTC, no monotonic
// clock reading, nanosecond precision.
func normTime(t time.Time) time.Time { return t.Round(0).UTC() }

// leases answers "is controller id live?" within one transaction, reading
// each lease record once.
type leases struct {
	tx   Tx
	now  time.Time
	seen map[string]LeaseRecord // found records; a missing one maps to the zero record
}

func newLeases(tx Tx, now time.Time) *leases {
	return &leases{tx: tx, now: now}
}

// get returns id's record (zero and false when there is none).
func (ls *leases) get(id string) (LeaseRecord, bool, error) {
	if r, ok := ls.seen[id]; ok {
		return r, r.ControllerID != "", nil
	}
	r, ok, err := ls.tx.Lease(id)
	if err != nil {
		return LeaseRecord{}, false, err
	}
	if ls.seen == nil {
		ls.seen = map[string]LeaseRecord{}
	}
	if !ok {
		r = LeaseRecord{}
	}
	ls.seen[id] = r
	return r, ok, nil
}

// live reports whether controller id holds a live lease, with its record.
// The empty id (no controller) is never live.
func (ls *leases) live(id string) (LeaseRecord, bool, error) {
	if id == "" {
		return LeaseRecord{}, false, nil
	}
	r, ok, err := ls.get(id)
	if err != nil || !ok {
		return r, false, err
	}
	return r, r.liveAt(ls.now, ls.tx.Holder()), nil
}

// requireLive refuses with ErrLeaseExpired unless controller id (not
// empty) holds a live lease; an id never registered is refused the same
// way, with no expiry.
func (ls *leases) requireLive(op, id string) error {
	r, ok, err := ls.live(id)
	if err != nil {
		return err
	}
	if !ok {
		return LeaseExpired(op, id, r.Expires)
	}
	return nil
}

// Validation of the lease methods' arguments.

// ValidateAcquireLease checks AcquireLease's arguments.
func ValidateAcquireLease(id string, ttl time.Duration) error {
	return invalid("AcquireLease", check.ID("controller_id", id), ledger.ValidateTTL(ttl))
}

// ValidateRenewLease checks RenewLease's arguments.
func ValidateRenewLease(id string, ttl time.Duration) error {
	return invalid("RenewLease", check.ID("controller_id", id), ledger.ValidateTTL(ttl))
}

// ValidateReleaseLease checks ReleaseLease's arguments.
func ValidateReleaseLease(id string) error {
	return invalid("ReleaseLease", check.ID("controller_id", id))
}

// ValidateTakeOver checks TakeOver's arguments.
func ValidateTakeOver(t ledger.Takeover) error {
	return invalid("TakeOver", t.Validate())
}

// Refusals about leases. op is the refused method's name; expires is the
// controller's lease expiry as recorded (zero when it has no lease).

// LeaseNotFound: no lease was ever acquired under id.
func LeaseNotFound(op, id string) error {
	return fmt.Errorf("ledger: %s: controller %q has no lease; acquire one first: %w", op, id, ledger.ErrNotFound)
}

// LeaseExpired: controller id's lease has expired or was released, or it
// never had one.
func LeaseExpired(op, id string, expires time.Time) error {
	return &ledger.LeaseError{Op: op, ControllerID: id, Expires: expires, Err: ledger.ErrLeaseExpired}
}

// LeaseHeld: a live lease under id exists with another ttl.
func LeaseHeld(op, id string, expires time.Time) error {
	return &ledger.LeaseError{Op: op, ControllerID: id, Expires: expires, Err: ledger.ErrLeaseHeld}
}

// OwnerLive: the attempt to take over belongs to live controller id.
func OwnerLive(op, id string, expires time.Time) error {
	return &ledger.LeaseError{Op: op, ControllerID: id, Expires: expires, Err: ledger.ErrOwnerLive}
}

// InFlight: the effect is authorized under live controller id.
func InFlight(op, id string, expires time.Time) error {
	return &ledger.LeaseError{Op: op, ControllerID: id, Expires: expires, Err: ledger.ErrInFlight}
}

// AcquireLease implements ledger.Ledger.AcquireLease at now.
func AcquireLease(tx Tx, id string, ttl time.Duration, now time.Time) (ledger.Lease, error) {
	const op = "AcquireLease"
	if err := ValidateAcquireLease(id, ttl); err != nil {
		return ledger.Lease{}, err
	}
	now = normTime(now)
	r, ok, err := tx.Lease(id)
	if err != nil {
		return ledger.Lease{}, err
	}
	if ok {
		switch {
		case !r.liveAt(now, tx.Holder()):
			return ledger.Lease{}, LeaseExpired(op, id, r.Expires)
		case r.TTL != ttl:
			return ledger.Lease{}, LeaseHeld(op, id, r.Expires)
		}
		return r.lease(now, tx.Holder()), nil
	}
	r = LeaseRecord{ControllerID: id, Acquired: now, Expires: now.Add(ttl), TTL: ttl, Holder: tx.Holder()}
	if err := tx.PutLease(r); err != nil {
		return ledger.Lease{}, err
	}
	return r.lease(now, tx.Holder()), nil
}

// RenewLease implements ledger.Ledger.RenewLease at now.
func RenewLease(tx Tx, id string, ttl time.Duration, now time.Time) (ledger.Lease, error) {
	const op = "RenewLease"
	if err := ValidateRenewLease(id, ttl); err != nil {
		return ledger.Lease{}, err
	}
	now = normTime(now)
	r, ok, err := tx.Lease(id)
	if err != nil {
		return ledger.Lease{}, err
	}
	if !ok {
		return ledger.Lease{}, LeaseNotFound(op, id)
	}
	if !r.liveAt(now, tx.Holder()) {
		return ledger.Lease{}, LeaseExpired(op, id, r.Expires)
	}
	r.Expires, r.TTL, r.Renewals = now.Add(ttl), ttl, r.Renewals+1
	if err := tx.PutLease(r); err != nil {
		return ledger.Lease{}, err
	}
	return r.lease(now, tx.Holder()), nil
}

// ReleaseLease implements ledger.Ledger.ReleaseLease at now. A lease
// released while live ends now: its Expires becomes now.
func ReleaseLease(tx Tx, id string, now time.Time) (ledger.Lease, error) {
	const op = "ReleaseLease"
	if err := ValidateReleaseLease(id); err != nil {
		return ledger.Lease{}, err
	}
	now = normTime(now)
	r, ok, err := tx.Lease(id)
	if err != nil {
		return ledger.Lease{}, err
	}
	if !ok {
		return ledger.Lease{}, LeaseNotFound(op, id)
	}
	if r.Released {
		return r.lease(now, tx.Holder()), nil
	}
	r.Released = true
	if now.Before(r.Expires) {
		r.Expires = now
	}
	if err := tx.PutLease(r); err != nil {
		return ledger.Lease{}, err
	}
	return r.lease(now, tx.Holder()), nil
}

// Leases implements ledger.Ledger.Leases at now.
func Leases(tx Tx, now time.Time) ([]ledger.Lease, error) {
	recs, err := tx.Leases()
	if err != nil {
		return nil, err
	}
	out := make([]ledger.Lease, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.lease(now, tx.Holder()))
	}
	return out, nil
}

// TakeOver implements ledger.Ledger.TakeOver at now. Order after the
// arguments and the operation: operation over; the repeat of a takeover
// that succeeded (then only the taker's lease is checked); t.From not the
// current attempt (*FenceError), t.AttemptID naming an earlier attempt
// (*FenceError, as StartAttempt); t.From's controller live
// (ErrOwnerLive); the taker's lease not live (ErrLeaseExpired).
func TakeOver(tx Tx, t ledger.Takeover, now time.Time) (ledger.Fence, error) {
	const op = "TakeOver"
	if err := ValidateTakeOver(t); err != nil {
		return ledger.Fence{}, err
	}
	f := t.From
	rec, err := loadOp(tx, op, f.Scope, f.OperationID)
	if err != nil {
		return ledger.Fence{}, err
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Fence{}, err
	}
	ls := newLeases(tx, now)
	next := ledger.Fence{Scope: f.Scope, OperationID: f.OperationID, AttemptID: t.AttemptID, Generation: f.Generation + 1}
	if n := len(rec.Attempts); n >= 2 {
		cur, prev := rec.Attempts[n-1], rec.Attempts[n-2]
		if cur.AttemptID == t.AttemptID && cur.Generation == next.Generation && cur.ControllerID == t.ControllerID &&
			prev.AttemptID == f.AttemptID && prev.Generation == f.Generation {
			if err := ls.requireLive(op, t.ControllerID); err != nil {
				return ledger.Fence{}, err
			}
			return next, nil
		}
	}
	if rec.Op.CurrentAttemptID != f.AttemptID || rec.Op.CurrentGeneration != f.Generation {
		return ledger.Fence{}, StaleFence(op, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
	}
	for _, a := range rec.Attempts {
		if a.AttemptID == t.AttemptID {
			af := ledger.Fence{Scope: f.Scope, OperationID: f.OperationID, AttemptID: a.AttemptID, Generation: a.Generation}
			return ledger.Fence{}, StaleFence(op, af, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
		}
	}
	owner := rec.Attempts[len(rec.Attempts)-1].ControllerID
	if r, live, err := ls.live(owner); err != nil {
		return ledger.Fence{}, err
	} else if live {
		return ledger.Fence{}, OwnerLive(op, owner, r.Expires)
	}
	if err := ls.requireLive(op, t.ControllerID); err != nil {
		return ledger.Fence{}, err
	}
	rec.Attempts = append(rec.Attempts, ledger.Attempt{AttemptID: t.AttemptID, Generation: next.Generation, ControllerID: t.ControllerID})
	setCurrent(&rec, rec.Attempts[len(rec.Attempts)-1])
	if err := tx.PutOp(KeyOf(f.Scope, f.OperationID), rec); err != nil {
		return ledger.Fence{}, err
	}
	return next, nil
}

// setCurrent makes a the operation's current attempt.
func setCurrent(rec *OpRecord, a ledger.Attempt) {
	rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration, rec.Op.CurrentControllerID = a.AttemptID, a.Generation, a.ControllerID
}

// pendingEffects returns the effects of the reconciliation index for
// which keep, given the effect and whether its controller is live,
// reports true.
func pendingEffects(tx Tx, op string, now time.Time, keep func(e ledger.Effect, live bool) bool) ([]ledger.Effect, error) {
	keys, err := tx.Pending()
	if err != nil {
		return nil, err
	}
	ls := newLeases(tx, now)
	out := make([]ledger.Effect, 0, len(keys))
	for _, k := range keys {
		e, ok, err := tx.Effect(k)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("ledger: %s: index names missing effect %q of operation %q: %w", op, k.Effect, k.Op, ledger.ErrCorrupt)
		}
		live := false
		if e.State == ledger.EffectAuthorized {
			if _, live, err = ls.live(e.ControllerID); err != nil {
				return nil, err
			}
		}
		if keep(e, live) {
			out = append(out, e)
		}
	}
	return out, nil
}

// ListUnknown implements ledger.Ledger.ListUnknown at now: unknown
// effects, and authorized ones whose controller holds no live lease.
func ListUnknown(tx Tx, now time.Time) ([]ledger.Effect, error) {
	return pendingEffects(tx, "ListUnknown", now, func(e ledger.Effect, live bool) bool { return !live })
}

// ListInFlight implements ledger.Ledger.ListInFlight at now: authorized
// effects whose controller holds a live lease.
func ListInFlight(tx Tx, now time.Time) ([]ledger.Effect, error) {
	return pendingEffects(tx, "ListInFlight", now, func(e ledger.Effect, live bool) bool {
		return e.State == ledger.EffectAuthorized && live
	})
}

// The Ledger's lease methods, and the methods whose decision depends on
// leases, read the clock inside the transaction (as Admit does for the
// deadline): a lease is judged when the call is decided, not when it was
// made.

func acquireNow(tx Tx, id string, ttl time.Duration) (ledger.Lease, error) {
	return AcquireLease(tx, id, ttl, time.Now())
}

func renewNow(tx Tx, id string, ttl time.Duration) (ledger.Lease, error) {
	return RenewLease(tx, id, ttl, time.Now())
}

func releaseNow(tx Tx, id string) (ledger.Lease, error) { return ReleaseLease(tx, id, time.Now()) }

func leasesNow(tx Tx) ([]ledger.Lease, error) { return Leases(tx, time.Now()) }

func takeOverNow(tx Tx, t ledger.Takeover) (ledger.Fence, error) { return TakeOver(tx, t, time.Now()) }

func listInFlightNow(tx Tx) ([]ledger.Effect, error) { return ListInFlight(tx, time.Now()) }

func listUnknownNow(tx Tx) ([]ledger.Effect, error) { return ListUnknown(tx, time.Now()) }

func launchAttemptNow(tx Tx, a ledger.AttemptLaunch) (ledger.Fence, error) {
	return LaunchAttempt(tx, a, time.Now())
}

func resolveNow(tx Tx, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution) (ledger.Effect, error) {
	return Resolve(tx, s, opID, id, d, res, time.Now())
}

func listOperationsNow(tx Tx, q ledger.OperationQuery) ([]ledger.Operation, error) {
	return ListOperations(tx, q, time.Now())
}

// AcquireLease implements [ledger.Ledger].
func (l *Ledger) AcquireLease(ctx context.Context, id string, ttl time.Duration) (ledger.Lease, error) {
	return call2(l, ctx, "AcquireLease", writes, acquireNow, id, ttl)
}

// RenewLease implements [ledger.Ledger]. A renewal is a durable write.
func (l *Ledger) RenewLease(ctx context.Context, id string, ttl time.Duration) (ledger.Lease, error) {
	return call2(l, ctx, "RenewLease", writes, renewNow, id, ttl)
}

// ReleaseLease implements [ledger.Ledger].
func (l *Ledger) ReleaseLease(ctx context.Context, id string) (ledger.Lease, error) {
	return call1(l, ctx, "ReleaseLease", writes, releaseNow, id)
}

// Leases implements [ledger.Ledger].
func (l *Ledger) Leases(ctx context.Context) ([]ledger.Lease, error) {
	return call0(l, ctx, "Leases", reads, leasesNow)
}

// TakeOver implements [ledger.Ledger].
func (l *Ledger) TakeOver(ctx context.Context, t ledger.Takeover) (ledger.Fence, error) {
	return call1(l, ctx, "TakeOver", writes, takeOverNow, t)
}

// ListInFlight implements [ledger.Ledger].
func (l *Ledger) ListInFlight(ctx context.Context) ([]ledger.Effect, error) {
	return call0(l, ctx, "ListInFlight", reads, listInFlightNow)
}

// checkLeases verifies the lease records (CheckTx calls it; Tx.Leases
// refuses a record filed under another id): each is listed in controller
// id order, names a controller id that is an identifier, and has a valid
// ttl, no negative renewal count and an expiry not before its
// acquisition; and every controller an attempt names has one (a
// controller's attempts are recorded only while its lease is live, and
// lease records are never removed). owners lists, per controller id, an
// operation that names it.
func checkLeases(tx Tx, owners map[string]string, report func(string, ...any) bool) error {
	recs, err := tx.Leases()
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for i, r := range recs {
		have[r.ControllerID] = true
		name := fmt.Sprintf("lease of controller %q", r.ControllerID)
		if i > 0 && recs[i-1].ControllerID >= r.ControllerID && !report("%s: leases not in controller id order", name) {
			return nil
		}
		if err := firstErr(check.ID("controller_id", r.ControllerID), ledger.ValidateTTL(r.TTL)); err != nil && !report("%s: %v", name, err) {
			return nil
		}
		if (r.Renewals < 0 || r.Expires.Before(r.Acquired)) && !report("%s: %d renewals, acquired %v, expires %v", name, r.Renewals, r.Acquired, r.Expires) {
			return nil
		}
	}
	for _, id := range slices.Sorted(maps.Keys(owners)) {
		if !have[id] && !report("operation %q names controller %q, which has no lease record", owners[id], id) {
			return nil
		}
	}
	return nil
}
