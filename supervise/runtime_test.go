package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// registry is the Providers port as an embedder's own registry of
// admitted bindings implements it: generations by provider, and the
// generation each operation was first resolved to (its pin).
type registry struct {
	mu   sync.Mutex
	gens map[cataloguestore.ProviderKey][]manifest.ProviderBinding
	pins map[string]int64
}

func newRegistry() *registry {
	return &registry{gens: map[cataloguestore.ProviderKey][]manifest.ProviderBinding{}, pins: map[string]int64{}}
}

func keyOf(b manifest.ProviderBinding) cataloguestore.ProviderKey {
	return cataloguestore.ProviderKey{Distribution: b.Distribution, Factory: b.Factory}
}

func (r *registry) admit(b manifest.ProviderBinding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gens[keyOf(b)] = append(r.gens[keyOf(b)], b)
}

func (r *registry) ProviderBinding(_ context.Context, scope ledger.Scope, op string, p cataloguestore.ProviderKey, gen int64) (manifest.ProviderBinding, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gs := r.gens[p]
	if len(gs) == 0 {
		return manifest.ProviderBinding{}, fmt.Errorf("provider %s: %w", p.Factory, ledger.ErrNotFound)
	}
	pin := scope.OrganizationID + "/" + scope.ProjectID + "/" + op
	if gen == 0 {
		gen = r.pins[pin]
	}
	if gen == 0 {
		gen = gs[len(gs)-1].Generation
		r.pins[pin] = gen
	}
	for _, b := range gs {
		if b.Generation == gen {
			return b, nil
		}
	}
	return manifest.ProviderBinding{}, fmt.Errorf("provider %s generation %d: %w", p.Factory, gen, ledger.ErrNotFound)
}

