package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// The state-machine test drives a ledger and a sequential model of the
// ledger's specification (written here independently of any backend) with
// the same random calls over a small universe of ids, so that collisions
// (redelivery, changed input, stale fences, double redemption) are common.
// After every call the outcome class must match the model's, and after
// every step every operation's full view must equal the model's.

var (
	mScopes    = []ledger.Scope{scopeA, scopeB}
	mOps       = []string{"op1", "op2", "op3"}
	mAttempts  = []string{"a1", "a2", "a3"}
	mEffects   = []string{"e1", "e2", "e3"}
	mDigests   = []canon.Digest{Digest("d1"), Digest("d2")}
	mBoots     = []string{"b1", "b2"}
	mReceipts  = []string{"r1", "r2"}
	mReasons   = []ledger.NotConsumedReason{ledger.ReasonRefused, ledger.ReasonCancelled, ledger.ReasonWaitingApproval}
	mArtifacts = [][]byte{[]byte("art-1"), []byte("art-2")}
	// mControllers may own attempts; "c3" is often never registered. The
	// model's leases never expire by time (mTTLs are far longer than a
	// run): ReleaseLease stands in for expiry, which the ledger treats
	// alike.
	mControllers = []string{"c1", "c2", "c3"}
	mTTLs        = []time.Duration{longTTL, 2 * longTTL}
	mErrs        = []error{ledger.ErrStaleFence, ledger.ErrBootstrapRedeemed, ledger.ErrChangedInput, ledger.ErrBudgetExhausted,
		ledger.ErrResultAlreadyAccepted, ledger.ErrOutOfScope, ledger.ErrNotFound, ledger.ErrOperationCancelled,
		ledger.ErrInvalidTransition, ledger.ErrOutOfOrder, ledger.ErrDeadlineExceeded, ledger.ErrInvalid, ledger.ErrClosed,
		ledger.ErrLeaseExpired, ledger.ErrLeaseHeld, ledger.ErrOwnerLive, ledger.ErrInFlight}
)

// mLease is the model of a controller's lease: what Leases reports but
// the times.
type mLease struct {
	ttl      time.Duration
	renewals int64
	released bool
}

type mKey struct {
	s  ledger.Scope
	op string
}

type mOperation struct {
	op       ledger.Operation
	attempts []ledger.Attempt
	boots    map[string]ledger.Bootstrap
	effects  map[string]*ledger.Effect // AuthorizationID learned from the first answer
	result   *ledger.Result            // ArtifactRefs learned from the first answer
	artSum   canon.Digest
	evidence map[string]ledger.AttemptEvidence // by attempt id
}

type model struct {
	ops       map[mKey]*mOperation
	fences    map[mKey][]ledger.Fence // every fence ever issued
	bootOwner map[string]mKey         // bootstrap ids are unique in the ledger
	leases    map[string]*mLease      // by controller id
}

// live reports whether controller c holds a live lease; "" never does.
func (m *model) live(c string) bool {
	ls := m.leases[c]
	return c != "" && ls != nil && !ls.released
}

func (m *model) current(k mKey) (string, int64) {
	o := m.ops[k]
	if o == nil || len(o.attempts) == 0 {
		return "", 0
	}
	a := o.attempts[len(o.attempts)-1]
	return a.AttemptID, a.Generation
}

// fence checks a fence the way the specification orders it: missing
// operation, then staleness.
func (m *model) fence(f ledger.Fence) (*mOperation, error) {
	k := mKey{f.Scope, f.OperationID}
	o := m.ops[k]
	if o == nil {
		return nil, ledger.ErrNotFound
	}
	if id, g := m.current(k); id != f.AttemptID || g != f.Generation {
		return nil, ledger.ErrStaleFence
	}
	return o, nil
}

func (o *mOperation) open() error {
	switch o.op.State {
	case ledger.OperationCancelled:
		return ledger.ErrOperationCancelled
	case ledger.OperationCompleted:
		return ledger.ErrResultAlreadyAccepted
	}
	return nil
}

// admitted reports whether the current attempt (the fenced one) was admitted.
func (o *mOperation) admitted() error {
	if !o.attempts[len(o.attempts)-1].Admitted {
		return ledger.ErrOutOfOrder
	}
	return nil
}

func class(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range mErrs {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// mRun is one state-machine run: the ledger under test, the model, and one
// method per ledger call that makes the call and checks its outcome
// against the model. Actions compose these calls.
type mRun struct {
	l   ledger.Ledger
	m   *model
	ctx context.Context
}

func (r *mRun) same(rt *rapid.T, what string, got, want error) {
	if class(got) != want {
		rt.Fatalf("%s: err = %v, model says %v", what, got, want)
	}
}

func (r *mRun) keys() []mKey {
	var keys []mKey
	for _, s := range mScopes {
		for _, op := range mOps {
			if r.m.ops[mKey{s, op}] != nil {
				keys = append(keys, mKey{s, op})
			}
		}
	}
	return keys
}

// pickKey mostly picks an operation that exists, so that sequences get
// deep enough to collide.
func (r *mRun) pickKey(rt *rapid.T) mKey {
	if keys := r.keys(); len(keys) > 0 && rapid.IntRange(0, 9).Draw(rt, "existing") > 0 {
		return rapid.SampledFrom(keys).Draw(rt, "key")
	}
	return mKey{rapid.SampledFrom(mScopes).Draw(rt, "scope"), rapid.SampledFrom(mOps).Draw(rt, "op")}
}

// pickFence mostly picks the current fence; otherwise an older or a
// forged one.
func (r *mRun) pickFence(rt *rapid.T, k mKey) ledger.Fence {
	if fs := r.m.fences[k]; len(fs) > 0 && rapid.IntRange(0, 9).Draw(rt, "current") > 2 {
		return fs[len(fs)-1]
	}
	choices := append(slices.Clone(r.m.fences[k]),
		ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: "forged", Generation: 1},
		ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: "a1", Generation: 9})
	return rapid.SampledFrom(choices).Draw(rt, "fence")
}

