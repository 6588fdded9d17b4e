package catalogue_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// modes is a provider with one capability per concurrency mode.
func modes(t testing.TB) (manifest.ProviderBinding, map[string]manifest.CapabilityManifest) {
	ms := map[string]manifest.CapabilityManifest{
		"parallel_safe":         capManifest(t, "example.par@1.0.0", "parallel_safe", nil, nil, nil),
		"serial_per_capability": capManifest(t, "example.cap@1.0.0", "serial_per_capability", nil, nil, nil),
		"serial_per_resource":   capManifest(t, "example.res@1.0.0", "serial_per_resource", []string{"account", "text"}, nil, nil),
		"exclusive":             capManifest(t, "example.exc@1.0.0", "exclusive", nil, nil, nil),
	}
	var all []manifest.CapabilityManifest
	for _, m := range ms {
		all = append(all, m)
	}
	return binding(t, 1, all...), ms
}

// TestClaims: the reservations each concurrency mode takes.
func TestClaims(t *testing.T) {
	b, ms := modes(t)
	claims := func(b manifest.ProviderBinding, mode string, args map[string]any) []cataloguestore.Claim {
		t.Helper()
		cs, err := catalogue.Claims(b, ms[mode], args)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	provider := "provider:" + b.Distribution + ":" + b.Factory
	args := map[string]any{"account": "acme", "text": "x", "other": 1}
	res := claims(b, "serial_per_resource", args)
	want := map[string][]cataloguestore.Claim{
		"parallel_safe":         {{Key: provider, Shared: true, CapabilityID: "example.par@1.0.0"}},
		"serial_per_capability": {{Key: "capability:example.cap", CapabilityID: "example.cap@1.0.0"}, {Key: provider, Shared: true, CapabilityID: "example.cap@1.0.0"}},
		"serial_per_resource":   {{Key: res[0].Key, CapabilityID: "example.res@1.0.0"}, {Key: provider, Shared: true, CapabilityID: "example.res@1.0.0"}},
		"exclusive":             {{Key: provider, CapabilityID: "example.exc@1.0.0"}},
	}
	for mode, w := range want {
		diff(t, mode, claims(b, mode, args), w)
	}
	if !strings.HasPrefix(res[0].Key, "resource:example.res:sha256:") {
		t.Fatalf("resource key %q", res[0].Key)
	}
	// The resource key is the named arguments' values, in order, and
	// nothing else.
	d, err := canon.DigestOf(map[string]any{"fields": []string{"account", "text"}, "values": []any{"acme", "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Key != "resource:example.res:"+string(d) {
		t.Fatalf("resource key %q, want the digest of the fields and values", res[0].Key)
	}
	for _, tt := range []struct {
		args map[string]any
		same bool
	}{
		{map[string]any{"account": "acme", "text": "x", "other": 2}, true},
		{map[string]any{"text": "x", "account": "acme"}, true},
		{map[string]any{"account": "acme", "text": "y"}, false},
		{map[string]any{"account": "x", "text": "acme"}, false},
		{map[string]any{"account": "acme"}, false},
	} {
		if got := claims(b, "serial_per_resource", tt.args)[0].Key == res[0].Key; got != tt.same {
			t.Errorf("arguments %v share the key of %v: %v, want %v", tt.args, args, got, tt.same)
		}
	}
	// Without an exclusive capability in the inventory, parallel_safe
	// takes nothing and the serial modes nothing shared.
	plain := binding(t, 1, ms["parallel_safe"], ms["serial_per_capability"])
	if cs := claims(plain, "parallel_safe", args); len(cs) != 0 {
		t.Fatalf("parallel_safe without exclusive: %+v", cs)
	}
	diff(t, "serial_per_capability without exclusive", claims(plain, "serial_per_capability", args),
		[]cataloguestore.Claim{{Key: "capability:example.cap", CapabilityID: "example.cap@1.0.0"}})
}

// A call of the reservation model.
type rmCall struct {
	mode    string
	account string
	fate    string // "normal", "crash" (never releases; a new attempt frees it), "expire" (never releases; its deadline frees it)
	wait    time.Duration
	hold    time.Duration
	life    time.Duration // the operation's deadline after its creation, for "expire"
}

// holder is a call holding its reservations, as the ledger should see it:
// it stops being one when it releases, is fenced off, or its deadline
// passes.
type holder struct {
	id       int
	fence    ledger.Fence
	claims   []cataloguestore.Claim
	deadline time.Time // zero: none that matters
}

type tracker struct {
	mu      sync.Mutex
	holders map[int]holder
	fences  map[ledger.Fence]bool
}

// take records h as a holder, failing when a live holder has a key h
// takes, unless both hold it shared.
func (tr *tracker) take(h holder) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := time.Now()
	if !h.deadline.IsZero() && !now.Before(h.deadline) {
		return nil // it got its reservations, but its deadline has passed since
	}
	for _, o := range tr.holders {
		if !o.deadline.IsZero() && !now.Before(o.deadline) {
			continue // its deadline passed: the ledger no longer counts it
		}
		for _, a := range h.claims {
			for _, b := range o.claims {
				if a.Key == b.Key && !(a.Shared && b.Shared) {
					return fmt.Errorf("calls %d and %d both hold %q (shared %v, %v)", h.id, o.id, a.Key, a.Shared, b.Shared)
				}
			}
		}
	}
	tr.holders[h.id] = h
	return nil
}

func (tr *tracker) drop(id int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.holders, id)
}

// TestReservationModel: random concurrent calls of the four modes, with
// waits, crashes (no release; the operation's next attempt frees them)
// and expiries (no release; the deadline frees them). Invariants: never
// two holders of one key unless both shared; a call refused names a holder
// that is one of the calls; and once every call ended, every crash was
// recovered and every deadline passed, no reservation is left.
func TestReservationModel(t *testing.T) {
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t)
		c := newCatalogue(t, s)
		b, ms := modes(t)
		check := 0
		rapid.Check(t, func(rt *rapid.T) {
			check++
			scope := ledger.Scope{OrganizationID: fmt.Sprintf("org-%d", check), ProjectID: "p"}
			calls := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) rmCall {
				return rmCall{
					mode:    rapid.SampledFrom([]string{"parallel_safe", "serial_per_capability", "serial_per_resource", "exclusive"}).Draw(rt, "mode"),
					account: rapid.SampledFrom([]string{"acme", "globex"}).Draw(rt, "account"),
					fate:    rapid.SampledFrom([]string{"normal", "normal", "crash", "expire"}).Draw(rt, "fate"),
					wait:    time.Duration(rapid.IntRange(0, 40).Draw(rt, "wait")) * time.Millisecond,
					hold:    time.Duration(rapid.IntRange(0, 3).Draw(rt, "hold")) * time.Millisecond,
					life:    time.Duration(rapid.IntRange(5, 40).Draw(rt, "life")) * time.Millisecond,
				}
			}), 2, 8).Draw(rt, "calls")
			tr := &tracker{holders: map[int]holder{}, fences: map[ledger.Fence]bool{}}
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				failures  []error
				crashed   []ledger.Fence
				deadlines []time.Time
			)
			fail := func(err error) {
				mu.Lock()
				failures = append(failures, err)
				mu.Unlock()
			}
			fences := make([]ledger.Fence, len(calls))
			for i, cl := range calls {
				op := fmt.Sprintf("op-%d", i)
				dl := time.Now().Add(time.Hour)
				if cl.fate == "expire" {
					dl = time.Now().Add(cl.life)
					deadlines = append(deadlines, dl)
				}
				if _, err := s.CreateOperation(bg, ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: ms[cl.mode].ID.String(),
					RequestDigest: canon.Sum([]byte(op)), ManifestDigest: b.ManifestDigest, Deadline: dl}); err != nil {
					rt.Fatal(err)
				}
				f, err := s.StartAttempt(bg, scope, op, "a1")
				if err != nil {
					rt.Fatal(err)
				}
				fences[i] = f
				tr.fences[f] = true
			}
			for i, cl := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, m := fences[i], ms[cl.mode]
					args := map[string]any{"account": cl.account, "text": "t"}
					err := c.Reserve(bg, f, b, m, args, cl.wait)
					var re *cataloguestore.ReservationError
					switch {
					case errors.As(err, &re):
						if !tr.fences[re.Holder.Holder] {
							fail(fmt.Errorf("call %d refused naming holder %+v, which is no call's attempt", i, re.Holder.Holder))
						}
						return
					case errors.Is(err, ledger.ErrDeadlineExceeded) && cl.fate == "expire":
						return
					case err != nil:
						fail(fmt.Errorf("call %d: %w", i, err))
						return
					}
					claims, _ := catalogue.Claims(b, m, args)
					h := holder{id: i, fence: f, claims: claims}
					if cl.fate == "expire" {
						v, err := s.Operation(bg, scope, f.OperationID)
						if err != nil {
							fail(err)
							return
						}
						h.deadline = v.Operation.Deadline
					}
					if err := tr.take(h); err != nil {
						fail(err)
					}
					if err := c.Recheck(bg, f, b, m, args); err != nil && cl.fate != "expire" {
						fail(fmt.Errorf("call %d: Recheck while holding: %w", i, err))
					}
					time.Sleep(cl.hold)
					switch cl.fate {
					case "normal":
						tr.drop(i)
						if err := c.Release(bg, f); err != nil {
							fail(err)
						}
					case "crash":
						// The controller died: nothing is released.
						// Another controller's recovery starts a new
						// attempt, which fences this one off.
						tr.drop(i)
						mu.Lock()
						crashed = append(crashed, f)
						mu.Unlock()
						if _, err := s.StartAttempt(bg, scope, f.OperationID, "a2"); err != nil {
							fail(err)
						}
					case "expire":
						// Hung past its deadline; it never releases.
					}
				}()
			}
			wg.Wait()
			for _, err := range failures {
				rt.Fatal(err)
			}
			// Every deadline passes (a condition, not a duration).
			for _, dl := range deadlines {
				for time.Now().Before(dl) {
					time.Sleep(time.Until(dl))
				}
			}
			left, err := s.Reservations(bg, scope)
			if err != nil {
				rt.Fatal(err)
			}
			if len(left) != 0 {
				rt.Fatalf("reservations left after every attempt ended: %+v", left)
			}
			for _, f := range append(fences, crashed...) {
				if held, err := s.HeldBy(bg, f); err != nil || len(held) != 0 {
					rt.Fatalf("attempt %+v still holds %+v (%v)", f, held, err)
				}
			}
		})
	})
}
