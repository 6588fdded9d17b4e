// Package core holds the ledger's semantics once, for every backend.
//
// A backend provides two things: a [Runner], which runs one call as one
// transaction of its store (and owns context, closing, durability and
// retries), and a [Tx], the small record store a transaction exposes
// (operation records, effects, bootstraps, artifacts, the reconciliation
// index). [New] turns a Runner into a [Ledger] that implements every method
// of ledger.Ledger; the backend embeds it. A backend whose calls run on
// the caller's goroutine under its own lock also implements [Serial], and
// then pays no allocation per call for the seam. The functions of this
// package (CreateOperation, StartAttempt, …) decide each call inside one
// Tx, so a fence check and the write it guards are atomic by construction.
//
// Contract with backends: every refusal (fence, state, fingerprint,
// budget, validation) is decided before the first write of a call. The only
// errors a function can return after it has written are errors returned by
// the Tx itself; when a Tx write fails the backend must discard the whole
// transaction. ledger/memory (a mutex over maps) and ledger/bolt (a
// group-committing bbolt file) are the backends that run on this seam.
//
// ledger/postgres does not: each of its writes is decided by a SQL
// function of its own, in one statement, so that a call is one round trip.
// From this package it takes only what keeps its answers the same as the
// others': the argument checks (Validate…), the refusal errors, the
// normalization of evidence and deadlines, new ids, and the catalogue's
// records (its CatTx runs this package's catalogue functions). So this
// package is not the specification of the ledger's behaviour: the
// conformance suite of ledger/ledgertest, with its model of the ledger
// (model.go, catalogue_model.go), is, and every implementation —
// ledger/memory, ledger/bolt and ledger/postgres — is held to it.
package core

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// OpKey identifies an operation.
type OpKey struct {
	Org, Project, Op string
}

// KeyOf returns the key of operation op in scope s.
func KeyOf(s ledger.Scope, op string) OpKey {
	return OpKey{Org: s.OrganizationID, Project: s.ProjectID, Op: op}
}

// Scope returns the scope part of k.
func (k OpKey) Scope() ledger.Scope {
	return ledger.Scope{OrganizationID: k.Org, ProjectID: k.Project}
}

// EffectKey identifies a logical effect.
type EffectKey struct {
	OpKey
	Effect string
}

// OpRecord is what a backend stores per operation.
type OpRecord struct {
	Op       ledger.Operation `json:"operation"`
	Attempts []ledger.Attempt `json:"attempts"`
	Result   *ledger.Result   `json:"result,omitempty"`
}

// Tx is one backend transaction. Get methods return values the caller may
// keep (copies). Implementations need not be safe for concurrent use.
type Tx interface {
	Op(k OpKey) (OpRecord, bool, error)
	PutOp(k OpKey, r OpRecord) error
	Effect(k EffectKey) (ledger.Effect, bool, error)
	PutEffect(k EffectKey, e ledger.Effect) error
	// Effects returns the operation's effects ordered by logical effect id.
	Effects(k OpKey) ([]ledger.Effect, error)
	Bootstrap(k OpKey, id string) (ledger.Bootstrap, bool, error)
	// PutBootstrap stores b under operation k and records k as the owner
	// of b.BootstrapID in the global index that BootstrapOwner reads.
	PutBootstrap(k OpKey, b ledger.Bootstrap) error
	// BootstrapOwner returns the operation a bootstrap id was issued
	// under, whatever its scope: bootstrap ids are unique in the ledger.
	BootstrapOwner(id string) (OpKey, bool, error)
	// Bootstraps returns the operation's bootstrap ids ordered by id.
	Bootstraps(k OpKey) ([]ledger.Bootstrap, error)
	Artifact(ref string) (ledger.Artifact, bool, error)
	PutArtifact(a ledger.Artifact) error
	// SetPending adds k to (or removes it from) the reconciliation index.
	SetPending(k EffectKey, pending bool) error
	// Pending returns the reconciliation index ordered by org, project,
	// operation and effect id.
	Pending() ([]EffectKey, error)
	// ScanOps calls fn with operation records in CompareKeys order,
	// starting after *after when it is not nil, only those of *scope when
	// it is not nil, until fn returns false.
	ScanOps(scope *ledger.Scope, after *OpKey, fn func(OpRecord) bool) error
	// Evidence returns the evidence recorded for an attempt of operation k.
	Evidence(k OpKey, attemptID string) (ledger.AttemptEvidence, bool, error)
	// PutEvidence stores e, keyed by its AttemptID, under operation k.
	PutEvidence(k OpKey, e ledger.AttemptEvidence) error
	// Evidences returns every evidence record of operation k, in any order.
	Evidences(k OpKey) ([]ledger.AttemptEvidence, error)
	// Lease returns the lease record of controller id.
	Lease(id string) (LeaseRecord, bool, error)
	// PutLease stores r under r.ControllerID.
	PutLease(r LeaseRecord) error
	// Leases returns every lease record ordered by controller id.
	Leases() ([]LeaseRecord, error)
	// Holder names the open store handle the transaction runs in. Only a
	// lease acquired under the same holder can be live: a backend whose
	// handle proves that no other process uses the store (ledger/bolt's
	// file lock) gives each handle a name of its own, so that the leases
	// of a process that had the store before are dead as soon as another
	// one opens it. A backend shared by live processes, or one that
	// lives as long as its handle (ledger/memory), returns "".
	Holder() string
}

