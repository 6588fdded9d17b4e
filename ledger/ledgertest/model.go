package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

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
	mScopes   = []ledger.Scope{scopeA, scopeB}
	mOps      = []string{"op1", "op2"}
	mAttempts = []string{"a1", "a2", "a3"}
	mEffects  = []string{"e1", "e2", "e3"}
	mDigests  = []canon.Digest{Digest("d1"), Digest("d2")}
	mBoots    = []string{"b1", "b2"}
	// mRounds Repeat rounds per check: longer histories reach deeper states.
	mRounds    = 1
	mReceipts  = []string{"r1", "r2"}
	mReasons   = []ledger.NotConsumedReason{ledger.ReasonRefused, ledger.ReasonCancelled, ledger.ReasonWaitingApproval}
	mArtifacts = [][]byte{[]byte("art-1"), []byte("art-2")}
	mErrs      = []error{ledger.ErrStaleFence, ledger.ErrBootstrapRedeemed, ledger.ErrChangedInput, ledger.ErrBudgetExhausted,
		ledger.ErrResultAlreadyAccepted, ledger.ErrOutOfScope, ledger.ErrNotFound, ledger.ErrCancelled,
		ledger.ErrInvalidTransition, ledger.ErrDeadlineExceeded, ledger.ErrInvalid, ledger.ErrClosed}
)

type mKey struct {
	s  ledger.Scope
	op string
}

type mEffect struct {
	e ledger.Effect // AuthorizationID learned from the first answer
}

type mOperation struct {
	op       ledger.Operation
	attempts []ledger.Attempt
	boots    map[string]ledger.Bootstrap
	effects  map[string]*mEffect
	result   *ledger.Result // ArtifactRefs learned from the first answer
	artSum   canon.Digest
}

type model struct {
	ops    map[mKey]*mOperation
	fences map[mKey][]ledger.Fence // every fence ever issued, plus forged ones
}