// currentFence is the key's current fence, or a forged one before the
// first attempt.
func (r *mRun) currentFence(k mKey) ledger.Fence {
	if fs := r.m.fences[k]; len(fs) > 0 {
		return fs[len(fs)-1]
	}
	return ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: "forged", Generation: 1}
}

func (r *mRun) newOperation(k mKey, sp ledger.OperationSpec) {
	r.m.ops[k] = &mOperation{
		op: ledger.Operation{Scope: k.s, OperationID: k.op, CapabilityID: sp.CapabilityID,
			RequestDigest: sp.RequestDigest, ManifestDigest: sp.ManifestDigest, EffectBudget: sp.EffectBudget,
			Deadline: sp.Deadline.UTC(), State: ledger.OperationOpen},
		boots: map[string]ledger.Bootstrap{}, effects: map[string]*ledger.Effect{},
		evidence: map[string]ledger.AttemptEvidence{},
	}
}

func (r *mRun) create(rt *rapid.T, k mKey, sp ledger.OperationSpec) {
	_, err := r.l.CreateOperation(r.ctx, sp)
	var want error
	if o := r.m.ops[k]; o != nil {
		if o.op.EffectBudget != sp.EffectBudget || !o.op.Deadline.Equal(sp.Deadline) {
			want = ledger.ErrChangedInput
		}
	} else {
		r.newOperation(k, sp)
	}
	r.same(rt, "CreateOperation", err, want)
}

func (r *mRun) start(rt *rapid.T, k mKey, id string) {
	f, err := r.l.StartAttempt(r.ctx, k.s, k.op, id)
	want := func() error {
		o := r.m.ops[k]
		if o == nil {
			return ledger.ErrNotFound
		}
		if err := o.open(); err != nil {
			return err
		}
		for i, a := range o.attempts {
			if a.AttemptID == id {
				if i == len(o.attempts)-1 {
					return nil
				}
				return ledger.ErrStaleFence
			}
		}
		o.attempts = append(o.attempts, ledger.Attempt{AttemptID: id, Generation: int64(len(o.attempts) + 1)})
		o.op.CurrentAttemptID, o.op.CurrentGeneration, o.op.CurrentControllerID = id, int64(len(o.attempts)), ""
		return nil
	}()
	r.same(rt, "StartAttempt", err, want)
	if err == nil {
		cur, gen := r.m.current(k)
		if f != (ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: cur, Generation: gen}) {
			rt.Fatalf("StartAttempt = %+v, model current (%s, %d)", f, cur, gen)
		}
		if !slices.Contains(r.m.fences[k], f) {
			r.m.fences[k] = append(r.m.fences[k], f)
		}
	}
}

// launch is LaunchAttempt: create (when missing), start at gen, issue.
func (r *mRun) launch(rt *rapid.T, k mKey, a ledger.AttemptLaunch) {
	f, err := r.l.LaunchAttempt(r.ctx, a)
	want := func() error {
		if a.ControllerID != "" && !r.m.live(a.ControllerID) {
			return ledger.ErrLeaseExpired
		}
		o := r.m.ops[k]
		started := false
		if o != nil {
			if o.op.EffectBudget != a.Operation.EffectBudget || !o.op.Deadline.Equal(a.Operation.Deadline) {
				return ledger.ErrChangedInput
			}
			if err := o.open(); err != nil {
				return err
			}
			for i, at := range o.attempts {
				if at.AttemptID == a.AttemptID {
					if at.Generation != a.Generation || i != len(o.attempts)-1 {
						return ledger.ErrStaleFence
					}
					if at.ControllerID != a.ControllerID {
						return ledger.ErrChangedInput
					}
					started = true
				}
			}
		}
		if _, gen := r.m.current(k); !started && gen+1 != a.Generation {
			return ledger.ErrStaleFence
		}
		if owner, ok := r.m.bootOwner[a.BootstrapID]; ok && owner != k {
			return ledger.ErrChangedInput
		}
		var issued bool
		if o != nil {
			var b ledger.Bootstrap
			if b, issued = o.boots[a.BootstrapID]; issued && (b.AttemptID != a.AttemptID || b.Generation != a.Generation || b.LaunchDigest != a.LaunchDigest) {
				return ledger.ErrChangedInput
			}
		}
		if o == nil {
			r.newOperation(k, a.Operation)
			o = r.m.ops[k]
		}
		if !started {
			o.attempts = append(o.attempts, ledger.Attempt{AttemptID: a.AttemptID, Generation: a.Generation, ControllerID: a.ControllerID})
			o.op.CurrentAttemptID, o.op.CurrentGeneration, o.op.CurrentControllerID = a.AttemptID, a.Generation, a.ControllerID
		}
		if !issued {
			o.boots[a.BootstrapID] = ledger.Bootstrap{BootstrapID: a.BootstrapID, AttemptID: a.AttemptID, Generation: a.Generation, LaunchDigest: a.LaunchDigest}
			r.m.bootOwner[a.BootstrapID] = k
		}
		return nil
	}()
	r.same(rt, fmt.Sprintf("LaunchAttempt(%v, %q, %d, %q, %q)", k, a.AttemptID, a.Generation, a.BootstrapID, a.ControllerID), err, want)
	if err == nil {
		if f != a.Fence() {
			rt.Fatalf("LaunchAttempt = %+v, want %+v", f, a.Fence())
		}
		if !slices.Contains(r.m.fences[k], f) {
			r.m.fences[k] = append(r.m.fences[k], f)
		}
	}
}