// variant is testBinding as another provider (factory) and generation;
// description, when set, changes every manifest so that the inventory,
// and so its digest, differs.
func variant(t testing.TB, factory string, gen int64, description string) manifest.ProviderBinding {
	t.Helper()
	b := testBinding(t)
	ms := make([]manifest.CapabilityManifest, len(b.Manifests))
	for i, m := range b.Manifests {
		if description != "" {
			m.Description = description
		}
		ms[i] = m
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	b.Factory, b.Generation, b.Manifests, b.ManifestDigest = factory, gen, ms, d
	return b
}

// launches counts the hosts a Supervisor started, through its Observer.
type launches struct{ n atomic.Int64 }

func (c *launches) observe(ev supervise.Event) {
	if ev.Kind == supervise.EventLaunch {
		c.n.Add(1)
	}
}

// TestOneSupervisorManyProviders: one Supervisor runs two providers and a
// newer generation of one of them, admitted while an operation of the
// first generation runs; that operation finishes on its generation, a new
// one runs on the newer, and a Call may carry its binding instead.
func TestOneSupervisorManyProviders(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := openBolt(t, t.TempDir())
	reg := newRegistry()
	alpha1, beta := variant(t, "alpha_provider:factory", 1, ""), variant(t, "beta_provider:factory", 1, "beta")
	alpha2 := variant(t, "alpha_provider:factory", 2, "alpha, second generation")
	reg.admit(alpha1)
	reg.admit(beta)
	d := newDispatcher()
	d.set("effect-1", "block")
	cfg := config(t, l, newLauncher(t, 0))
	cfg.Provider, cfg.Providers, cfg.Dispatcher = manifest.ProviderBinding{}, reg, d
	s := newSupervisor(t, cfg)

	named := func(op, capability string, b manifest.ProviderBinding, args map[string]any, budget int64) supervise.Call {
		c := call(op, capability, args, budget)
		c.Provider = keyOf(b)
		return c
	}
	slow := make(chan error, 1)
	go func() {
		o, err := s.Invoke(ctx, named("op-alpha-slow", "example.two_effects@1.0.0", alpha1, map[string]any{"target": "doc"}, 2))
		if err == nil && o.Evidence == nil {
			err = errors.New("no evidence")
		}
		slow <- err
	}()
	<-d.entered // op-alpha-slow runs generation 1, inside its first effect
	reg.admit(alpha2)

	var wg sync.WaitGroup
	outcomes := map[string]*supervise.Outcome{}
	var mu sync.Mutex
	for _, c := range []supervise.Call{
		named("op-alpha-new", "example.echo@1.0.0", alpha1, map[string]any{"text": "a"}, 0),
		named("op-beta", "example.echo@1.0.0", beta, map[string]any{"text": "b"}, 0),
		func() supervise.Call {
			c := call("op-explicit", "example.echo@1.0.0", map[string]any{"text": "c"}, 0)
			c.Binding = &beta
			return c
		}(),
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.Invoke(ctx, c)
			wantState(t, o, err, launch.StateSucceeded, nil)
			mu.Lock()
			outcomes[c.OperationID] = o
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(d.release)
	if err := <-slow; err != nil {
		t.Fatalf("op-alpha-slow: %v", err)
	}
	// Continuing op-alpha-slow with generation zero keeps generation 1.
	again := named("op-alpha-slow", "example.two_effects@1.0.0", alpha1, map[string]any{"target": "doc"}, 0)
	again.Deadline = time.Time{}
	o, err := s.Invoke(ctx, again)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if !o.Reconnected {
		t.Fatalf("op-alpha-slow again: not answered from the ledger: %+v", o)
	}
	for op, want := range map[string]manifest.ProviderBinding{
		"op-alpha-slow": alpha1, "op-alpha-new": alpha2, "op-beta": beta, "op-explicit": beta,
	} {
		view, err := l.Operation(ctx, scope, op)
		if err != nil {
			t.Fatal(err)
		}
		if view.Operation.ManifestDigest != want.ManifestDigest {
			t.Errorf("%s ran inventory %s, want %s (generation %d of %s)", op, view.Operation.ManifestDigest, want.ManifestDigest, want.Generation, want.Factory)
		}
		if view.Operation.CurrentControllerID != s.ControllerID() {
			t.Errorf("%s: current attempt owned by %q, want this controller %q", op, view.Operation.CurrentControllerID, s.ControllerID())
		}
	}
	if got := d.count("effect-1"); got != 1 {
		t.Errorf("effect-1 dispatched %d times", got)
	}

	// A provider nobody admitted is refused before anything runs.
	o, err = s.Invoke(ctx, named("op-nobody", "example.echo@1.0.0", variant(t, "nobody:factory", 1, ""), map[string]any{"text": "x"}, 0))
	if !errors.Is(err, supervise.ErrPreflight) || !errors.Is(err, ledger.ErrNotFound) || o == nil || o.Launched {
		t.Fatalf("unknown provider: %+v, %v", o, err)
	}
}

// TestRefusedBeforeLaunch: what can be refused before launch is, with a
// typed error, no host started, no bootstrap id spent, and nothing
// recorded but what the case says, however often it is repeated.
func TestRefusedBeforeLaunch(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	b := testBinding(t)
	withOrg := manifest.CapabilityManifest{}
	for _, m := range b.Manifests {
		if m.ID.Name == "echo" {
			withOrg = m
		}
	}
	withOrg.ID.Name = "echo_org"
	withOrg.RequestSchema = maps.Clone(withOrg.RequestSchema)
	props := maps.Clone(withOrg.RequestSchema["properties"].(map[string]any))
	props["organization_id"] = map[string]any{"type": "string", "default": "org-other"}
	withOrg.RequestSchema["properties"] = props
	b.Manifests = append(b.Manifests, withOrg)
	var err error
	if b.ManifestDigest, err = manifest.InventoryDigest(b.Manifests); err != nil {
		t.Fatal(err)
	}

	l := memory.New()
	auth := newAuthority()
	var count launches
	cfg := config(t, l, newLauncher(t, 0))
	cfg.Provider, cfg.Authority, cfg.Dispatcher, cfg.Observer = b, auth, newDispatcher(), count.observe
	s := newSupervisor(t, cfg)

	big := strings.Repeat("x", 1_048_276)
	for _, tt := range []struct {
		name    string
		setup   func()
		call    supervise.Call
		state   launch.State
		check   string
		reason  string
		records bool
	}{
		{"authority refuses", func() { auth.admit = port.Refuse }, call("op-refused", "example.echo@1.0.0", map[string]any{"text": "x"}, 0),
			launch.StateRefused, "authority", "test authority: refuse admission", false},
		{"authority holds", func() { auth.admit = port.Hold }, call("op-held", "example.echo@1.0.0", map[string]any{"text": "x"}, 0),
			launch.StateWaitingApproval, "authority", "test authority: hold admission", false},
		{"default contradicts the scope", func() { auth.admit = "" }, call("op-org", "example.echo_org@1.0.0", map[string]any{"text": "x"}, 0),
			launch.StateRefused, "organization", `organization_id is "org-other"`, false},
		{"admit frame over the bound", nil, call("op-big", "example.echo@1.0.0", map[string]any{"text": big}, 0),
			launch.StateInvalidRequest, "message_size", "above the 1048576-byte message bound", false},
		{"effects with no budget", nil, call("op-nobudget", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 0),
			launch.StateRefused, "budget", "effect budget is 0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			auth.mu.Lock()
			if tt.setup != nil {
				tt.setup()
			}
			auth.mu.Unlock()
			for try := range 3 {
				o, err := s.Invoke(ctx, tt.call)
				var pe *supervise.PreflightError
				if o == nil || o.State != tt.state || !errors.As(err, &pe) || pe.Check != tt.check || !strings.Contains(o.Reason, tt.reason) {
					t.Fatalf("try %d: outcome %+v, err %v; want %s from check %q saying %q", try, o, err, tt.state, tt.check, tt.reason)
				}
				if o.Launched {
					t.Fatalf("try %d: launched", try)
				}
			}
			if _, err := l.Operation(ctx, scope, tt.call.OperationID); !errors.Is(err, ledger.ErrNotFound) {
				t.Fatalf("operation recorded: %v", err)
			}
		})
	}
	if n := count.n.Load(); n != 0 {
		t.Fatalf("%d hosts launched", n)
	}

	// Cancel before any Invoke records the operation cancelled; the
	// Invoke that comes later is answered cancelled without launching.
	if op, err := s.Cancel(ctx, scope, "op-early", "changed my mind"); err != nil || op.State != ledger.OperationCancelled {
		t.Fatalf("Cancel of an operation never invoked: %+v, %v", op, err)
	}
	o, err := s.Invoke(ctx, call("op-early", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o, err, launch.StateCancelled, supervise.ErrCancelled)
	if o.Launched || !strings.Contains(o.Reason, "changed my mind") || count.n.Load() != 0 {
		t.Fatalf("Invoke after an early Cancel: %+v", o)
	}
}

// TestConcurrentCallsOfOneOperation: 20 calls of one operation at once
// launch one host; every call gets the outcome the ledger holds.
func TestConcurrentCallsOfOneOperation(t *testing.T) {
	t.Parallel()
	d := newDispatcher()
	d.set("effect-1", "block")
	var count launches
	ctx, l, _, s := setup(t, func(c *supervise.Config) { c.Dispatcher, c.Observer = d, count.observe })
	c := call("op-twenty", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2)
	const n = 20
	outcomes := make([]*supervise.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outcomes[i], errs[i] = s.Invoke(ctx, c)
		}()
	}
	<-d.entered
	time.Sleep(50 * time.Millisecond) // let the other calls find the flight
	close(d.release)
	wg.Wait()
	view, err := l.Operation(ctx, scope, c.OperationID)
	if err != nil || view.Result == nil {
		t.Fatalf("operation after the calls: %+v, %v", view, err)
	}
	for i := range n {
		o := outcomes[i]
		wantState(t, o, errs[i], launch.StateSucceeded, nil)
		if o.Result.DataDigest != view.Result.DataDigest || o.Result.AttemptID != view.Result.AttemptID {
			t.Errorf("call %d: result %+v, the ledger's %+v", i, o.Result, view.Result)
		}
	}
	if got := count.n.Load(); got != 1 {
		t.Fatalf("%d launches, want 1", got)
	}
	if got := d.total(); got != 2 {
		t.Fatalf("%d dispatches, want 2", got)
	}
}

// TestResolveRefusedInFlight: while a live controller dispatches an
// effect, Resolve of it is refused, naming the controller; the consumed
// effect then ends confirmed, never not consumed.
func TestResolveRefusedInFlight(t *testing.T) {
	t.Parallel()
	d := newDispatcher()
	d.set("effect-1", "block")
	ctx, l, _, s := setup(t, func(c *supervise.Config) { c.Dispatcher = d })
	c := call("op-race", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := s.Invoke(ctx, c)
		done <- err
	}()
	<-d.entered
	unknown, err := l.ListUnknown(ctx)
	if err != nil || len(unknown) != 0 {
		t.Fatalf("ListUnknown while dispatching: %+v, %v", unknown, err)
	}
	inflight, err := l.ListInFlight(ctx)
	if err != nil || len(inflight) != 1 || inflight[0].ControllerID != s.ControllerID() {
		t.Fatalf("ListInFlight while dispatching: %+v, %v", inflight, err)
	}
	_, err = s.Resolve(ctx, scope, c.OperationID, "effect-1", ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused})
	var le *ledger.LeaseError
	if !errors.Is(err, ledger.ErrInFlight) || !errors.As(err, &le) || le.ControllerID != s.ControllerID() {
		t.Fatalf("Resolve in flight: %v", err)
	}
	close(d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	view, err := l.Operation(ctx, scope, c.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range view.Effects {
		if e.State != ledger.EffectConfirmed {
			t.Errorf("effect %s ended %s", e.LogicalEffectID, e.State)
		}
	}
}

// hangingLedger is a real ledger whose chosen writes hang, as behind a
// stalled fsync: they ignore their context until released.
type hangingLedger struct {
	ledger.Ledger
	record  atomic.Bool // RecordAttempt hangs
	renew   atomic.Bool // RenewLease hangs
	entered chan string
	release chan struct{}
}

// hangOn returns a hangingLedger over base and the function that releases
// its held writes, which the test's cleanup also calls.
func hangOn(t testing.TB, base ledger.Ledger) (*hangingLedger, func()) {
	hl := &hangingLedger{Ledger: base, entered: make(chan string, 4), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(hl.release) }) }
	t.Cleanup(release)
	return hl, release
}

