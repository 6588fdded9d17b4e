package catalogue_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

func TestMain(m *testing.M) {
	contain.Init() // the contained hosts of these tests start as this binary
	longtest.ShrinkRapid()
	os.Exit(testbin.RunWithHostsim(m, &hostsimPath))
}

func newLauncher(t testing.TB) *launch.Launcher {
	t.Helper()
	l, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: t.TempDir(), Grace: 2 * time.Second,
		WaitDelay: 500 * time.Millisecond, Verifier: environment.Trust{},
		AllowRootHost: true}) // tests run as whoever runs them, root included
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// authority is the catalogue as the Supervisor's Authority, the way an
// embedder adapts it: CheckAdmission and CheckEffect decide. before, when
// set, runs first on every admission (the tests' window into
// invoke.admit).
type authority struct {
	c      *catalogue.Catalogue
	before func(a port.Admission)
}

func (a authority) Admit(ctx context.Context, adm port.Admission) (port.Verdict, error) {
	if a.before != nil && !adm.BeforeLaunch {
		a.before(adm)
	}
	return verdict(a.c.CheckAdmission(ctx, adm.Operation), false)
}

func (a authority) Effect(ctx context.Context, q port.EffectQuestion) (port.Verdict, error) {
	return verdict(a.c.CheckEffect(ctx, q.Operation, q.Request.ConnectionRef, q.Request.Operation), true)
}

func verdict(err error, holdForConsent bool) (port.Verdict, error) {
	switch {
	case err == nil:
		return port.Verdict{Decision: port.Allow}, nil
	case holdForConsent && errors.Is(err, catalogue.ErrConsentRequired):
		return port.Verdict{Decision: port.Hold, Reason: err.Error()}, nil
	case errors.Is(err, catalogue.ErrConsentRequired), errors.Is(err, catalogue.ErrUnknownCapability),
		errors.Is(err, catalogue.ErrNotPinned), errors.Is(err, catalogue.ErrPinMismatch):
		return port.Verdict{Decision: port.Refuse, Reason: err.Error()}, nil
	}
	return port.Verdict{}, err
}

// recorder is the Reserver as the Supervisor sees it (the catalogue),
// noting each release.
type recorder struct {
	*catalogue.Catalogue
	events *events
}

func (r *recorder) Release(ctx context.Context, f ledger.Fence) error {
	r.events.add("release " + f.OperationID)
	return r.Catalogue.Release(ctx, f)
}

// events is an ordered log of what happened, from any goroutine, and the
// first time each thing happened as a channel to wait on.
type events struct {
	mu   sync.Mutex
	log  []string
	seen map[string]chan struct{}
}

func newEvents() *events { return &events{seen: map[string]chan struct{}{}} }

func (e *events) ch(what string) chan struct{} {
	c, ok := e.seen[what]
	if !ok {
		c = make(chan struct{})
		e.seen[what] = c
	}
	return c
}

func (e *events) add(what string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.log = append(e.log, what)
	c := e.ch(what)
	select {
	case <-c:
	default:
		close(c)
	}
}

// wait blocks until what happened, or fails the test when ctx ends.
func (e *events) wait(ctx context.Context, t testing.TB, what string) {
	e.mu.Lock()
	c := e.ch(what)
	e.mu.Unlock()
	select {
	case <-c:
	case <-ctx.Done():
		t.Errorf("waiting for %q: %v (events: %v)", what, ctx.Err(), e.snapshot())
	}
}

func (e *events) snapshot() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.log...)
}

func (e *events) index(what string) int {
	for i, w := range e.snapshot() {
		if w == what {
			return i
		}
	}
	return -1
}

// waitingHandler turns the catalogue's "waiting for a reservation" debug
// record into an event naming the waiting operation.
type waitingHandler struct{ events *events }

func (h waitingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h waitingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h waitingHandler) WithGroup(string) slog.Handler            { return h }
func (h waitingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "catalogue: waiting for a reservation" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "operation" {
				h.events.add("wait " + a.Value.String())
			}
			return true
		})
	}
	return nil
}

// hostRig is a catalogue on a bolt ledger with the simulated host,
// example.locked@1.0.0 (serial_per_resource on "account") admitted
// through the host's own discovery.
type hostRig struct {
	store  catalogue.Store
	cat    *catalogue.Catalogue
	ln     *launch.Launcher
	events *events
}