// issue issues bootstrap id to the attempt f names with ld, as a
// controller that started it with StartAttempt does: LaunchAttempt with
// the recorded spec and the attempt's controller. An operation the model
// does not hold has no spec to launch with, so nothing is asked.
func (r *mRun) issue(rt *rapid.T, f ledger.Fence, id string, ld canon.Digest) {
	k := mKey{f.Scope, f.OperationID}
	o := r.m.ops[k]
	if o == nil {
		return
	}
	a := ledger.AttemptLaunch{Operation: o.op.Spec(), AttemptID: f.AttemptID, Generation: f.Generation, BootstrapID: id, LaunchDigest: ld}
	for _, at := range o.attempts {
		if at.AttemptID == f.AttemptID {
			a.ControllerID = at.ControllerID
		}
	}
	r.launch(rt, k, a)
}

func (r *mRun) redeem(rt *rapid.T, f ledger.Fence, red ledger.Redemption) {
	_, err := r.l.RedeemBootstrap(r.ctx, f, red)
	want := func() error {
		o, err := r.m.fence(f)
		if err != nil {
			return err
		}
		if err := o.open(); err != nil {
			return err
		}
		b, ok := o.boots[red.BootstrapID]
		switch {
		case !ok:
			return ledger.ErrNotFound
		case b.AttemptID != f.AttemptID:
			return ledger.ErrStaleFence
		case b.Redeemed && b.RedeemedPID == red.PID && b.RedeemedSessionID == red.SessionID && b.LaunchDigest == red.LaunchDigest:
			return nil // the same claimant's retry
		case b.Redeemed:
			return ledger.ErrBootstrapRedeemed
		case b.LaunchDigest != red.LaunchDigest:
			return ledger.ErrChangedInput
		}
		b.Redeemed, b.RedeemedPID, b.RedeemedSessionID = true, red.PID, red.SessionID
		o.boots[red.BootstrapID] = b
		return nil
	}()
	r.same(rt, "RedeemBootstrap", err, want)
}

func (r *mRun) admit(rt *rapid.T, f ledger.Fence, d canon.Digest) {
	_, err := r.l.Admit(r.ctx, f, d)
	want := func() error {
		o, err := r.m.fence(f)
		if err != nil {
			return err
		}
		if err := o.open(); err != nil {
			return err
		}
		cur := &o.attempts[len(o.attempts)-1]
		if !cur.Admitted && !slices.ContainsFunc(slices.Collect(maps.Values(o.boots)), func(b ledger.Bootstrap) bool {
			return b.AttemptID == f.AttemptID && b.Redeemed
		}) {
			return ledger.ErrOutOfOrder
		}
		if d != o.op.RequestDigest {
			return ledger.ErrChangedInput
		}
		cur.Admitted = true
		return nil
	}()
	r.same(rt, "Admit", err, want)
}

func (r *mRun) begin(rt *rapid.T, f ledger.Fence, id string, d canon.Digest) {
	k := mKey{f.Scope, f.OperationID}
	g, err := r.l.BeginEffect(r.ctx, f, id, d)
	var wantEff *ledger.Effect
	redelivery := false
	want := func() error {
		o, err := r.m.fence(f)
		if err != nil {
			return err
		}
		if err := o.admitted(); err != nil {
			return err
		}
		if e, ok := o.effects[id]; ok {
			if e.RequestDigest != d {
				return ledger.ErrChangedInput
			}
			wantEff, redelivery = e, true
			return nil
		}
		ctl := o.attempts[len(o.attempts)-1].ControllerID
		if ctl != "" && !r.m.live(ctl) {
			return ledger.ErrLeaseExpired
		}
		if err := o.open(); err != nil {
			return err
		}
		if o.op.EffectsUsed >= o.op.EffectBudget {
			return ledger.ErrBudgetExhausted
		}
		o.op.EffectsUsed++
		wantEff = &ledger.Effect{Scope: k.s, OperationID: k.op, LogicalEffectID: id, RequestDigest: d,
			State: ledger.EffectAuthorized, AttemptID: f.AttemptID, Generation: f.Generation, Ordinal: o.op.EffectsUsed,
			ControllerID: ctl}
		o.effects[id] = wantEff
		return nil
	}()
	r.same(rt, "BeginEffect", err, want)
	if err != nil {
		return
	}
	if wantEff.AuthorizationID == "" {
		wantEff.AuthorizationID = g.Effect.AuthorizationID
	}
	if g.Redelivery != redelivery || g.Effect != *wantEff {
		rt.Fatalf("BeginEffect = %+v (redelivery %v), model %+v (redelivery %v)", g.Effect, g.Redelivery, *wantEff, redelivery)
	}
}