func (m *model) current(k mKey) (string, uint64) {
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
		return ledger.ErrCancelled
	case ledger.OperationCompleted:
		return ledger.ErrResultAlreadyAccepted
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

func testModel(t *testing.T, open func(t *testing.T) ledger.Ledger) {
	rapid.Check(t, func(rt *rapid.T) {
		l := open(t)
		defer func() {
			if err := l.Close(context.Background()); err != nil {
				rt.Fatalf("Close: %v", err)
			}
		}()
		m := &model{ops: map[mKey]*mOperation{}, fences: map[mKey][]ledger.Fence{}}
		ctx := context.Background()
		// Calls mostly target operations that exist, through their current
		// fence, so that sequences get deep enough to collide.
		pickKey := func(rt *rapid.T) mKey {
			if len(m.ops) > 0 && rapid.IntRange(0, 9).Draw(rt, "existing") > 0 {
				var keys []mKey
				for _, s := range mScopes {
					for _, op := range mOps {
						if m.ops[mKey{s, op}] != nil {
							keys = append(keys, mKey{s, op})
						}
					}
				}
				return rapid.SampledFrom(keys).Draw(rt, "key")
			}
			return mKey{rapid.SampledFrom(mScopes).Draw(rt, "scope"), rapid.SampledFrom(mOps).Draw(rt, "op")}
		}
		pickFence := func(rt *rapid.T, k mKey) ledger.Fence {
			if fs := m.fences[k]; len(fs) > 0 && rapid.IntRange(0, 9).Draw(rt, "current") > 2 {
				return fs[len(fs)-1]
			}
			choices := append(slices.Clone(m.fences[k]),
				ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: "forged", Generation: 1},
				ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: "a1", Generation: 9})
			return rapid.SampledFrom(choices).Draw(rt, "fence")
		}
		same := func(rt *rapid.T, what string, got, want error) {
			if class(got) != want {
				rt.Fatalf("%s: err = %v, model says %v", what, got, want)
			}
		}
		// Every operation exists with a started attempt from the first step,
		// so that short histories already collide on effects and bootstrap
		// ids; "create" and "start" still run as actions.
		for _, sc := range mScopes {
			for _, op := range mOps {
				k := mKey{sc, op}
				sp := spec(sc, op, rapid.Int64Range(0, 3).Draw(rt, "budget"))
				if _, err := l.CreateOperation(ctx, sp); err != nil {
					rt.Fatalf("CreateOperation: %v", err)
				}
				f, err := l.StartAttempt(ctx, sc, op, "a1")
				if err != nil {
					rt.Fatalf("StartAttempt: %v", err)
				}
				m.ops[k] = &mOperation{
					op: ledger.Operation{Scope: sc, OperationID: op, CapabilityID: sp.CapabilityID,
						RequestDigest: sp.RequestDigest, ManifestDigest: sp.ManifestDigest, EffectBudget: sp.EffectBudget,
						Deadline: sp.Deadline.UTC(), State: ledger.OperationOpen, CurrentAttemptID: "a1", CurrentGeneration: 1},
					attempts: []ledger.Attempt{{AttemptID: "a1", Generation: 1}},
					boots:    map[string]ledger.Bootstrap{}, effects: map[string]*mEffect{},
				}
				m.fences[k] = []ledger.Fence{f}
			}
		}
		actions := map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				k := pickKey(rt)
				sp := spec(k.s, k.op, rapid.Int64Range(0, 3).Draw(rt, "budget"))
				sp.Deadline = sp.Deadline.AddDate(0, 0, rapid.IntRange(0, 1).Draw(rt, "deadline"))
				_, err := l.CreateOperation(ctx, sp)
				var want error
				if o := m.ops[k]; o != nil {
					if o.op.EffectBudget != sp.EffectBudget || !o.op.Deadline.Equal(sp.Deadline) {
						want = ledger.ErrChangedInput
					}
				} else {
					m.ops[k] = &mOperation{
						op: ledger.Operation{Scope: k.s, OperationID: k.op, CapabilityID: sp.CapabilityID,
							RequestDigest: sp.RequestDigest, ManifestDigest: sp.ManifestDigest, EffectBudget: sp.EffectBudget,
							Deadline: sp.Deadline.UTC(), State: ledger.OperationOpen},
						boots: map[string]ledger.Bootstrap{}, effects: map[string]*mEffect{},
					}
				}
				same(rt, "CreateOperation", err, want)
			},
			"start": func(rt *rapid.T) {
				k := pickKey(rt)
				id := rapid.SampledFrom(mAttempts).Draw(rt, "attempt")
				f, err := l.StartAttempt(ctx, k.s, k.op, id)
				want := func() error {
					o := m.ops[k]
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
					o.attempts = append(o.attempts, ledger.Attempt{AttemptID: id, Generation: uint64(len(o.attempts) + 1)})
					o.op.CurrentAttemptID, o.op.CurrentGeneration = id, uint64(len(o.attempts))
					return nil
				}()
				same(rt, "StartAttempt", err, want)
				if err == nil {
					cur, gen := m.current(k)
					if f != (ledger.Fence{Scope: k.s, OperationID: k.op, AttemptID: cur, Generation: gen}) {
						rt.Fatalf("StartAttempt = %+v, model current (%s, %d)", f, cur, gen)
					}
					if !slices.Contains(m.fences[k], f) {
						m.fences[k] = append(m.fences[k], f)
					}
				}
			},
			"issue": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				id := rapid.SampledFrom(mBoots).Draw(rt, "boot")
				ld := rapid.SampledFrom(mDigests).Draw(rt, "launch")
				_, err := l.IssueBootstrap(ctx, f, id, ld)
				want := func() error {
					o, err := m.fence(f)
					if err != nil {
						return err
					}
					if err := o.open(); err != nil {
						return err
					}
					if b, ok := o.boots[id]; ok {
						if b.AttemptID != f.AttemptID || b.LaunchDigest != ld {
							return ledger.ErrChangedInput
						}
						return nil
					}
					o.boots[id] = ledger.Bootstrap{BootstrapID: id, AttemptID: f.AttemptID, Generation: f.Generation, LaunchDigest: ld}
					return nil
				}()
				same(rt, "IssueBootstrap", err, want)
			},
			"redeem": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				r := ledger.Redemption{BootstrapID: rapid.SampledFrom(mBoots).Draw(rt, "boot"),
					LaunchDigest: mDigests[rapid.IntRange(0, 9).Draw(rt, "launch")/9],
					PID:          rapid.IntRange(1, 3).Draw(rt, "pid"), SessionID: "sess"}
				_, err := l.RedeemBootstrap(ctx, f, r)
				want := func() error {
					o, err := m.fence(f)
					if err != nil {
						return err
					}
					if err := o.open(); err != nil {
						return err
					}
					b, ok := o.boots[r.BootstrapID]
					switch {
					case !ok:
						return ledger.ErrNotFound
					case b.AttemptID != f.AttemptID:
						return ledger.ErrStaleFence
					case b.Redeemed:
						return ledger.ErrBootstrapRedeemed
					case b.LaunchDigest != r.LaunchDigest:
						return ledger.ErrChangedInput
					}
					b.Redeemed, b.RedeemedPID, b.RedeemedSessionID = true, r.PID, r.SessionID
					o.boots[r.BootstrapID] = b
					return nil
				}()
				same(rt, "RedeemBootstrap", err, want)
			},
			"admit": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				d := rapid.SampledFrom([]canon.Digest{Digest("request:" + k.op), Digest("other")}).Draw(rt, "request")
				_, err := l.Admit(ctx, f, d)
				want := func() error {
					o, err := m.fence(f)
					if err != nil {
						return err
					}
					if err := o.open(); err != nil {
						return err
					}
					if d != o.op.RequestDigest {
						return ledger.ErrChangedInput
					}
					o.attempts[len(o.attempts)-1].Admitted = true
					return nil
				}()
				same(rt, "Admit", err, want)
			},
			"begin": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				id := rapid.SampledFrom(mEffects).Draw(rt, "effect")
				d := rapid.SampledFrom(mDigests).Draw(rt, "digest")
				g, err := l.BeginEffect(ctx, f, id, d)
				var wantEff *mEffect
				redelivery := false
				want := func() error {
					o, err := m.fence(f)
					if err != nil {
						return err
					}
					if e, ok := o.effects[id]; ok {
						if e.e.RequestDigest != d {
							return ledger.ErrChangedInput
						}
						wantEff, redelivery = e, true
						return nil
					}
					if err := o.open(); err != nil {
						return err
					}
					if o.op.EffectsUsed >= o.op.EffectBudget {
						return ledger.ErrBudgetExhausted
					}
					o.op.EffectsUsed++
					wantEff = &mEffect{e: ledger.Effect{Scope: k.s, OperationID: k.op, LogicalEffectID: id, RequestDigest: d,
						State: ledger.EffectAuthorized, AttemptID: f.AttemptID, Generation: f.Generation, Ordinal: o.op.EffectsUsed}}
					o.effects[id] = wantEff
					return nil
				}()
				same(rt, "BeginEffect", err, want)
				if err != nil {
					return
				}
				if wantEff.e.AuthorizationID == "" {
					wantEff.e.AuthorizationID = g.Effect.AuthorizationID
				}
				if g.Redelivery != redelivery || g.Effect != wantEff.e {
					rt.Fatalf("BeginEffect = %+v (redelivery %v), model %+v (redelivery %v)", g.Effect, g.Redelivery, wantEff.e, redelivery)
				}
			},
			"settle": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				id := rapid.SampledFrom(mEffects).Draw(rt, "effect")
				d := rapid.SampledFrom(mDigests).Draw(rt, "digest")
				kind := rapid.IntRange(0, 3).Draw(rt, "kind") // confirm, not consumed, unknown, resolve
				to, receipt, reason := ledger.EffectUnknown, "", ledger.NotConsumedReason("")
				from := []ledger.EffectState{ledger.EffectAuthorized}
				var err error
				switch kind {
				case 0:
					to, receipt = ledger.EffectConfirmed, rapid.SampledFrom(mReceipts).Draw(rt, "receipt")
					_, err = l.ConfirmEffect(ctx, f, id, d, receipt)
				case 1:
					to, reason = ledger.EffectNotConsumed, rapid.SampledFrom(mReasons).Draw(rt, "reason")
					_, err = l.MarkNotConsumed(ctx, f, id, d, reason)
				case 2:
					_, err = l.MarkUnknown(ctx, f, id, d)
				case 3:
					res := ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: rapid.SampledFrom(mReceipts).Draw(rt, "receipt")}
					if rapid.Bool().Draw(rt, "notConsumed") {
						res = ledger.Resolution{State: ledger.EffectNotConsumed, Reason: rapid.SampledFrom(mReasons).Draw(rt, "reason")}
					}
					to, receipt, reason = res.State, res.ReceiptID, res.Reason
					from = append(from, ledger.EffectUnknown)
					_, err = l.Resolve(ctx, k.s, k.op, id, d, res)
				}
				want := func() error {
					var o *mOperation
					if kind == 3 {
						if o = m.ops[k]; o == nil {
							return ledger.ErrNotFound
						}
					} else {
						var err error
						if o, err = m.fence(f); err != nil {
							return err
						}
					}
					e, ok := o.effects[id]
					switch {
					case !ok:
						return ledger.ErrNotFound
					case e.e.RequestDigest != d:
						return ledger.ErrChangedInput
					case e.e.State == to && e.e.ReceiptID == receipt && e.e.Reason == reason:
						return nil
					case !slices.Contains(from, e.e.State):
						return ledger.ErrInvalidTransition
					}
					e.e.State, e.e.ReceiptID, e.e.Reason = to, receipt, reason
					return nil
				}()
				same(rt, fmt.Sprintf("settle kind %d", kind), err, want)
			},
			"accept": func(rt *rapid.T) {
				k := pickKey(rt)
				f := pickFence(rt, k)
				dd := rapid.SampledFrom(mDigests).Draw(rt, "data")
				art := rapid.SampledFrom(mArtifacts).Draw(rt, "artifact")
				r, err := l.AcceptResult(ctx, f, dd, art)
				want := func() error {
					o, err := m.fence(f)
					if err != nil {
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
				same(rt, "AcceptResult", err, want)
				if err != nil {
					return
				}
				o := m.ops[k]
				if o.result.ArtifactRefs == nil {
					o.result.ArtifactRefs = r.ArtifactRefs
				}
				if d := cmpDiff(*o.result, r); d != "" {
					rt.Fatalf("AcceptResult mismatch (-model +got):\n%s", d)
				}
			},
			"cancel": func(rt *rapid.T) {
				k := pickKey(rt)
				_, err := l.Cancel(ctx, k.s, k.op, "why")
				want := func() error {
					o := m.ops[k]
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
				same(rt, "Cancel", err, want)
			},
			"": func(rt *rapid.T) { m.check(rt, l) },
		}
		// Weigh the calls that build state over the two that end an
		// operation (accept, cancel), so that histories reach redemptions,
		// settled effects and exhausted budgets before the operation ends.
		for _, name := range []string{"issue", "redeem", "begin", "settle", "start", "admit"} {
			for i := range 2 {
				actions[fmt.Sprint(name, i)] = actions[name]
			}
		}
		for range mRounds {
			rt.Repeat(actions)
		}
	})
}

// check compares every operation view and the reconciliation list with
// the model.
func (m *model) check(rt *rapid.T, l ledger.Ledger) {
	ctx := context.Background()
	var wantUnknown []ledger.Effect
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
			for _, id := range mBoots {
				if b, ok := o.boots[id]; ok {
					want.Bootstraps = append(want.Bootstraps, b)
				}
			}
			for _, id := range mEffects {
				if e, ok := o.effects[id]; ok {
					want.Effects = append(want.Effects, e.e)
					if e.e.State == ledger.EffectAuthorized || e.e.State == ledger.EffectUnknown {
						wantUnknown = append(wantUnknown, e.e)
					}
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