func (h *hangingLedger) hang(what string) {
	h.entered <- what
	<-h.release
}

func (h *hangingLedger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	if h.record.Load() {
		h.hang("record")
	}
	return h.Ledger.RecordAttempt(ctx, f, ev)
}

func (h *hangingLedger) RenewLease(ctx context.Context, id string, ttl time.Duration) (ledger.Lease, error) {
	if h.renew.Load() {
		h.hang("renew")
	}
	return h.Ledger.RenewLease(ctx, id, ttl)
}

func leaseOf(t testing.TB, l ledger.Ledger, id string) ledger.Lease {
	t.Helper()
	all, err := l.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, ls := range all {
		if ls.ControllerID == id {
			return ls
		}
	}
	t.Fatalf("no lease of %q in %+v", id, all)
	return ledger.Lease{}
}

// TestCloseBounded: Close with a host that never answers and an evidence
// write that hangs returns at its bound with an error, leaves the lease
// to expire instead of releasing it, and another controller takes the
// attempt over once it has; when the write ends, nothing is left behind.
func TestCloseBounded(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	base := memory.New()
	hl := &hangingLedger{Ledger: base, entered: make(chan string, 4), release: make(chan struct{})}
	hl.record.Store(true)
	s, invoked := stuckSupervisor(t, ctx, hl, base, "op-stuck", 600*time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := s.Close(cctx)
	if !errors.Is(err, supervise.ErrDrainTimeout) {
		t.Fatalf("Close with a hung write: %v", err)
	}
	if w := <-hl.entered; w != "record" {
		t.Fatalf("hung in %s", w)
	}
	if ls := leaseOf(t, base, s.ControllerID()); ls.Released {
		t.Fatalf("lease released with a write pending: %+v", ls)
	}
	if _, err := s.Invoke(ctx, call("op-after", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)); !errors.Is(err, supervise.ErrClosed) {
		t.Fatalf("Invoke after Close: %v", err)
	}

	// Another controller takes the attempt over once the lease expired.
	other := newSupervisor(t, config(t, base, newLauncher(t, 0)))
	rec, err := other.Recover(ctx)
	if err != nil || len(rec.Fenced) != 0 {
		t.Fatalf("Recover while the closed controller's lease is live: %+v, %v", rec, err)
	}
	waitFor(t, func() bool { return !leaseOf(t, base, s.ControllerID()).Live })
	rec, err = other.Recover(ctx)
	if err != nil || len(rec.Fenced) != 1 || rec.Fenced[0].OperationID != "op-stuck" {
		t.Fatalf("Recover after the lease expired: %+v, %v", rec, err)
	}
	close(hl.release)
	<-invoked
}

// TestFailStop: a controller whose lease renewal does not land in time
// (paused, partitioned) answers none of its hosts allowed from then on;
// the effect it was about to dispatch is never dispatched, and once the
// lease has expired another controller takes the attempt over.
func TestFailStop(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	base := memory.New()
	hl, release := hangOn(t, base)
	auth := newAuthority()
	auth.block = "effect-1"
	d := newDispatcher()
	const ttl = 450 * time.Millisecond
	cfg := config(t, hl, newLauncher(t, 0))
	cfg.LeaseTTL, cfg.Authority, cfg.Dispatcher = ttl, auth, d
	s := newSupervisor(t, cfg)
	done := make(chan *supervise.Outcome, 1)
	go func() {
		o, _ := s.Invoke(ctx, call("op-paused", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2))
		done <- o
	}()
	<-auth.entered // the host asked for effect-1
	hl.renew.Store(true)
	<-hl.entered // a renewal hangs: the controller cannot know its lease is live
	waitFor(t, func() bool { return !leaseOf(t, base, s.ControllerID()).Live })
	close(auth.release)
	o := <-done
	if d.total() != 0 {
		t.Fatalf("dispatched %d effects after the lease lapsed", d.total())
	}
	answered := 0
	for _, ev := range o.Decisions {
		if ev.Method != "effect.request" {
			continue
		}
		answered++
		if ev.State == "allowed" || !(errors.Is(ev.Refusal, supervise.ErrLeaseLost) || errors.Is(ev.Refusal, ledger.ErrLeaseExpired)) {
			t.Fatalf("effect answered %s (%v) after the lease lapsed", ev.State, ev.Refusal)
		}
	}
	if answered == 0 {
		t.Fatalf("the host's effect request got no answer on record: %+v", o.Decisions)
	}
	if _, err := s.Invoke(ctx, call("op-later", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)); !errors.Is(err, supervise.ErrLeaseLost) {
		t.Fatalf("Invoke on a controller whose lease lapsed: %v", err)
	}
	// Another controller goes on with the operation: each effect once.
	otherCfg := config(t, base, newLauncher(t, 0))
	otherCfg.Dispatcher = d
	other := newSupervisor(t, otherCfg)
	again := call("op-paused", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 0)
	again.Deadline = time.Time{}
	o, err := other.Invoke(ctx, again)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("dispatches after the takeover: effect-1 %d, effect-2 %d", d.count("effect-1"), d.count("effect-2"))
	}
	release()
}