// settle records an outcome: kind 0 confirm, 1 not consumed, 2 unknown
// (fenced by f), 3 Resolve (no fence).
func (r *mRun) settle(rt *rapid.T, k mKey, f ledger.Fence, id string, d canon.Digest, kind int) {
	to, receipt, reason := ledger.EffectUnknown, "", ledger.NotConsumedReason("")
	from := []ledger.EffectState{ledger.EffectAuthorized}
	var (
		got ledger.Effect
		err error
	)
	switch kind {
	case 0:
		to, receipt = ledger.EffectConfirmed, rapid.SampledFrom(mReceipts).Draw(rt, "receipt")
		got, err = r.l.ConfirmEffect(r.ctx, f, id, d, receipt)
	case 1:
		to, reason = ledger.EffectNotConsumed, rapid.SampledFrom(mReasons).Draw(rt, "reason")
		got, err = r.l.MarkNotConsumed(r.ctx, f, id, d, reason)
	case 2:
		got, err = r.l.MarkUnknown(r.ctx, f, id, d)
	default:
		res := ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: rapid.SampledFrom(mReceipts).Draw(rt, "receipt")}
		if rapid.Bool().Draw(rt, "notConsumed") {
			res = ledger.Resolution{State: ledger.EffectNotConsumed, Reason: rapid.SampledFrom(mReasons).Draw(rt, "reason")}
		}
		to, receipt, reason = res.State, res.ReceiptID, res.Reason
		from = append(from, ledger.EffectUnknown)
		got, err = r.l.Resolve(r.ctx, k.s, k.op, id, d, res)
	}
	var e *ledger.Effect
	want := func() error {
		var o *mOperation
		if kind == 3 {
			if o = r.m.ops[k]; o == nil {
				return ledger.ErrNotFound
			}
		} else {
			var err error
			if o, err = r.m.fence(f); err != nil {
				return err
			}
		}
		var ok bool
		e, ok = o.effects[id]
		switch {
		case !ok:
			return ledger.ErrNotFound
		case e.RequestDigest != d:
			return ledger.ErrChangedInput
		case kind == 3 && e.State == ledger.EffectAuthorized && r.m.live(e.ControllerID):
			return ledger.ErrInFlight
		case e.State == to && e.ReceiptID == receipt && e.Reason == reason:
			return nil
		case !slices.Contains(from, e.State):
			return ledger.ErrInvalidTransition
		}
		e.State, e.ReceiptID, e.Reason = to, receipt, reason
		return nil
	}()
	r.same(rt, fmt.Sprintf("settle kind %d of %s (%s)", kind, id, d), err, want)
	if err == nil && got != *e {
		rt.Fatalf("settle kind %d = %+v, model %+v", kind, got, *e)
	}
}

func (r *mRun) accept(rt *rapid.T, f ledger.Fence, dd canon.Digest, art []byte) {
	k := mKey{f.Scope, f.OperationID}
	res, err := r.l.AcceptResult(r.ctx, f, dd, art)
	want := func() error {
		o, err := r.m.fence(f)
		if err != nil {
			return err
		}
		if err := o.admitted(); err != nil {
			return err
		}
		if o.result != nil {
			if o.result.DataDigest != dd {
				return ledger.ErrResultAlreadyAccepted
			}
			if o.artSum != canon.Sum(art) {
				return ledger.ErrChangedInput
			}
			return nil
		}
		if err := o.open(); err != nil {
			return err
		}
		o.result = &ledger.Result{DataDigest: dd, AttemptID: f.AttemptID, Generation: f.Generation}
		o.artSum = canon.Sum(art)
		o.op.State = ledger.OperationCompleted
		return nil
	}()
	r.same(rt, "AcceptResult", err, want)
	if err != nil {
		return
	}
	o := r.m.ops[k]
	if o.result.ArtifactRefs == nil {
		o.result.ArtifactRefs = res.ArtifactRefs
	}
	if d := cmpDiff(*o.result, res); d != "" {
		rt.Fatalf("AcceptResult mismatch (-model +got):\n%s", d)
	}
}

func (r *mRun) cancel(rt *rapid.T, k mKey) {
	_, err := r.l.Cancel(r.ctx, k.s, k.op, "why")
	want := func() error {
		o := r.m.ops[k]
		if o == nil {
			return ledger.ErrNotFound
		}
		switch o.op.State {
		case ledger.OperationCompleted:
			return ledger.ErrResultAlreadyAccepted
		case ledger.OperationOpen:
			o.op.State, o.op.CancelReason = ledger.OperationCancelled, "why"
		}
		return nil
	}()
	r.same(rt, "Cancel", err, want)
}

// record records evidence for the attempt f names (current or not).
func (r *mRun) record(rt *rapid.T, f ledger.Fence, ev ledger.AttemptEvidence) {
	got, err := r.l.RecordAttempt(r.ctx, f, ev)
	want := func() error {
		o := r.m.ops[mKey{f.Scope, f.OperationID}]
		if o == nil || !slices.ContainsFunc(o.attempts, func(a ledger.Attempt) bool { return a.AttemptID == f.AttemptID && a.Generation == f.Generation }) {
			return ledger.ErrNotFound
		}
		w := wantEvidence(f, ev)
		if old, ok := o.evidence[f.AttemptID]; ok {
			if cmpDiff(old, w) != "" {
				return ledger.ErrChangedInput
			}
			return nil
		}
		o.evidence[f.AttemptID] = w
		return nil
	}()
	r.same(rt, "RecordAttempt", err, want)
	if err == nil {
		if d := cmpDiff(r.m.ops[mKey{f.Scope, f.OperationID}].evidence[f.AttemptID], got); d != "" {
			rt.Fatalf("RecordAttempt mismatch (-model +got):\n%s", d)
		}
	}
}

