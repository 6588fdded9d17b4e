package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

var scope = ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}

// testBinding is the simulated provider's demo inventory (echo,
// two_effects, fail) plus example.redeliver@1.0.0, a copy of two_effects'
// manifest under the name the simulated host maps to its redeliver
// capability.
func testBinding(testing.TB) manifest.ProviderBinding {
	ms := hostsim.DemoManifests()
	for _, m := range ms {
		if m.ID.Name == "two_effects" {
			m.ID.Name = "redeliver"
			ms = append(ms, m)
			break
		}
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		panic(err) // constant manifests, checked by hostsim's tests
	}
	b := hostsim.DemoBinding()
	b.Manifests, b.ManifestDigest = ms, d
	return b
}

// openBolt opens a bolt ledger in dir, closed when the test ends.
func openBolt(t testing.TB, dir string) *bolt.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(dir, "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// newLauncher returns a launcher of the simulated host with env as its
// whole environment.
func newLauncher(t testing.TB, grace time.Duration, env ...string) *launch.Launcher {
	t.Helper()
	if grace == 0 {
		grace = 2 * time.Second
	}
	l, err := launch.New(launch.Config{Interpreter: hostsimPath, Env: env, Dir: t.TempDir(), Grace: grace,
		WaitDelay: 500 * time.Millisecond, Verifier: environment.Trust{},
		// Contained, with two concessions to the loop test's fixed budget
		// (a thousand launches in a minute, under the race detector): the
		// small init, which starts faster than this test binary
		// re-executed, and no network namespace, whose creation costs
		// each launch several milliseconds more (launch's tests cover
		// that layer).
		Containment:   contain.Config{InitPath: testbin.InitBeside(hostsimPath), Off: contain.LayerNetwork},
		AllowRootHost: true}) // tests run as whoever runs them, root included
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// config is a Supervisor config over l with the simulated host.
func config(t testing.TB, l ledger.Ledger, ln *launch.Launcher) supervise.Config {
	return supervise.Config{Ledger: l, Launcher: ln, Provider: testBinding(t), HostPythonVersion: hostsim.DefaultPythonVersion,
		SeatID: "seat-a", RuntimeBindingID: "runtime-a", Workspace: "/workspace-a"}
}

func newSupervisor(t testing.TB, cfg supervise.Config) *supervise.Supervisor {
	t.Helper()
	s, err := supervise.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeSupervisor(t, s) })
	return s
}

// closeSupervisor closes s, failing the test if it does not drain.
func closeSupervisor(t testing.TB, s *supervise.Supervisor) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		t.Errorf("closing the supervisor: %v", err)
	}
}

func call(op, capability string, args map[string]any, budget int64) supervise.Call {
	return supervise.Call{Scope: scope, OperationID: op, CapabilityID: capability, Arguments: args,
		EffectBudget: budget, Deadline: time.Now().Add(30 * time.Second).Truncate(time.Millisecond)}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dispatcher is a scripted credential holder: it counts every call per
// logical effect, and answers by the mode set for the effect id
// (default: consumed, receipt "rcpt-<id>").
type dispatcher struct {
	mu    sync.Mutex
	calls map[string]int
	mode  map[string]string // "", "not-consumed", "uncertain", "block"
	// entered receives the effect id when a "block" dispatch starts;
	// release lets it go on, consumed.
	entered chan string
	release chan struct{}
}

func newDispatcher() *dispatcher {
	return &dispatcher{calls: map[string]int{}, mode: map[string]string{}, entered: make(chan string, 16), release: make(chan struct{})}
}

func (d *dispatcher) set(id, mode string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mode[id] = mode
}

func (d *dispatcher) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[id]
}

func (d *dispatcher) total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, c := range d.calls {
		n += c
	}
	return n
}

func (d *dispatcher) Dispatch(ctx context.Context, x port.Dispatch) (port.Receipt, error) {
	id := x.LogicalEffectID
	d.mu.Lock()
	d.calls[id]++
	mode := d.mode[id]
	d.mu.Unlock()
	switch mode {
	case "not-consumed":
		return port.Receipt{}, port.NotConsumed("the service refused " + id)
	case "uncertain":
		return port.Receipt{}, errors.New("connection reset while dispatching " + id)
	case "block":
		d.entered <- id
		select {
		case <-d.release:
		case <-ctx.Done():
			return port.Receipt{}, ctx.Err()
		}
	}
	return port.Receipt{ReceiptID: "rcpt-" + id, Result: map[string]any{"effect": id, "authorization": x.AuthorizationID}}, nil
}

// authority is a scripted Authority: admission and each effect id get the
// decision set for them (default allow); "block" waits for release first.
type authority struct {
	mu      sync.Mutex
	admit   port.Decision
	effect  map[string]port.Decision
	block   string // "admit" or an effect id
	entered chan struct{}
	release chan struct{}
}

func newAuthority() *authority {
	return &authority{effect: map[string]port.Decision{}, entered: make(chan struct{}, 4), release: make(chan struct{})}
}

func (a *authority) verdict(d port.Decision, what string) port.Verdict {
	if d == "" {
		d = port.Allow
	}
	return port.Verdict{Decision: d, Reason: fmt.Sprintf("test authority: %s %s", d, what)}
}

func (a *authority) wait(ctx context.Context, what string) {
	a.mu.Lock()
	b := a.block
	a.mu.Unlock()
	if b == what {
		a.entered <- struct{}{}
		select {
		case <-a.release:
		case <-ctx.Done():
		}
	}
}

func (a *authority) Admit(ctx context.Context, _ port.Admission) (port.Verdict, error) {
	a.wait(ctx, "admit")
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verdict(a.admit, "admission"), nil
}

func (a *authority) Effect(ctx context.Context, q port.EffectQuestion) (port.Verdict, error) {
	a.wait(ctx, q.Request.LogicalEffectID)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.verdict(a.effect[q.Request.LogicalEffectID], q.Request.LogicalEffectID), nil
}

// wantState fails unless the outcome has state st and err agrees: nil for
// a success, an *OutcomeError wrapping sentinel otherwise.
func wantState(t testing.TB, o *supervise.Outcome, err error, st launch.State, sentinel error) {
	t.Helper()
	if o == nil {
		t.Fatalf("no outcome; err = %v", err)
	}
	if o.State != st {
		t.Fatalf("state %s, want %s (reason %q, err %v)", o.State, st, o.Reason, err)
	}
	if st == launch.StateSucceeded {
		if err != nil {
			t.Fatalf("success with err %v", err)
		}
		return
	}
	var oe *supervise.OutcomeError
	if !errors.As(err, &oe) || oe.Outcome != o || !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want an *OutcomeError wrapping %v", err, sentinel)
	}
}

// setup returns a test context and a Supervisor of the simulated host on a
// fresh bolt ledger with a scripted dispatcher; mutate, when set, changes
// the config first.
func setup(t *testing.T, mutate func(*supervise.Config)) (context.Context, *bolt.Ledger, *dispatcher, *supervise.Supervisor) {
	t.Helper()
	l := openBolt(t, t.TempDir())
	d := newDispatcher()
	cfg := config(t, l, newLauncher(t, 0))
	cfg.Dispatcher = d
	if mutate != nil {
		mutate(&cfg)
	}
	return testCtx(t), l, d, newSupervisor(t, cfg)
}
