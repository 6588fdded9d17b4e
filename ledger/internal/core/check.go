package core

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// Check verifies, in one read transaction, the invariants of everything
// the ledger holds (see [CheckTx]). It returns nil when they hold, else an
// error that wraps [ledger.ErrCorrupt] and names every broken invariant
// found (at most maxProblems of them).
func (l *Ledger) Check(ctx context.Context) error {
	return l.r.Read(ctx, "Check", CheckTx)
}

// maxProblems bounds the problems Check reports: a badly damaged store
// would otherwise make an error as large as itself.
const maxProblems = 20

// CheckTx verifies the ledger's invariants over every operation record:
//
//  1. the record is stored under its own scope and id, its state is one
//     of the three, and its budget and effects used are not negative;
//  2. its attempts carry generations 1..n, and the last is the current one;
//  3. its effects belong to it, are as many as effects used and no more
//     than the budget, carry ordinals 1..n, a valid state with a receipt
//     exactly when confirmed and a reason exactly when not consumed, an
//     authorization id and request digest, and were authorized by an
//     admitted attempt of their generation;
//  4. its bootstrap ids are indexed as its own, were issued to one of its
//     attempts, and every admitted attempt redeemed one of them;
//  5. it has a result exactly when it is completed, from an admitted
//     attempt, whose artifacts exist in its scope with the digest of
//     their bytes;
//  6. its evidence records name its attempts;
//  7. its current controller is its current attempt's, each effect's
//     controller is that of the attempt that authorized it, and every
//     controller an attempt names has a lease record, which is well
//     formed (see checkLeases);
//
// and the reconciliation index lists exactly the effects authorized or
// unknown. When the Tx is also a CatTx, the catalogue's records are
// checked too (see checkCatalogue). Records the backend cannot decode are reported by the backend
// as ledger.ErrCorrupt.
func CheckTx(tx Tx) error {
	var problems []error
	report := func(format string, args ...any) bool {
		problems = append(problems, fmt.Errorf(format, args...))
		return len(problems) < maxProblems
	}
	pendingWanted := map[EffectKey]bool{}
	owners := map[string]string{} // controller id → an operation whose attempt names it
	var scanErr error
	err := tx.ScanOps(nil, nil, func(rec OpRecord) bool {
		for _, a := range rec.Attempts {
			if a.ControllerID != "" {
				owners[a.ControllerID] = rec.Op.OperationID
			}
		}
		more, err := checkOp(tx, rec, report, pendingWanted)
		if err != nil {
			scanErr = err
			return false
		}
		return more
	})
	if err = errors.Join(err, scanErr); err != nil {
		return fmt.Errorf("ledger: Check: %w", err)
	}
	if len(problems) < maxProblems {
		keys, err := tx.Pending()
		if err != nil {
			return fmt.Errorf("ledger: Check: %w", err)
		}
		for _, k := range keys {
			if !pendingWanted[k] && !report("reconciliation index lists effect %q of operation %q, which is not authorized or unknown", k.Effect, k.Op) {
				break
			}
			delete(pendingWanted, k)
		}
		for k := range pendingWanted {
			if !report("effect %q of operation %q is authorized or unknown but not in the reconciliation index", k.Effect, k.Op) {
				break
			}
		}
	}
	if len(problems) < maxProblems {
		if err := checkLeases(tx, owners, report); err != nil {
			return fmt.Errorf("ledger: Check: %w", err)
		}
	}
	if ct, ok := tx.(CatTx); ok && len(problems) < maxProblems {
		if err := checkCatalogue(ct, report); err != nil {
			return fmt.Errorf("ledger: Check: %w", err)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("ledger: Check: %d broken invariants (first %d): %w: %w", len(problems), min(len(problems), maxProblems), ledger.ErrCorrupt, errors.Join(problems...))
}

// checkOp checks the invariants of one operation record (see CheckTx),
// adds the effects it expects in the reconciliation index to pending, and
// reports whether to go on. Its error is the Tx's own.
func checkOp(tx Tx, rec OpRecord, report func(string, ...any) bool, pending map[EffectKey]bool) (bool, error) {
	o := rec.Op
	k := KeyOf(o.Scope, o.OperationID)
	name := fmt.Sprintf("operation %q of %s/%s", o.OperationID, o.Scope.OrganizationID, o.Scope.ProjectID)
	ok := true
	bad := func(format string, args ...any) { ok = report(name+": "+format, args...) && ok }
	if err := firstErr(o.Scope.Validate(), check.ID("operation_id", o.OperationID)); err != nil {
		bad("%v", err)
	}
	switch o.State {
	case ledger.OperationOpen, ledger.OperationCompleted, ledger.OperationCancelled:
	default:
		bad("state %q", o.State)
	}
	if o.EffectBudget < 0 || o.EffectsUsed < 0 || o.EffectsUsed > o.EffectBudget {
		bad("effects used %d of budget %d", o.EffectsUsed, o.EffectBudget)
	}
	admitted := map[string]int64{} // attempt id → generation, admitted attempts only
	attempts := map[string]int64{}
	controllers := map[string]string{} // attempt id → its controller
	for i, a := range rec.Attempts {
		controllers[a.AttemptID] = a.ControllerID
		if a.Generation != int64(i+1) {
			bad("attempt %d has generation %d", i, a.Generation)
		}
		attempts[a.AttemptID] = a.Generation
		if a.Admitted {
			admitted[a.AttemptID] = a.Generation
		}
	}
	if n := len(rec.Attempts); n > 0 && (o.CurrentGeneration != int64(n) || o.CurrentAttemptID != rec.Attempts[n-1].AttemptID) ||
		n == 0 && (o.CurrentGeneration != 0 || o.CurrentAttemptID != "") {
		bad("current attempt (%q, %d) is not the last of %d", o.CurrentAttemptID, o.CurrentGeneration, n)
	}
	if n := len(rec.Attempts); n > 0 && o.CurrentControllerID != rec.Attempts[n-1].ControllerID || n == 0 && o.CurrentControllerID != "" {
		bad("current controller %q is not its current attempt's", o.CurrentControllerID)
	}

	effs, err := tx.Effects(k)
	if err != nil {
		return false, err
	}
	if int64(len(effs)) != o.EffectsUsed {
		bad("%d effects recorded, effects used %d", len(effs), o.EffectsUsed)
	}
	ords := make([]int64, 0, len(effs))
	for _, e := range effs {
		ords = append(ords, e.Ordinal)
		en := fmt.Sprintf("effect %q", e.LogicalEffectID)
		if KeyOf(e.Scope, e.OperationID) != k {
			bad("%s is stored under it but names operation %q of %v", en, e.OperationID, e.Scope)
		}
		if e.AuthorizationID == "" || e.RequestDigest.Validate() != nil {
			bad("%s has authorization id %q and request digest %q", en, e.AuthorizationID, e.RequestDigest)
		}
		switch e.State {
		case ledger.EffectAuthorized, ledger.EffectUnknown:
			pending[EffectKey{OpKey: k, Effect: e.LogicalEffectID}] = true
		case ledger.EffectConfirmed, ledger.EffectNotConsumed:
		default:
			bad("%s in state %q", en, e.State)
		}
		if (e.State == ledger.EffectConfirmed) != (e.ReceiptID != "") || (e.State == ledger.EffectNotConsumed) != (e.Reason != "") {
			bad("%s in state %s with receipt %q and reason %q", en, e.State, e.ReceiptID, e.Reason)
		}
		if g, ok := admitted[e.AttemptID]; !ok || g != e.Generation {
			bad("%s authorized by attempt (%q, %d), which is not an admitted attempt", en, e.AttemptID, e.Generation)
		} else if c := controllers[e.AttemptID]; e.ControllerID != c {
			bad("%s names controller %q, its attempt %q controller %q", en, e.ControllerID, e.AttemptID, c)
		}
	}
	slices.Sort(ords)
	for i, n := range ords {
		if n != int64(i+1) {
			bad("effect ordinals %v, want 1..%d", ords, len(ords))
			break
		}
	}

	boots, err := tx.Bootstraps(k)
	if err != nil {
		return false, err
	}
	redeemed := map[string]bool{}
	for _, b := range boots {
		owner, found, err := tx.BootstrapOwner(b.BootstrapID)
		if err != nil {
			return false, err
		}
		if !found || owner != k {
			bad("bootstrap id %q is indexed under %v (found %v)", b.BootstrapID, owner, found)
		}
		if g, ok := attempts[b.AttemptID]; !ok || g != b.Generation {
			bad("bootstrap id %q issued to attempt (%q, %d), which it does not have", b.BootstrapID, b.AttemptID, b.Generation)
		}
		if b.Redeemed {
			redeemed[b.AttemptID] = true
		}
	}
	for id := range admitted {
		if !redeemed[id] {
			bad("attempt %q admitted without a redeemed bootstrap id", id)
		}
	}

	if (rec.Result != nil) != (o.State == ledger.OperationCompleted) {
		bad("state %s with result %v", o.State, rec.Result != nil)
	}
	if r := rec.Result; r != nil {
		if g, ok := admitted[r.AttemptID]; !ok || g != r.Generation {
			bad("result of attempt (%q, %d), which is not an admitted attempt", r.AttemptID, r.Generation)
		}
		if len(r.ArtifactRefs) == 0 {
			bad("result without artifact refs")
		}
		for _, ref := range r.ArtifactRefs {
			a, found, err := tx.Artifact(ref)
			if err != nil {
				return false, err
			}
			switch {
			case !found:
				bad("result names missing artifact %q", ref)
			case a.Scope != o.Scope || a.OperationID != o.OperationID:
				bad("artifact %q belongs to operation %q of %v", ref, a.OperationID, a.Scope)
			case canon.Sum(a.Bytes) != a.Digest:
				bad("artifact %q: bytes do not have digest %s", ref, a.Digest)
			}
		}
	}

	evs, err := tx.Evidences(k)
	if err != nil {
		return false, err
	}
	for _, ev := range evs {
		if g, ok := attempts[ev.AttemptID]; !ok || g != ev.Generation {
			bad("evidence of attempt (%q, %d), which it does not have", ev.AttemptID, ev.Generation)
		}
	}
	return ok, nil
}