// prepare runs the protocol's opening for the key's current attempt:
// issue a bootstrap id named after the attempt, redeem it, admit.
func (r *mRun) prepare(rt *rapid.T, k mKey) {
	f := r.currentFence(k)
	id := fmt.Sprintf("boot-%s-%s-%s", k.s.OrganizationID, k.op, f.AttemptID)
	r.issue(rt, f, id, mDigests[0])
	r.redeem(rt, f, ledger.Redemption{BootstrapID: id, LaunchDigest: mDigests[0], PID: 1, SessionID: "sess"})
	r.admit(rt, f, Digest("request:"+k.op))
}

// pickEffect mostly names an effect the model holds, with its digest, so
// that transitions of recorded effects are common; otherwise any id and
// digest.
func (r *mRun) pickEffect(rt *rapid.T, k mKey) (string, canon.Digest) {
	if o := r.m.ops[k]; o != nil && len(o.effects) > 0 && rapid.IntRange(0, 9).Draw(rt, "recorded") > 2 {
		id := rapid.SampledFrom(slices.Sorted(maps.Keys(o.effects))).Draw(rt, "effect")
		return id, o.effects[id].RequestDigest
	}
	return rapid.SampledFrom(mEffects).Draw(rt, "effect"), rapid.SampledFrom(mDigests).Draw(rt, "digest")
}

