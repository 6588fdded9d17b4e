package ledgertest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
)

// The reservation model: random operations, attempts, cancellations,
// reservations and releases over a small universe of keys, against a
// sequential model of cataloguestore.Store's reservation rules. After every step
// the live reservations of every scope, and what every fence holds, must
// equal the model's; so no key ever has two live holders unless both are
// shared, and nothing stays held by an attempt that is over.

var (
	rmKeys = []string{"k1", "k2", "provider"}
	rmOps  = []string{"op1", "op2", "op3", "op4"}
)

type rmRecord struct {
	fence  ledger.Fence
	shared bool
}

type rmOp struct {
	fences    []ledger.Fence
	cancelled bool
}

type rmModel struct {
	ops  map[mKey]*rmOp
	recs map[ledger.Scope]map[string]map[string]rmRecord // scope → key → operation → record
}

func (m *rmModel) current(s ledger.Scope, op string) (ledger.Fence, bool) {
	o := m.ops[mKey{s, op}]
	if o == nil || len(o.fences) == 0 {
		return ledger.Fence{}, false
	}
	return o.fences[len(o.fences)-1], true
}

func (m *rmModel) live(r rmRecord) bool {
	o := m.ops[mKey{r.fence.Scope, r.fence.OperationID}]
	cur, ok := m.current(r.fence.Scope, r.fence.OperationID)
	return ok && !o.cancelled && cur == r.fence
}

func (m *rmModel) reserve(f ledger.Fence, claims []cataloguestore.Claim) error {
	o := m.ops[mKey{f.Scope, f.OperationID}]
	if o == nil {
		return ledger.ErrNotFound
	}
	if cur, ok := m.current(f.Scope, f.OperationID); !ok || cur != f {
		return ledger.ErrStaleFence
	}
	if o.cancelled {
		return ledger.ErrOperationCancelled
	}
	keys := m.recs[f.Scope]
	for _, c := range claims {
		for op, r := range keys[c.Key] {
			if op != f.OperationID && m.live(r) && !(c.Shared && r.shared) {
				return cataloguestore.ErrReserved
			}
		}
	}
	if keys == nil {
		keys = map[string]map[string]rmRecord{}
		m.recs[f.Scope] = keys
	}
	for _, c := range claims {
		holders := keys[c.Key]
		if holders == nil {
			holders = map[string]rmRecord{}
			keys[c.Key] = holders
		}
		for op, r := range holders {
			if op != f.OperationID && !m.live(r) {
				delete(holders, op)
			}
		}
		holders[f.OperationID] = rmRecord{fence: f, shared: c.Shared}
	}
	return nil
}

func (m *rmModel) release(f ledger.Fence) int {
	n := 0
	for _, holders := range m.recs[f.Scope] {
		if r, ok := holders[f.OperationID]; ok && r.fence == f {
			delete(holders, f.OperationID)
			n++
		}
	}
	return n
}

func (m *rmModel) reservations(s ledger.Scope) []cataloguestore.Reservation {
	out := []cataloguestore.Reservation{}
	for key, holders := range m.recs[s] {
		for _, r := range holders {
			if m.live(r) {
				out = append(out, cataloguestore.Reservation{Claim: claim(key, r.shared), Holder: r.fence, Deadline: spec(s, r.fence.OperationID, 0).Deadline})
			}
		}
	}
	slices.SortFunc(out, func(a, b cataloguestore.Reservation) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Holder.OperationID, b.Holder.OperationID))
	})
	return out
}