func newHostRig(t *testing.T, ms ...manifest.CapabilityManifest) *hostRig {
	r := &hostRig{events: newEvents(), ln: newLauncher(t)}
	r.store = openBolt(t)
	var err error
	r.cat, err = catalogue.New(catalogue.Config{Store: r.store, Discover: agent.Discover(r.ln), PollInterval: 5 * time.Millisecond,
		Logger: slog.New(waitingHandler{r.events})})
	if err != nil {
		t.Fatal(err)
	}
	mustAdmit(t, r.cat, catalogue.Admission{Binding: binding(t, 1, ms...), Audience: everyone("org-a")})
	return r
}

// run prepares and invokes op through a Supervisor bound to the pinned
// binding, with before as the admission hook.
func (r *hostRig) run(ctx context.Context, t *testing.T, op, capability string, args map[string]any, wait time.Duration,
	before func(port.Admission)) (*supervise.Outcome, error) {
	plan, err := r.cat.Prepare(ctx, catalogue.Request{Scope: scopeA, OperationID: op, CapabilityID: capability})
	if err != nil {
		return nil, err
	}
	s, err := supervise.New(supervise.Config{Ledger: r.store, Launcher: r.ln, Provider: plan.Binding,
		HostPythonVersion: hostsim.DefaultPythonVersion, SeatID: "seat-a", RuntimeBindingID: "runtime-a", Workspace: "/workspace-a",
		Authority: authority{c: r.cat, before: before}, Reserver: &recorder{Catalogue: r.cat, events: r.events},
		Grants: port.Grants{Credentials: []string{"gmail"}}})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := s.Close(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("closing the supervisor of %s: %v", op, err)
		}
	}()
	return s.Invoke(ctx, supervise.Call{Scope: scopeA, OperationID: op, CapabilityID: capability, Arguments: args,
		Deadline: time.Now().Add(time.Minute), ReservationWait: wait})
}