func testModel(t *testing.T, open func(t *testing.T) ledger.Ledger) {
	rapid.Check(t, func(rt *rapid.T) {
		l := open(t)
		defer func() {
			if err := l.Close(context.Background()); err != nil {
				rt.Fatalf("Close: %v", err)
			}
		}()
		r := &mRun{l: l, ctx: context.Background(),
			m: &model{ops: map[mKey]*mOperation{}, fences: map[mKey][]ledger.Fence{}, bootOwner: map[string]mKey{}, leases: map[string]*mLease{}}}
		// op1 and op2 exist in every scope with attempt a1 from the first
		// step, some already admitted, so that short histories collide on
		// effects and bootstrap ids; op3 starts missing.
		// Controller c1 is live from the start, and some of those first
		// attempts are its own, so that effects in flight, refused
		// resolutions and takeovers are common too.
		r.acquire(rt, "c1", mTTLs[0])
		for _, sc := range mScopes {
			for _, op := range mOps[:2] {
				k := mKey{sc, op}
				sp := spec(sc, op, rapid.Int64Range(0, 3).Draw(rt, "budget"))
				r.create(rt, k, sp)
				if rapid.Bool().Draw(rt, "ownedByC1") {
					r.launch(rt, k, ledger.AttemptLaunch{Operation: sp, AttemptID: "a1", Generation: 1,
						BootstrapID: fmt.Sprintf("launch-%s-%s-a1", sc.OrganizationID, op), LaunchDigest: mDigests[0], ControllerID: "c1"})
				} else {
					r.start(rt, k, "a1")
				}
				if rapid.Bool().Draw(rt, "prepared") {
					r.prepare(rt, k)
				}
			}
		}
		actions := map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				k := r.pickKey(rt)
				sp := spec(k.s, k.op, rapid.Int64Range(0, 3).Draw(rt, "budget"))
				sp.Deadline = sp.Deadline.AddDate(0, 0, rapid.IntRange(0, 1).Draw(rt, "deadline"))
				r.create(rt, k, sp)
			},
			"start": func(rt *rapid.T) {
				r.start(rt, r.pickKey(rt), rapid.SampledFrom(mAttempts).Draw(rt, "attempt"))
			},
			"prepare": func(rt *rapid.T) { r.prepare(rt, r.pickKey(rt)) },
			// launch mostly asks for the next generation, as a caller that
			// read the operation does; otherwise any.
			"launch": func(rt *rapid.T) {
				k := r.pickKey(rt)
				sp := spec(k.s, k.op, rapid.Int64Range(0, 3).Draw(rt, "budget"))
				sp.Deadline = sp.Deadline.AddDate(0, 0, rapid.IntRange(0, 1).Draw(rt, "deadline"))
				if o := r.m.ops[k]; o != nil && rapid.IntRange(0, 9).Draw(rt, "sameSpec") > 1 {
					sp.EffectBudget, sp.Deadline = o.op.EffectBudget, o.op.Deadline
				}
				_, gen := r.m.current(k)
				gen++
				if rapid.IntRange(0, 9).Draw(rt, "nextGeneration") < 3 {
					gen = rapid.Int64Range(1, 4).Draw(rt, "generation")
				}
				attempt := rapid.SampledFrom(mAttempts).Draw(rt, "attempt")
				// Half the launches name a bootstrap id of their own, the
				// others one of the ids every call shares.
				boot := fmt.Sprintf("launch-%s-%s-%s", k.s.OrganizationID, k.op, attempt)
				if rapid.Bool().Draw(rt, "sharedBoot") {
					boot = rapid.SampledFrom(mBoots).Draw(rt, "boot")
				}
				r.launch(rt, k, ledger.AttemptLaunch{Operation: sp, AttemptID: attempt, Generation: gen,
					BootstrapID: boot, LaunchDigest: rapid.SampledFrom(mDigests).Draw(rt, "launch"),
					ControllerID: r.pickController(rt)})
			},
			"issue": func(rt *rapid.T) {
				k := r.pickKey(rt)
				r.issue(rt, r.pickFence(rt, k), rapid.SampledFrom(mBoots).Draw(rt, "boot"), rapid.SampledFrom(mDigests).Draw(rt, "launch"))
			},
			// reissue offers an id already issued, with its launch digest,
			// to the current attempt of any operation: only the attempt or
			// the operation differs, and reuse must be refused.
			"reissue": func(rt *rapid.T) {
				if len(r.m.bootOwner) == 0 {
					rt.Skip("no bootstrap id issued yet")
				}
				id := rapid.SampledFrom(slices.Sorted(maps.Keys(r.m.bootOwner))).Draw(rt, "issued")
				owner := r.m.bootOwner[id]
				k := r.pickKey(rt)
				r.issue(rt, r.currentFence(k), id, r.m.ops[owner].boots[id].LaunchDigest)
			},
			"redeem": func(rt *rapid.T) {
				k := r.pickKey(rt)
				r.redeem(rt, r.pickFence(rt, k), ledger.Redemption{BootstrapID: rapid.SampledFrom(mBoots).Draw(rt, "boot"),
					LaunchDigest: mDigests[rapid.IntRange(0, 9).Draw(rt, "launch")/9],
					PID:          rapid.IntRange(1, 3).Draw(rt, "pid"), SessionID: "sess"})
			},
			"admit": func(rt *rapid.T) {
				k := r.pickKey(rt)
				r.admit(rt, r.pickFence(rt, k), rapid.SampledFrom([]canon.Digest{Digest("request:" + k.op), Digest("other")}).Draw(rt, "request"))
			},
			"begin": func(rt *rapid.T) {
				k := r.pickKey(rt)
				id, d := r.pickEffect(rt, k)
				r.begin(rt, r.pickFence(rt, k), id, d)
			},
			"settle": func(rt *rapid.T) {
				k := r.pickKey(rt)
				id, d := r.pickEffect(rt, k)
				r.settle(rt, k, r.pickFence(rt, k), id, d, rapid.IntRange(0, 3).Draw(rt, "kind"))
			},
			// settle2 moves one effect twice in a row through the current
			// fence (e.g. unknown, then confirm), so that every pair of
			// transitions is tried in a single round.
			"settle2": func(rt *rapid.T) {
				k := r.pickKey(rt)
				id, d := r.pickEffect(rt, k)
				f := r.currentFence(k)
				// Half the time the first move is MarkUnknown: unknown must
				// leave only through Resolve.
				kind1 := rapid.IntRange(0, 7).Draw(rt, "kind1")
				if kind1 > 3 {
					kind1 = 2
				}
				r.settle(rt, k, f, id, d, kind1)
				r.settle(rt, k, f, id, d, rapid.IntRange(0, 3).Draw(rt, "kind2"))
			},
			"accept": func(rt *rapid.T) {
				k := r.pickKey(rt)
				r.accept(rt, r.pickFence(rt, k), rapid.SampledFrom(mDigests).Draw(rt, "data"), rapid.SampledFrom(mArtifacts).Draw(rt, "artifact"))
			},
			"cancel": func(rt *rapid.T) { r.cancel(rt, r.pickKey(rt)) },
			"record": func(rt *rapid.T) {
				k := r.pickKey(rt)
				r.record(rt, r.pickFence(rt, k), sampleEvidence(rapid.SampledFrom([]string{"failed", "succeeded"}).Draw(rt, "evidence")))
			},
			"acquire": func(rt *rapid.T) {
				r.acquire(rt, rapid.SampledFrom(mControllers).Draw(rt, "controller"), rapid.SampledFrom(mTTLs).Draw(rt, "ttl"))
			},
			"renew": func(rt *rapid.T) {
				r.renew(rt, rapid.SampledFrom(mControllers).Draw(rt, "controller"), rapid.SampledFrom(mTTLs).Draw(rt, "ttl"))
			},
			"release": func(rt *rapid.T) { r.release(rt, rapid.SampledFrom(mControllers).Draw(rt, "controller")) },
			// takeover mostly takes over from the current fence, with a
			// new attempt id; otherwise anything.
			"takeover": func(rt *rapid.T) {
				k := r.pickKey(rt)
				attempt := rapid.SampledFrom([]string{"t1", "t2", "t1", "t2", "a1", "a2"}).Draw(rt, "attempt")
				r.takeOver(rt, ledger.Takeover{From: r.pickFence(rt, k), AttemptID: attempt, ControllerID: rapid.SampledFrom(mControllers).Draw(rt, "taker")})
			},
			// dispatch is the race of issue 22: an effect begun through the
			// current fence, then resolved without one, or recorded by its
			// attempt.
			"dispatch": func(rt *rapid.T) {
				k := r.pickKey(rt)
				id, d := r.pickEffect(rt, k)
				f := r.currentFence(k)
				r.begin(rt, f, id, d)
				r.settle(rt, k, f, id, d, rapid.SampledFrom([]int{0, 3, 3}).Draw(rt, "kind"))
			},
			"": func(rt *rapid.T) { r.m.check(rt, l) },
		}
		// Weigh the calls that build state over the two that end an
		// operation (accept, cancel), so that histories reach redemptions,
		// settled effects and exhausted budgets before the operation ends.
		for _, name := range []string{"issue", "redeem", "begin", "settle", "settle2", "start", "admit", "prepare", "launch", "acquire", "dispatch"} {
			for i := range 2 {
				actions[fmt.Sprint(name, i)] = actions[name]
			}
		}
		rt.Repeat(actions)
	})
}