// NewID returns prefix followed by 32 hex digits from crypto/rand (128
// bits): unique and unguessable.
func NewID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24; it crashes the program instead.
	return prefix + hex.EncodeToString(b[:])
}

// CreateOperation implements ledger.Ledger.CreateOperation.
func CreateOperation(tx Tx, spec ledger.OperationSpec) (ledger.Operation, error) {
	if err := ValidateCreateOperation(spec); err != nil {
		return ledger.Operation{}, err
	}
	k := KeyOf(spec.Scope, spec.OperationID)
	rec, ok, err := specOp(tx, spec)
	if err != nil || ok {
		return rec.Op, err
	}
	if err := tx.PutOp(k, rec); err != nil {
		return ledger.Operation{}, err
	}
	return rec.Op, nil
}

// specOp returns the recorded operation spec names (ok), refused with
// ErrChangedInput when its spec is another, or the record of a new
// operation created from spec, not yet stored.
func specOp(tx Tx, spec ledger.OperationSpec) (rec OpRecord, ok bool, err error) {
	dl := NormDeadline(spec.Deadline)
	rec, ok, err = tx.Op(KeyOf(spec.Scope, spec.OperationID))
	if err != nil {
		return OpRecord{}, false, err
	}
	if ok {
		o := rec.Op
		if o.CapabilityID != spec.CapabilityID || o.RequestDigest != spec.RequestDigest ||
			o.ManifestDigest != spec.ManifestDigest || o.EffectBudget != spec.EffectBudget || !o.Deadline.Equal(dl) {
			return OpRecord{}, false, SpecChanged(spec.OperationID)
		}
		return rec, true, nil
	}
	return OpRecord{Op: ledger.Operation{
		Scope:          spec.Scope,
		OperationID:    spec.OperationID,
		CapabilityID:   spec.CapabilityID,
		RequestDigest:  spec.RequestDigest,
		ManifestDigest: spec.ManifestDigest,
		EffectBudget:   spec.EffectBudget,
		Deadline:       dl,
		State:          ledger.OperationOpen,
	}}, false, nil
}

func loadOp(tx Tx, op string, s ledger.Scope, id string) (OpRecord, error) {
	rec, ok, err := tx.Op(KeyOf(s, id))
	if err != nil {
		return OpRecord{}, err
	}
	if !ok {
		return OpRecord{}, OperationNotFound(op, s, id)
	}
	return rec, nil
}