// both runs op-1 and op-2 of example.locked@1.0.0 at once, on the two
// accounts, each after start(op) returns (when set), with admit as the
// admission hook, and fails the test unless both succeed.
func (r *hostRig) both(ctx context.Context, t *testing.T, accounts [2]string, start func(op string), admit func(port.Admission)) {
	var wg sync.WaitGroup
	outcomes := make([]error, 2)
	for i, op := range []string{"op-1", "op-2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if start != nil {
				start(op)
			}
			_, outcomes[i] = r.run(ctx, t, op, "example.locked@1.0.0", map[string]any{"text": op, "account": accounts[i]}, time.Minute, admit)
		}()
	}
	wg.Wait()
	for i, err := range outcomes {
		if err != nil {
			t.Fatalf("invocation %d: %v", i+1, err)
		}
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestSerialPerResourceWithHosts: two serial_per_resource invocations
// with real simulated-host processes. On the same key the second waits
// while the first runs and is admitted only after the first released it;
// on different keys both are inside invoke.admit at the same time.
func TestSerialPerResourceWithHosts(t *testing.T) {
	locked := capManifest(t, "example.locked@1.0.0", "serial_per_resource", []string{"account"}, nil, nil)
	t.Run("same key", func(t *testing.T) {
		ctx := testContext(t)
		r := newHostRig(t, locked)
		r.both(ctx, t, [2]string{"acme", "acme"}, func(op string) {
			if op == "op-2" {
				// op-2 starts once op-1 is inside invoke.admit, holding
				// the key.
				r.events.wait(ctx, t, "admit op-1")
			}
		}, func(a port.Admission) {
			r.events.add("admit " + a.Operation.OperationID)
			if a.Operation.OperationID == "op-1" {
				// Hold op-1 until op-2 is seen waiting for the
				// reservation.
				r.events.wait(ctx, t, "wait op-2")
			}
		})
		got := r.events.snapshot()
		if a1, w2, rel1, a2 := r.events.index("admit op-1"), r.events.index("wait op-2"), r.events.index("release op-1"), r.events.index("admit op-2"); !(a1 < w2 && w2 < rel1 && rel1 < a2) {
			t.Fatalf("events %v: want op-1 admitted, op-2 waiting, op-1 released, op-2 admitted, in that order", got)
		}
		if rs, err := r.cat.Reservations(ctx, scopeA); err != nil || len(rs) != 0 {
			t.Fatalf("reservations after both ended: %+v, %v", rs, err)
		}
	})
	t.Run("different keys", func(t *testing.T) {
		ctx := testContext(t)
		r := newHostRig(t, locked)
		r.both(ctx, t, [2]string{"acme", "globex"}, nil, func(a port.Admission) {
			me := a.Operation.OperationID
			r.events.add("admit " + me)
			// Each stays in invoke.admit until the other is there too:
			// both hold their keys at once.
			other := map[string]string{"op-1": "op-2", "op-2": "op-1"}[me]
			r.events.wait(ctx, t, "admit "+other)
		})
		if r.events.index("wait op-1") >= 0 || r.events.index("wait op-2") >= 0 {
			t.Fatalf("events %v: an invocation on another key waited", r.events.snapshot())
		}
	})
	t.Run("no wait", func(t *testing.T) {
		ctx := testContext(t)
		r := newHostRig(t, locked)
		var wg sync.WaitGroup
		wg.Add(1)
		var first error
		go func() {
			defer wg.Done()
			_, first = r.run(ctx, t, "op-1", "example.locked@1.0.0", map[string]any{"text": "a", "account": "acme"}, 0,
				func(port.Admission) {
					r.events.add("admit op-1")
					r.events.wait(ctx, t, "op-2 answered")
				})
		}()
		r.events.wait(ctx, t, "admit op-1")
		o, err := r.run(ctx, t, "op-2", "example.locked@1.0.0", map[string]any{"text": "b", "account": "acme"}, 0, nil)
		r.events.add("op-2 answered")
		wg.Wait()
		if first != nil {
			t.Fatalf("the holder: %v", first)
		}
		var re *cataloguestore.ReservationError
		if !errors.Is(err, supervise.ErrRefused) || !errors.As(err, &re) || re.Holder.Holder.OperationID != "op-1" {
			t.Fatalf("a call that cannot get its reservation: %v, want refused naming op-1", err)
		}
		if o.Launched || o.Evidence == nil || o.Evidence.Launched {
			t.Fatalf("outcome %+v: want nothing launched and the evidence recorded", o)
		}
	})
}

// TestRevocationAtAdmit: consent revoked after an attempt was launched
// refuses it at its invoke.admit.
func TestRevocationAtAdmit(t *testing.T) {
	ctx := testContext(t)
	r := newHostRig(t, capManifest(t, "example.mail@1.0.0", "parallel_safe", nil, []string{"gmail"}, nil))
	work := cataloguestore.Consent{Scope: scopeA, Account: "work", Capabilities: []string{"example.mail@1.0.0"}, Credentials: []string{"gmail"},
		EffectKinds: []string{"read", "external_communication"}}
	if _, err := r.cat.Grant(ctx, work); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(ctx, t, "op-1", "example.mail@1.0.0", map[string]any{"text": "hello"}, 0, nil); err != nil {
		t.Fatalf("with consent: %v", err)
	}
	o, err := r.run(ctx, t, "op-2", "example.mail@1.0.0", map[string]any{"text": "hello"}, 0, func(port.Admission) {
		// The host is running and has asked for admission: revoke now.
		if _, err := r.cat.Revoke(ctx, cataloguestore.Consent{Scope: scopeA, Account: "work", Credentials: []string{"gmail"}}); err != nil {
			t.Error(err)
		}
	})
	if !errors.Is(err, supervise.ErrRefused) || !o.Launched {
		t.Fatalf("revoked while launched: %v (launched %v), want refused at admission", err, o != nil && o.Launched)
	}
	if view, err := r.store.Operation(ctx, scopeA, "op-2"); err != nil || view.Attempts[0].Admitted {
		t.Fatalf("op-2 %+v, %v: want its attempt not admitted", view, err)
	}
	// The next run is refused before anything is launched.
	_, err = r.run(ctx, t, "op-3", "example.mail@1.0.0", map[string]any{"text": "hello"}, 0, nil)
	wantIs(t, "after revocation", err, catalogue.ErrConsentRequired)
}