// check compares every operation view and the reconciliation list with
// the model.
func (m *model) check(rt *rapid.T, l ledger.Ledger) {
	ctx := context.Background()
	var wantUnknown, wantInFlight []ledger.Effect
	for _, s := range mScopes {
		for _, op := range mOps {
			k := mKey{s, op}
			v, err := l.Operation(ctx, s, op)
			o := m.ops[k]
			if o == nil {
				if !errors.Is(err, ledger.ErrNotFound) {
					rt.Fatalf("Operation(%v, %s) = %v, want ErrNotFound", s, op, err)
				}
				continue
			}
			if err != nil {
				rt.Fatalf("Operation(%v, %s): %v", s, op, err)
			}
			want := ledger.OperationView{Operation: o.op, Attempts: slices.Clone(o.attempts), Bootstraps: []ledger.Bootstrap{}, Effects: []ledger.Effect{}}
			if want.Attempts == nil {
				want.Attempts = []ledger.Attempt{}
			}
			for _, id := range slices.Sorted(maps.Keys(o.boots)) {
				want.Bootstraps = append(want.Bootstraps, o.boots[id])
			}
			for _, id := range slices.Sorted(maps.Keys(o.effects)) {
				e := *o.effects[id]
				want.Effects = append(want.Effects, e)
				switch {
				case e.State == ledger.EffectAuthorized && m.live(e.ControllerID):
					wantInFlight = append(wantInFlight, e)
				case e.State == ledger.EffectAuthorized || e.State == ledger.EffectUnknown:
					wantUnknown = append(wantUnknown, e)
				}
			}
			if o.result != nil {
				r := *o.result
				want.Result = &r
			}
			if d := cmpDiff(want, normView(v)); d != "" {
				rt.Fatalf("Operation(%v, %s) mismatch (-model +got):\n%s", s, op, d)
			}
		}
	}
	var wantOps, wantOrphaned []ledger.Operation
	for _, s := range mScopes {
		for _, op := range mOps {
			o := m.ops[mKey{s, op}]
			if o == nil {
				continue
			}
			wantOps = append(wantOps, o.op)
			if o.op.State == ledger.OperationOpen && o.op.CurrentAttemptID != "" && !m.live(o.op.CurrentControllerID) {
				wantOrphaned = append(wantOrphaned, o.op)
			}
			var wantEv []ledger.AttemptEvidence
			for _, a := range o.attempts {
				if e, ok := o.evidence[a.AttemptID]; ok {
					wantEv = append(wantEv, e)
				}
			}
			ev, err := l.Evidence(ctx, s, op)
			if err != nil {
				rt.Fatalf("Evidence(%v, %s): %v", s, op, err)
			}
			if len(ev) == 0 {
				ev = nil
			}
			if d := cmpDiff(wantEv, ev); d != "" {
				rt.Fatalf("Evidence(%v, %s) mismatch (-model +got):\n%s", s, op, d)
			}
		}
	}
	// mScopes and mOps are listed in ListOperations order.
	listed, err := l.ListOperations(ctx, ledger.OperationQuery{})
	if err != nil {
		rt.Fatalf("ListOperations: %v", err)
	}
	if len(listed) == 0 {
		listed = nil
	}
	if d := cmpDiff(wantOps, listed); d != "" {
		rt.Fatalf("ListOperations mismatch (-model +got):\n%s", d)
	}
	got, err := l.ListUnknown(ctx)
	if err != nil {
		rt.Fatalf("ListUnknown: %v", err)
	}
	if len(got) == 0 {
		got = nil
	}
	if d := cmpDiff(wantUnknown, got); d != "" {
		rt.Fatalf("ListUnknown mismatch (-model +got):\n%s", d)
	}
	got, err = l.ListInFlight(ctx)
	if err != nil {
		rt.Fatalf("ListInFlight: %v", err)
	}
	if len(got) == 0 {
		got = nil
	}
	if d := cmpDiff(wantInFlight, got); d != "" {
		rt.Fatalf("ListInFlight mismatch (-model +got):\n%s", d)
	}
	listed, err = l.ListOperations(ctx, ledger.OperationQuery{Orphaned: true})
	if err != nil {
		rt.Fatalf("ListOperations(Orphaned): %v", err)
	}
	if len(listed) == 0 {
		listed = nil
	}
	if d := cmpDiff(wantOrphaned, listed); d != "" {
		rt.Fatalf("ListOperations(Orphaned) mismatch (-model +got):\n%s", d)
	}
	all, err := l.Leases(ctx)
	if err != nil {
		rt.Fatalf("Leases: %v", err)
	}
	var wantLeases, gotLeases []ledger.Lease
	for _, c := range slices.Sorted(maps.Keys(m.leases)) {
		wantLeases = append(wantLeases, m.leases[c].lease(c))
	}
	for _, ls := range all {
		gotLeases = append(gotLeases, timeless(ls))
	}
	if d := cmpDiff(wantLeases, gotLeases); d != "" {
		rt.Fatalf("Leases mismatch (-model +got):\n%s", d)
	}
}

// lease is what Leases reports for the model's lease of c, times left out.
func (ls *mLease) lease(c string) ledger.Lease {
	return ledger.Lease{ControllerID: c, TTL: ls.ttl, Renewals: ls.renewals, Released: ls.released, Live: !ls.released}
}

// timeless is l without its times, which the model does not know.
func timeless(l ledger.Lease) ledger.Lease {
	l.Acquired, l.Expires = time.Time{}, time.Time{}
	return l
}