// testReservationModel runs every check on one ledger, each in scopes of
// its own (a fresh ledger per check would cost a schema per check on
// PostgreSQL).
func testReservationModel(t *testing.T, l CatalogueLedger) {
	checks := 0
	rapid.Check(t, func(rt *rapid.T) {
		checks++
		scopes := []ledger.Scope{{OrganizationID: fmt.Sprintf("org-%d-a", checks), ProjectID: "proj-1"},
			{OrganizationID: fmt.Sprintf("org-%d-b", checks), ProjectID: "proj-1"}}
		m := &rmModel{ops: map[mKey]*rmOp{}, recs: map[ledger.Scope]map[string]map[string]rmRecord{}}
		pickFence := func(rt *rapid.T, k mKey) ledger.Fence {
			o := m.ops[k]
			if o != nil && len(o.fences) > 0 && rapid.IntRange(0, 9).Draw(rt, "current") > 2 {
				return o.fences[len(o.fences)-1]
			}
			choices := []ledger.Fence{{Scope: k.s, OperationID: k.op, AttemptID: "forged", Generation: 1}}
			if o != nil {
				choices = append(choices, o.fences...)
			}
			return rapid.SampledFrom(choices).Draw(rt, "fence")
		}
		pickKey := func(rt *rapid.T) mKey {
			return mKey{rapid.SampledFrom(scopes).Draw(rt, "scope"), rapid.SampledFrom(rmOps).Draw(rt, "op")}
		}
		attempts := 0
		// op1..op3 exist in every scope with a first attempt, so that
		// short histories collide on keys; op4 starts missing.
		for _, sc := range scopes {
			for _, op := range rmOps[:3] {
				mustCreate(t, l, spec(sc, op, 0))
				attempts++
				f := mustStart(t, l, sc, op, fmt.Sprintf("a%d", attempts))
				m.ops[mKey{sc, op}] = &rmOp{fences: []ledger.Fence{f}}
			}
		}
		actions := map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				k := pickKey(rt)
				if _, err := l.CreateOperation(bg, spec(k.s, k.op, 0)); err != nil {
					rt.Fatalf("CreateOperation: %v", err)
				}
				if m.ops[k] == nil {
					m.ops[k] = &rmOp{}
				}
			},
			"start": func(rt *rapid.T) {
				k := pickKey(rt)
				attempts++
				f, err := l.StartAttempt(bg, k.s, k.op, fmt.Sprintf("a%d", attempts))
				o := m.ops[k]
				switch {
				case o == nil:
					wantClass(rt, "StartAttempt", err, ledger.ErrNotFound)
				case o.cancelled:
					wantClass(rt, "StartAttempt", err, ledger.ErrOperationCancelled)
				case err != nil:
					rt.Fatalf("StartAttempt: %v", err)
				default:
					o.fences = append(o.fences, f)
				}
			},
			"cancel": func(rt *rapid.T) {
				k := pickKey(rt)
				_, err := l.Cancel(bg, k.s, k.op, "model")
				if o := m.ops[k]; o == nil {
					wantClass(rt, "Cancel", err, ledger.ErrNotFound)
				} else if err != nil {
					rt.Fatalf("Cancel: %v", err)
				} else {
					o.cancelled = true
				}
			},
			"reserve": func(rt *rapid.T) {
				f := pickFence(rt, pickKey(rt))
				keys := rapid.SliceOfNDistinct(rapid.SampledFrom(rmKeys), 1, len(rmKeys), rapid.ID[string]).Draw(rt, "keys")
				var claims []cataloguestore.Claim
				for _, key := range keys {
					claims = append(claims, claim(key, rapid.Bool().Draw(rt, "shared")))
				}
				_, err := l.Reserve(bg, f, claims)
				wantClass(rt, fmt.Sprintf("Reserve(%+v, %v)", f, claims), err, m.reserve(f, claims))
			},
			"release": func(rt *rapid.T) {
				f := pickFence(rt, pickKey(rt))
				got, err := l.Release(bg, f)
				if want := m.release(f); err != nil || got != want {
					rt.Fatalf("Release(%+v) = %d, %v; model says %d", f, got, err, want)
				}
			},
			"": func(rt *rapid.T) {
				for _, s := range scopes {
					got, err := l.Reservations(bg, s)
					if err != nil {
						rt.Fatalf("Reservations: %v", err)
					}
					if d := cmpDiff(m.reservations(s), got); d != "" {
						rt.Fatalf("Reservations(%v) mismatch (-model +ledger):\n%s", s, d)
					}
					held := map[string]bool{}
					for _, r := range got {
						if held[r.Key] && !r.Shared {
							rt.Fatalf("key %q has two live holders, one exclusive: %+v", r.Key, got)
						}
						held[r.Key] = true
					}
				}
				for k, o := range m.ops {
					for _, f := range o.fences {
						got, err := l.HeldBy(bg, f)
						if err != nil {
							rt.Fatalf("HeldBy: %v", err)
						}
						var want []cataloguestore.Reservation
						for _, r := range m.reservations(k.s) {
							if r.Holder == f {
								want = append(want, r)
							}
						}
						if len(want) == 0 {
							want = []cataloguestore.Reservation{}
						}
						if d := cmpDiff(want, got); d != "" {
							rt.Fatalf("HeldBy(%+v) mismatch (-model +ledger):\n%s", f, d)
						}
					}
				}
			},
		}
		// Reservations are the subject: weigh them over the calls that end
		// attempts and operations.
		for i := range 4 {
			actions[fmt.Sprint("reserve", i)] = actions["reserve"]
		}
		actions["release1"] = actions["release"]
		rt.Repeat(actions)
	})
}

func wantClass(rt *rapid.T, what string, err, want error) {
	if want == nil {
		if err != nil {
			rt.Fatalf("%s: %v, model says success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		rt.Fatalf("%s: err = %v, model says %v", what, err, want)
	}
}