// TestTakeoverLeavesLiveAttempts: another controller never fences off a
// live controller's running attempt: Recover leaves it, and an Invoke of
// the same operation is answered running.
func TestTakeoverLeavesLiveAttempts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	l := memory.New()
	d := newDispatcher()
	d.set("effect-1", "block")
	cfgA := config(t, l, newLauncher(t, 0))
	cfgA.Dispatcher = d
	a := newSupervisor(t, cfgA)
	b := newSupervisor(t, config(t, l, newLauncher(t, 0)))
	c := call("op-owned", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2)
	done := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, c)
		done <- err
	}()
	<-d.entered
	rec, err := b.Recover(ctx)
	if err != nil || len(rec.Fenced) != 0 || len(rec.Unknown) != 0 || len(rec.InFlight) != 1 {
		t.Fatalf("Recover beside a live controller: %+v, %v", rec, err)
	}
	o, err := b.Invoke(ctx, c)
	wantState(t, o, err, launch.StateRunning, supervise.ErrRunning)
	if o.Launched || !strings.Contains(o.Reason, a.ControllerID()) {
		t.Fatalf("Invoke beside a live controller: %+v", o)
	}
	close(d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	o, err = b.Invoke(ctx, c)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if !o.Reconnected {
		t.Fatalf("after the owner finished: %+v", o)
	}
}