// pickController picks the owner of a launch: mostly a controller, which
// may or may not be registered and live; sometimes none.
func (r *mRun) pickController(rt *rapid.T) string {
	if rapid.IntRange(0, 9).Draw(rt, "owned") < 3 {
		return ""
	}
	return rapid.SampledFrom(mControllers).Draw(rt, "controller")
}

func (r *mRun) acquire(rt *rapid.T, c string, ttl time.Duration) {
	got, err := r.l.AcquireLease(r.ctx, c, ttl)
	want := func() error {
		ls := r.m.leases[c]
		switch {
		case ls == nil:
			r.m.leases[c] = &mLease{ttl: ttl}
		case ls.released:
			return ledger.ErrLeaseExpired
		case ls.ttl != ttl:
			return ledger.ErrLeaseHeld
		}
		return nil
	}()
	r.same(rt, fmt.Sprintf("AcquireLease(%q, %v)", c, ttl), err, want)
	if err == nil {
		if d := cmpDiff(r.m.leases[c].lease(c), timeless(got)); d != "" {
			rt.Fatalf("AcquireLease mismatch (-model +got):\n%s", d)
		}
	}
}

func (r *mRun) renew(rt *rapid.T, c string, ttl time.Duration) {
	got, err := r.l.RenewLease(r.ctx, c, ttl)
	want := func() error {
		ls := r.m.leases[c]
		switch {
		case ls == nil:
			return ledger.ErrNotFound
		case ls.released:
			return ledger.ErrLeaseExpired
		}
		ls.ttl, ls.renewals = ttl, ls.renewals+1
		return nil
	}()
	r.same(rt, fmt.Sprintf("RenewLease(%q, %v)", c, ttl), err, want)
	if err == nil {
		if d := cmpDiff(r.m.leases[c].lease(c), timeless(got)); d != "" {
			rt.Fatalf("RenewLease mismatch (-model +got):\n%s", d)
		}
	}
}

func (r *mRun) release(rt *rapid.T, c string) {
	got, err := r.l.ReleaseLease(r.ctx, c)
	want := func() error {
		ls := r.m.leases[c]
		if ls == nil {
			return ledger.ErrNotFound
		}
		ls.released = true
		return nil
	}()
	r.same(rt, fmt.Sprintf("ReleaseLease(%q)", c), err, want)
	if err == nil {
		if d := cmpDiff(r.m.leases[c].lease(c), timeless(got)); d != "" {
			rt.Fatalf("ReleaseLease mismatch (-model +got):\n%s", d)
		}
	}
}

// takeOver is TakeOver, in the order the ledger documents: arguments,
// operation, operation over, the repeat of a takeover that succeeded
// (then only the taker's lease), From stale, an attempt id already used,
// From's controller live, the taker's lease not live.
func (r *mRun) takeOver(rt *rapid.T, t ledger.Takeover) {
	k := mKey{t.From.Scope, t.From.OperationID}
	f, err := r.l.TakeOver(r.ctx, t)
	next := ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: t.AttemptID, Generation: t.From.Generation + 1}
	want := func() error {
		if t.AttemptID == t.From.AttemptID {
			return ledger.ErrInvalid
		}
		o := r.m.ops[k]
		if o == nil {
			return ledger.ErrNotFound
		}
		if err := o.open(); err != nil {
			return err
		}
		if n := len(o.attempts); n >= 2 {
			cur, prev := o.attempts[n-1], o.attempts[n-2]
			if cur.AttemptID == t.AttemptID && cur.Generation == next.Generation && cur.ControllerID == t.ControllerID &&
				prev.AttemptID == t.From.AttemptID && prev.Generation == t.From.Generation {
				if !r.m.live(t.ControllerID) {
					return ledger.ErrLeaseExpired
				}
				return nil
			}
		}
		if id, g := r.m.current(k); id != t.From.AttemptID || g != t.From.Generation {
			return ledger.ErrStaleFence
		}
		if slices.ContainsFunc(o.attempts, func(a ledger.Attempt) bool { return a.AttemptID == t.AttemptID }) {
			return ledger.ErrStaleFence
		}
		if r.m.live(o.attempts[len(o.attempts)-1].ControllerID) {
			return ledger.ErrOwnerLive
		}
		if !r.m.live(t.ControllerID) {
			return ledger.ErrLeaseExpired
		}
		o.attempts = append(o.attempts, ledger.Attempt{AttemptID: t.AttemptID, Generation: next.Generation, ControllerID: t.ControllerID})
		o.op.CurrentAttemptID, o.op.CurrentGeneration, o.op.CurrentControllerID = t.AttemptID, next.Generation, t.ControllerID
		return nil
	}()
	r.same(rt, fmt.Sprintf("TakeOver(%+v)", t), err, want)
	if err == nil {
		if f != next {
			rt.Fatalf("TakeOver = %+v, want %+v", f, next)
		}
		if !slices.Contains(r.m.fences[k], f) {
			r.m.fences[k] = append(r.m.fences[k], f)
		}
	}
}

// normView makes nil and empty slices compare equal.
func normView(v ledger.OperationView) ledger.OperationView {
	if v.Attempts == nil {
		v.Attempts = []ledger.Attempt{}
	}
	if v.Bootstraps == nil {
		v.Bootstraps = []ledger.Bootstrap{}
	}
	if v.Effects == nil {
		v.Effects = []ledger.Effect{}
	}
	return v
}
