package supervise_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// interposer is a ledger on which another controller acts once, between
// Invoke's read of the operation and the write that records its first
// launch: before runs first, and a non-nil error it returns is that
// launch's answer instead of the ledger's.
type interposer struct {
	ledger.Ledger
	before   func(a ledger.AttemptLaunch) error
	once     sync.Once
	launches atomic.Int32
}

func (l *interposer) LaunchAttempt(ctx context.Context, a ledger.AttemptLaunch) (ledger.Fence, error) {
	l.launches.Add(1)
	var err error
	l.once.Do(func() { err = l.before(a) })
	if err != nil {
		return ledger.Fence{}, err
	}
	return l.Ledger.LaunchAttempt(ctx, a)
}

// events collects the Supervisor's events.
type events struct {
	mu  sync.Mutex
	all []supervise.Event
}

func (e *events) observe(ev supervise.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// count returns how many events of kind k (and, for requests, method m)
// arrived.
func (e *events) count(k supervise.EventKind, m string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.all {
		if ev.Kind == k && (m == "" || string(ev.Method) == m) {
			n++
		}
	}
	return n
}

// setupInterposed is setup on a ledger where before runs at the first
// launch.
func setupInterposed(t *testing.T, before func(l ledger.Ledger, a ledger.AttemptLaunch) error) (context.Context, ledger.Ledger, *interposer, *events, *supervise.Supervisor) {
	t.Helper()
	ev := &events{}
	var il *interposer
	ctx, l, _, s := setup(t, func(c *supervise.Config) {
		il = &interposer{Ledger: c.Ledger}
		il.before = func(a ledger.AttemptLaunch) error { return before(il.Ledger, a) }
		c.Ledger, c.Observer = il, ev.observe
	})
	return ctx, l, il, ev, s
}

// TestLaunchLosesItsGeneration: another controller starts an attempt of
// the operation between Invoke's read and its launch, taking the
// generation the launch was prepared for. The launch records nothing, its
// host never bootstraps, and Invoke prepares another launch from a fresh
// read, which fences the other attempt off and succeeds.
func TestLaunchLosesItsGeneration(t *testing.T) {
	t.Parallel()
	ctx, l, il, ev, s := setupInterposed(t, func(l ledger.Ledger, a ledger.AttemptLaunch) error {
		other := a
		other.AttemptID, other.BootstrapID = "attempt-of-another-controller", "bootstrap-of-another-controller"
		_, err := l.LaunchAttempt(context.Background(), other)
		return err
	})
	o, err := s.Invoke(ctx, call("op-race", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o, err, launch.StateSucceeded, nil)
	if o.Generation != 2 || il.launches.Load() != 2 {
		t.Fatalf("generation %d after %d launches, want generation 2 after 2", o.Generation, il.launches.Load())
	}
	v, err := l.Operation(ctx, scope, "op-race")
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Attempts) != 2 || v.Attempts[0].AttemptID != "attempt-of-another-controller" || v.Attempts[1].AttemptID != o.AttemptID ||
		v.Attempts[0].Admitted || len(v.Bootstraps) != 2 {
		t.Fatalf("attempts %+v, bootstraps %+v", v.Attempts, v.Bootstraps)
	}
	evs, err := l.Evidence(ctx, scope, "op-race")
	if err != nil || len(evs) != 1 || evs[0].AttemptID != o.AttemptID {
		t.Fatalf("evidence %+v, %v", evs, err)
	}
	// One host bootstrapped: the one whose launch was recorded.
	if n, b := ev.count(supervise.EventAttempt, ""), ev.count(supervise.EventRequest, "bootstrap"); n != 1 || b != 1 {
		t.Fatalf("%d attempt events and %d bootstraps, want 1 and 1", n, b)
	}
}

// TestLaunchOfAnOperationCancelledMeanwhile: another controller creates
// and cancels the operation before Invoke's launch lands; the launch is
// refused, nothing is recorded of it, and Invoke answers cancelled from
// the ledger.
func TestLaunchOfAnOperationCancelledMeanwhile(t *testing.T) {
	t.Parallel()
	ctx, l, _, ev, s := setupInterposed(t, func(l ledger.Ledger, a ledger.AttemptLaunch) error {
		if _, err := l.CreateOperation(context.Background(), a.Operation); err != nil {
			return err
		}
		_, err := l.Cancel(context.Background(), a.Operation.Scope, a.Operation.OperationID, "changed my mind")
		return err
	})
	o, err := s.Invoke(ctx, call("op-cancelled", "example.echo@1.0.0", map[string]any{"text": "x"}, 0))
	wantState(t, o, err, launch.StateCancelled, supervise.ErrCancelled)
	if o.Launched || o.AttemptID != "" || o.Evidence != nil {
		t.Fatalf("outcome %+v", o)
	}
	v, err := l.Operation(ctx, scope, "op-cancelled")
	if err != nil || len(v.Attempts) != 0 || len(v.Bootstraps) != 0 {
		t.Fatalf("view %+v, %v", v, err)
	}
	if n := ev.count(supervise.EventRequest, ""); n != 0 {
		t.Fatalf("%d requests decided for a launch that was never recorded", n)
	}
}

// TestLaunchWriteFails: the write that records the launch fails (its
// outcome unknown); Invoke returns no outcome and an error that says so,
// the host is stopped before it bootstraps, and the next Invoke of the
// operation succeeds.
func TestLaunchWriteFails(t *testing.T) {
	t.Parallel()
	lost := errors.New("the connection dropped during commit")
	ctx, _, _, ev, s := setupInterposed(t, func(ledger.Ledger, ledger.AttemptLaunch) error {
		return errors.Join(lost, ledger.ErrOutcomeUnknown)
	})
	c := call("op-lost", "example.echo@1.0.0", map[string]any{"text": "x"}, 0)
	o, err := s.Invoke(ctx, c)
	if o != nil || !errors.Is(err, lost) || !errors.Is(err, ledger.ErrOutcomeUnknown) {
		t.Fatalf("Invoke = %+v, %v; want no outcome and the ledger's error", o, err)
	}
	if n := ev.count(supervise.EventRequest, ""); n != 0 {
		t.Fatalf("%d requests decided for a launch that was never recorded", n)
	}
	o, err = s.Invoke(ctx, c)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if o.Generation != 1 {
		t.Fatalf("generation %d, want 1: the failed launch recorded nothing", o.Generation)
	}
}