// stuckSupervisor starts a Supervisor on l whose host bootstraps and then
// never publishes (LeaseTTL ttl), runs operation op on it, and returns
// once the host has redeemed its bootstrap id; invoked is closed when
// that Invoke returns. The Supervisor is the caller's to close.
func stuckSupervisor(t *testing.T, ctx context.Context, l, view ledger.Ledger, op string, ttl time.Duration) (*supervise.Supervisor, <-chan struct{}) {
	t.Helper()
	cfg := config(t, l, newLauncher(t, 100*time.Millisecond, hostproc.EnvScenario+"=hang-before-publish"))
	cfg.LeaseTTL, cfg.CancelGrace = ttl, 300*time.Millisecond
	s, err := supervise.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	invoked := make(chan struct{})
	go func() {
		defer close(invoked)
		s.Invoke(ctx, call(op, "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	}()
	waitFor(t, func() bool {
		v, err := view.Operation(ctx, scope, op)
		return err == nil && len(v.Bootstraps) == 1 && v.Bootstraps[0].Redeemed
	})
	return s, invoked
}

// waitFor polls cond until it holds, failing the test after a minute.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// flakyConfirm is a real ledger whose first ConfirmEffect commits and
// then reports an ambiguous outcome, as a commit whose answer was lost.
type flakyConfirm struct {
	ledger.Ledger
	failed atomic.Int64
}

func (f *flakyConfirm) ConfirmEffect(ctx context.Context, fence ledger.Fence, id string, d canon.Digest, receipt string) (ledger.Effect, error) {
	e, err := f.Ledger.ConfirmEffect(ctx, fence, id, d, receipt)
	if err == nil && f.failed.Add(1) == 1 {
		return ledger.Effect{}, fmt.Errorf("commit answer lost: %w", ledger.ErrOutcomeUnknown)
	}
	return e, err
}

// TestConfirmRepeatedAfterAmbiguousError: a confirmation whose outcome is
// unknown is repeated (it is idempotent) and the consumed effect ends
// confirmed, not unknown.
func TestConfirmRepeatedAfterAmbiguousError(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	fl := &flakyConfirm{Ledger: memory.New()}
	d := newDispatcher()
	cfg := config(t, fl, newLauncher(t, 0))
	cfg.Dispatcher = d
	s := newSupervisor(t, cfg)
	o, err := s.Invoke(ctx, call("op-flaky", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2))
	wantState(t, o, err, launch.StateSucceeded, nil)
	if fl.failed.Load() < 2 || d.total() != 2 {
		t.Fatalf("confirmations %d, dispatches %d", fl.failed.Load(), d.total())
	}
	for _, e := range o.Effects {
		if e.State != ledger.EffectConfirmed {
			t.Fatalf("effect %s ended %s", e.LogicalEffectID, e.State)
		}
	}
}