// checkFence loads the fenced operation and refuses a stale fence. It is the
// first thing every fenced write does, inside the write's transaction; the
// fence's form was checked with the call's other arguments.
func checkFence(tx Tx, op string, f ledger.Fence) (OpRecord, error) {
	rec, err := loadOp(tx, op, f.Scope, f.OperationID)
	if err != nil {
		return OpRecord{}, err
	}
	if rec.Op.CurrentGeneration != f.Generation || rec.Op.CurrentAttemptID != f.AttemptID {
		return OpRecord{}, StaleFence(op, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
	}
	return rec, nil
}

// checkOpen refuses calls that would advance a finished operation.
func checkOpen(op string, rec OpRecord) error {
	return NotOpen(op, rec.Op.OperationID, rec.Op.State, rec.Op.CancelReason)
}

func checkDeadline(op string, rec OpRecord, now time.Time) error {
	if dl := rec.Op.Deadline; !dl.IsZero() && !now.Before(dl) {
		return DeadlinePassed(op, rec.Op.OperationID, dl)
	}
	return nil
}

// StartAttempt implements ledger.Ledger.StartAttempt.
func StartAttempt(tx Tx, s ledger.Scope, opID, attemptID string) (ledger.Fence, error) {
	const op = "StartAttempt"
	if err := ValidateStartAttempt(s, opID, attemptID); err != nil {
		return ledger.Fence{}, err
	}
	rec, err := loadOp(tx, op, s, opID)
	if err != nil {
		return ledger.Fence{}, err
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Fence{}, err
	}
	for _, a := range rec.Attempts {
		if a.AttemptID != attemptID {
			continue
		}
		f := ledger.Fence{Scope: s, OperationID: opID, AttemptID: attemptID, Generation: a.Generation}
		if a.Generation == rec.Op.CurrentGeneration {
			return f, nil
		}
		return ledger.Fence{}, StaleFence(op, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
	}
	gen := rec.Op.CurrentGeneration + 1
	rec.Attempts = append(rec.Attempts, ledger.Attempt{AttemptID: attemptID, Generation: gen})
	setCurrent(&rec, rec.Attempts[len(rec.Attempts)-1])
	if err := tx.PutOp(KeyOf(s, opID), rec); err != nil {
		return ledger.Fence{}, err
	}
	return ledger.Fence{Scope: s, OperationID: opID, AttemptID: attemptID, Generation: gen}, nil
}

// issued returns bootstrap id as issued to the attempt f names with launch
// (ok), refused with ErrChangedInput when it was issued to another
// operation, attempt or launch, or the record to issue, not yet stored.
func issued(tx Tx, op string, f ledger.Fence, id string, launch canon.Digest) (b ledger.Bootstrap, ok bool, err error) {
	k := KeyOf(f.Scope, f.OperationID)
	owner, ok, err := tx.BootstrapOwner(id)
	if err != nil {
		return ledger.Bootstrap{}, false, err
	}
	if ok && owner != k {
		return ledger.Bootstrap{}, false, BootstrapOtherOperation(op, id)
	}
	b, ok, err = tx.Bootstrap(k, id)
	if err != nil {
		return ledger.Bootstrap{}, false, err
	}
	if ok {
		if b.AttemptID != f.AttemptID || b.Generation != f.Generation {
			return ledger.Bootstrap{}, false, BootstrapOtherAttempt(op, b, f)
		}
		if b.LaunchDigest != launch {
			return ledger.Bootstrap{}, false, BootstrapOtherLaunch(op, b, launch)
		}
		return b, true, nil
	}
	return ledger.Bootstrap{BootstrapID: id, AttemptID: f.AttemptID, Generation: f.Generation, LaunchDigest: launch}, false, nil
}

// LaunchAttempt implements ledger.Ledger.LaunchAttempt at now: the
// controller's lease, then CreateOperation, StartAttempt at the
// generation asked for (an attempt already started must have the same
// controller, else ErrChangedInput) and the bootstrap id (issued), decided in that
// order before anything is written, then written together.
func LaunchAttempt(tx Tx, a ledger.AttemptLaunch, now time.Time) (ledger.Fence, error) {
	const op = "LaunchAttempt"
	if err := ValidateLaunchAttempt(a); err != nil {
		return ledger.Fence{}, err
	}
	if a.ControllerID != "" {
		if err := newLeases(tx, now).requireLive(op, a.ControllerID); err != nil {
			return ledger.Fence{}, err
		}
	}
	rec, _, err := specOp(tx, a.Operation)
	if err != nil {
		return ledger.Fence{}, err
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Fence{}, err
	}
	f := a.Fence()
	started := false
	for _, at := range rec.Attempts {
		if at.AttemptID == a.AttemptID {
			started = true
			if at.Generation != a.Generation || at.Generation != rec.Op.CurrentGeneration {
				return ledger.Fence{}, StaleFence(op, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
			}
			if at.ControllerID != a.ControllerID {
				return ledger.Fence{}, AttemptOtherController(op, f, at.ControllerID, a.ControllerID)
			}
		}
	}
	if !started && rec.Op.CurrentGeneration+1 != a.Generation {
		return ledger.Fence{}, StaleFence(op, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
	}
	b, issuedAlready, err := issued(tx, op, f, a.BootstrapID, a.LaunchDigest)
	if err != nil {
		return ledger.Fence{}, err
	}
	k := KeyOf(f.Scope, f.OperationID)
	if !started { // a new operation has no attempt yet: this stores it too
		rec.Attempts = append(rec.Attempts, ledger.Attempt{AttemptID: a.AttemptID, Generation: a.Generation, ControllerID: a.ControllerID})
		setCurrent(&rec, rec.Attempts[len(rec.Attempts)-1])
		if err := tx.PutOp(k, rec); err != nil {
			return ledger.Fence{}, err
		}
	}
	if !issuedAlready {
		if err := tx.PutBootstrap(k, b); err != nil {
			return ledger.Fence{}, err
		}
	}
	return f, nil
}

// RedeemBootstrap implements ledger.Ledger.RedeemBootstrap.
func RedeemBootstrap(tx Tx, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	const op = "RedeemBootstrap"
	if err := ValidateRedeemBootstrap(f, r); err != nil {
		return ledger.Bootstrap{}, err
	}
	rec, err := checkFence(tx, op, f)
	if err != nil {
		return ledger.Bootstrap{}, err
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Bootstrap{}, err
	}
	k := KeyOf(f.Scope, f.OperationID)
	b, ok, err := tx.Bootstrap(k, r.BootstrapID)
	if err != nil {
		return ledger.Bootstrap{}, err
	}
	if !ok {
		return ledger.Bootstrap{}, BootstrapNotFound(op, r.BootstrapID, f.OperationID)
	}
	if b.AttemptID != f.AttemptID || b.Generation != f.Generation {
		return ledger.Bootstrap{}, BootstrapStale(op, b, f, rec.Op.CurrentAttemptID, rec.Op.CurrentGeneration)
	}
	if b.Redeemed {
		if b.RedeemedPID == r.PID && b.RedeemedSessionID == r.SessionID && b.LaunchDigest == r.LaunchDigest {
			// The same child and session again: a retry of a call whose
			// outcome was unknown, answered with the recorded redemption.
			return b, nil
		}
		return ledger.Bootstrap{}, BootstrapRedeemed(op, b, r)
	}
	if b.LaunchDigest != r.LaunchDigest {
		return ledger.Bootstrap{}, RedemptionLaunchChanged(op, b, r)
	}
	b.Redeemed, b.RedeemedPID, b.RedeemedSessionID = true, r.PID, r.SessionID
	if err := tx.PutBootstrap(k, b); err != nil {
		return ledger.Bootstrap{}, err
	}
	return b, nil
}

// checkRedeemed refuses admission of an attempt none of whose bootstrap ids
// was redeemed: the protocol admits only a child that bootstrapped.
func checkRedeemed(tx Tx, op string, f ledger.Fence) error {
	boots, err := tx.Bootstraps(KeyOf(f.Scope, f.OperationID))
	if err != nil {
		return err
	}
	for _, b := range boots {
		if b.AttemptID == f.AttemptID && b.Generation == f.Generation && b.Redeemed {
			return nil
		}
	}
	return NotRedeemed(op, f)
}

// checkAdmitted refuses effects and results of an attempt that was not
// admitted. rec must have passed checkFence, so its last attempt is f's.
func checkAdmitted(op string, f ledger.Fence, rec OpRecord) error {
	if n := len(rec.Attempts); n == 0 || !rec.Attempts[n-1].Admitted {
		return NotAdmitted(op, f)
	}
	return nil
}

// Admit implements ledger.Ledger.Admit.
func Admit(tx Tx, f ledger.Fence, d canon.Digest, now time.Time) (ledger.Attempt, error) {
	const op = "Admit"
	if err := ValidateAdmit(f, d); err != nil {
		return ledger.Attempt{}, err
	}
	rec, err := checkFence(tx, op, f)
	if err != nil {
		return ledger.Attempt{}, err
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Attempt{}, err
	}
	i := len(rec.Attempts) - 1 // the current attempt is always the last one
	if i < 0 || rec.Attempts[i].AttemptID != f.AttemptID {
		return ledger.Attempt{}, fmt.Errorf("ledger: %s: operation %q: current attempt %q missing from its attempt list: %w", op, f.OperationID, f.AttemptID, ledger.ErrCorrupt)
	}
	if !rec.Attempts[i].Admitted {
		if err := checkRedeemed(tx, op, f); err != nil {
			return ledger.Attempt{}, err
		}
	}
	if d != rec.Op.RequestDigest {
		return ledger.Attempt{}, RequestChanged(op, f.OperationID, d, rec.Op.RequestDigest)
	}
	if err := checkDeadline(op, rec, now); err != nil {
		return ledger.Attempt{}, err
	}
	if rec.Attempts[i].Admitted {
		return rec.Attempts[i], nil
	}
	rec.Attempts[i].Admitted = true
	if err := tx.PutOp(KeyOf(f.Scope, f.OperationID), rec); err != nil {
		return ledger.Attempt{}, err
	}
	return rec.Attempts[i], nil
}

// BeginEffect implements ledger.Ledger.BeginEffect.
func BeginEffect(tx Tx, f ledger.Fence, id string, d canon.Digest, now time.Time) (ledger.EffectGrant, error) {
	const op = "BeginEffect"
	if err := ValidateBeginEffect(f, id, d); err != nil {
		return ledger.EffectGrant{}, err
	}
	rec, err := checkFence(tx, op, f)
	if err != nil {
		return ledger.EffectGrant{}, err
	}
	if err := checkAdmitted(op, f, rec); err != nil {
		return ledger.EffectGrant{}, err
	}
	ek := EffectKey{OpKey: KeyOf(f.Scope, f.OperationID), Effect: id}
	e, ok, err := tx.Effect(ek)
	if err != nil {
		return ledger.EffectGrant{}, err
	}
	if ok {
		// The fingerprint is checked on the redelivery path too
		// (Powertools #2058/#2260 skipped it there).
		if e.RequestDigest != d {
			return ledger.EffectGrant{}, EffectChanged(op, e, d)
		}
		return ledger.EffectGrant{Effect: e, Redelivery: true}, nil
	}
	// A new effect is permission to dispatch: only for an attempt whose
	// controller, if it has one, is still live.
	ctl := rec.Attempts[len(rec.Attempts)-1].ControllerID
	if ctl != "" {
		if err := newLeases(tx, now).requireLive(op, ctl); err != nil {
			return ledger.EffectGrant{}, err
		}
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.EffectGrant{}, err
	}
	if err := checkDeadline(op, rec, now); err != nil {
		return ledger.EffectGrant{}, err
	}
	if rec.Op.EffectsUsed >= rec.Op.EffectBudget {
		return ledger.EffectGrant{}, BudgetExhausted(op, f.OperationID, id, rec.Op.EffectsUsed, rec.Op.EffectBudget)
	}
	rec.Op.EffectsUsed++
	e = ledger.Effect{
		Scope: f.Scope, OperationID: f.OperationID, LogicalEffectID: id, RequestDigest: d,
		AuthorizationID: NewID("auth_"), State: ledger.EffectAuthorized,
		AttemptID: f.AttemptID, Generation: f.Generation, Ordinal: rec.Op.EffectsUsed, ControllerID: ctl,
	}
	if err := tx.PutOp(ek.OpKey, rec); err != nil {
		return ledger.EffectGrant{}, err
	}
	if err := tx.PutEffect(ek, e); err != nil {
		return ledger.EffectGrant{}, err
	}
	if err := tx.SetPending(ek, true); err != nil {
		return ledger.EffectGrant{}, err
	}
	return ledger.EffectGrant{Effect: e}, nil
}

// loadEffect loads an effect for a transition and checks its fingerprint.
func loadEffect(tx Tx, op string, ek EffectKey, d canon.Digest) (ledger.Effect, error) {
	e, ok, err := tx.Effect(ek)
	if err != nil {
		return ledger.Effect{}, err
	}
	if !ok {
		return ledger.Effect{}, EffectNotFound(op, ek.Op, ek.Effect)
	}
	if e.RequestDigest != d {
		return ledger.Effect{}, EffectChanged(op, e, d)
	}
	return e, nil
}

// settle moves e to the outcome described by (to, receipt, reason) if the
// move is allowed from its current state. from lists the states the caller
// may move it from; an identical settled outcome is returned unchanged.
func settle(tx Tx, op string, ek EffectKey, e ledger.Effect, to ledger.EffectState, receipt string, reason ledger.NotConsumedReason, from ...ledger.EffectState) (ledger.Effect, error) {
	if e.State == to && e.ReceiptID == receipt && e.Reason == reason {
		return e, nil
	}
	if !slices.Contains(from, e.State) {
		return ledger.Effect{}, Transition(op, e, to)
	}
	e.State, e.ReceiptID, e.Reason = to, receipt, reason
	if err := tx.PutEffect(ek, e); err != nil {
		return ledger.Effect{}, err
	}
	if err := tx.SetPending(ek, to == ledger.EffectAuthorized || to == ledger.EffectUnknown); err != nil {
		return ledger.Effect{}, err
	}
	return e, nil
}

// fencedEffect loads a fenced call's effect; the caller validated the
// arguments.
func fencedEffect(tx Tx, op string, f ledger.Fence, id string, d canon.Digest) (EffectKey, ledger.Effect, error) {
	if _, err := checkFence(tx, op, f); err != nil {
		return EffectKey{}, ledger.Effect{}, err
	}
	ek := EffectKey{OpKey: KeyOf(f.Scope, f.OperationID), Effect: id}
	e, err := loadEffect(tx, op, ek, d)
	return ek, e, err
}

// ConfirmEffect implements ledger.Ledger.ConfirmEffect.
func ConfirmEffect(tx Tx, f ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	const op = "ConfirmEffect"
	if err := ValidateConfirmEffect(f, id, d, receipt); err != nil {
		return ledger.Effect{}, err
	}
	ek, e, err := fencedEffect(tx, op, f, id, d)
	if err != nil {
		return ledger.Effect{}, err
	}
	return settle(tx, op, ek, e, ledger.EffectConfirmed, receipt, "", ledger.EffectAuthorized)
}

// MarkNotConsumed implements ledger.Ledger.MarkNotConsumed.
func MarkNotConsumed(tx Tx, f ledger.Fence, id string, d canon.Digest, reason ledger.NotConsumedReason) (ledger.Effect, error) {
	const op = "MarkNotConsumed"
	if err := ValidateMarkNotConsumed(f, id, d, reason); err != nil {
		return ledger.Effect{}, err
	}
	ek, e, err := fencedEffect(tx, op, f, id, d)
	if err != nil {
		return ledger.Effect{}, err
	}
	return settle(tx, op, ek, e, ledger.EffectNotConsumed, "", reason, ledger.EffectAuthorized)
}

// MarkUnknown implements ledger.Ledger.MarkUnknown.
func MarkUnknown(tx Tx, f ledger.Fence, id string, d canon.Digest) (ledger.Effect, error) {
	const op = "MarkUnknown"
	if err := ValidateMarkUnknown(f, id, d); err != nil {
		return ledger.Effect{}, err
	}
	ek, e, err := fencedEffect(tx, op, f, id, d)
	if err != nil {
		return ledger.Effect{}, err
	}
	return settle(tx, op, ek, e, ledger.EffectUnknown, "", "", ledger.EffectAuthorized)
}

// Resolve implements ledger.Ledger.Resolve at now. An authorized effect
// whose controller is live is in flight: refused with ErrInFlight after
// the effect's fingerprint check, before the transition check.
func Resolve(tx Tx, s ledger.Scope, opID, id string, d canon.Digest, res ledger.Resolution, now time.Time) (ledger.Effect, error) {
	const op = "Resolve"
	if err := ValidateResolve(s, opID, id, d, res); err != nil {
		return ledger.Effect{}, err
	}
	if _, err := loadOp(tx, op, s, opID); err != nil {
		return ledger.Effect{}, err
	}
	ek := EffectKey{OpKey: KeyOf(s, opID), Effect: id}
	e, err := loadEffect(tx, op, ek, d)
	if err != nil {
		return ledger.Effect{}, err
	}
	if e.State == ledger.EffectAuthorized {
		if r, live, err := newLeases(tx, now).live(e.ControllerID); err != nil {
			return ledger.Effect{}, err
		} else if live {
			return ledger.Effect{}, InFlight(op, e.ControllerID, r.Expires)
		}
	}
	return settle(tx, op, ek, e, res.State, res.ReceiptID, res.Reason, ledger.EffectAuthorized, ledger.EffectUnknown)
}

// AcceptResult implements ledger.Ledger.AcceptResult.
func AcceptResult(tx Tx, f ledger.Fence, dd canon.Digest, artifact []byte) (ledger.Result, error) {
	const op = "AcceptResult"
	if err := ValidateAcceptResult(f, dd, artifact); err != nil {
		return ledger.Result{}, err
	}
	rec, err := checkFence(tx, op, f)
	if err != nil {
		return ledger.Result{}, err
	}
	if err := checkAdmitted(op, f, rec); err != nil {
		return ledger.Result{}, err
	}
	sum := canon.Sum(artifact)
	if r := rec.Result; r != nil {
		if r.DataDigest != dd {
			return ledger.Result{}, ResultAccepted(op, f.OperationID, r.DataDigest, dd)
		}
		if len(r.ArtifactRefs) == 0 {
			return ledger.Result{}, fmt.Errorf("ledger: %s: operation %q: accepted result has no artifact: %w", op, f.OperationID, ledger.ErrCorrupt)
		}
		a, ok, err := tx.Artifact(r.ArtifactRefs[0])
		if err != nil {
			return ledger.Result{}, err
		}
		if !ok {
			return ledger.Result{}, fmt.Errorf("ledger: %s: operation %q: artifact %q of the accepted result is missing: %w", op, f.OperationID, r.ArtifactRefs[0], ledger.ErrCorrupt)
		}
		if a.Digest != sum {
			return ledger.Result{}, ResultBytesChanged(op, f.OperationID, dd)
		}
		return cloneResult(*r), nil
	}
	if err := checkOpen(op, rec); err != nil {
		return ledger.Result{}, err
	}
	ref := NewID("artifact_")
	a := ledger.Artifact{Ref: ref, Scope: f.Scope, OperationID: f.OperationID, Digest: sum, Bytes: artifact}
	res := ledger.Result{DataDigest: dd, ArtifactRefs: []string{ref}, AttemptID: f.AttemptID, Generation: f.Generation}
	rec.Result = &res
	rec.Op.State = ledger.OperationCompleted
	if err := tx.PutArtifact(a); err != nil {
		return ledger.Result{}, err
	}
	if err := tx.PutOp(KeyOf(f.Scope, f.OperationID), rec); err != nil {
		return ledger.Result{}, err
	}
	return cloneResult(res), nil
}

func cloneResult(r ledger.Result) ledger.Result {
	r.ArtifactRefs = slices.Clone(r.ArtifactRefs)
	return r
}

// Cancel implements ledger.Ledger.Cancel.
func Cancel(tx Tx, s ledger.Scope, opID, reason string) (ledger.Operation, error) {
	const op = "Cancel"
	if err := ValidateCancel(s, opID, reason); err != nil {
		return ledger.Operation{}, err
	}
	rec, err := loadOp(tx, op, s, opID)
	if err != nil {
		return ledger.Operation{}, err
	}
	switch rec.Op.State {
	case ledger.OperationCancelled:
		return rec.Op, nil
	case ledger.OperationCompleted:
		return ledger.Operation{}, CancelCompleted(opID)
	}
	rec.Op.State, rec.Op.CancelReason = ledger.OperationCancelled, reason
	if err := tx.PutOp(KeyOf(s, opID), rec); err != nil {
		return ledger.Operation{}, err
	}
	return rec.Op, nil
}

// View implements ledger.Ledger.Operation.
func View(tx Tx, s ledger.Scope, opID string) (ledger.OperationView, error) {
	const op = "Operation"
	if err := ValidateView(s, opID); err != nil {
		return ledger.OperationView{}, err
	}
	rec, err := loadOp(tx, op, s, opID)
	if err != nil {
		return ledger.OperationView{}, err
	}
	k := KeyOf(s, opID)
	effs, err := tx.Effects(k)
	if err != nil {
		return ledger.OperationView{}, err
	}
	boots, err := tx.Bootstraps(k)
	if err != nil {
		return ledger.OperationView{}, err
	}
	v := ledger.OperationView{Operation: rec.Op, Attempts: slices.Clone(rec.Attempts), Bootstraps: boots, Effects: effs}
	if rec.Result != nil {
		r := cloneResult(*rec.Result)
		v.Result = &r
	}
	return v, nil
}

// GetArtifact implements ledger.Ledger.Artifact.
func GetArtifact(tx Tx, s ledger.Scope, ref string) (ledger.Artifact, error) {
	if err := ValidateArtifact(s, ref); err != nil {
		return ledger.Artifact{}, err
	}
	a, ok, err := tx.Artifact(ref)
	if err != nil {
		return ledger.Artifact{}, err
	}
	if !ok {
		return ledger.Artifact{}, ArtifactNotFound(ref)
	}
	if a.Scope != s {
		return ledger.Artifact{}, ArtifactOutOfScope(ref, s)
	}
	return a, nil
}
