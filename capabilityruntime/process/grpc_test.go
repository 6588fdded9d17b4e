//go:build linux

package process_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
)

func TestGRPCRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	b := newBackend(t, cfg)
	root, entry := runtimeFile(t, "echo")
	inst := start(t, b, spec(root, entry, "", 0)) // empty protocol: the gRPC one
	params := map[string]any{"n": 42, "f": 1.5, "s": "x", "list": []any{true, nil}, "obj": map[string]any{"k": "v"}}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	resp, err := inst.Execute(ctx, &capabilityruntime.Request{Params: params, CorrelationID: "trace-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 42.0, "f": 1.5, "s": "x", "list": []any{true, nil}, "obj": map[string]any{"k": "v"}}
	if diff := cmp.Diff(want, resp.Result["params"]); diff != "" {
		t.Errorf("params as the runtime saw them (-want +got):\n%s", diff)
	}
	if resp.Result["type"] != "acme:"+fileBase(entry) || resp.Result["version"] != "1.0.0" {
		t.Errorf("runtime saw type %v version %v", resp.Result["type"], resp.Result["version"])
	}
	if id, _ := resp.Result["execution_id"].(string); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("execution_id %q is not 128 random bits in hex", id)
	}
	wantInit := map[string]any{"protocol": capabilityruntime.ProtocolV1, "metadata": map[string]any{
		"capability_runtime_type": "acme:" + fileBase(entry), "capability_runtime_version": "1.0.0",
	}}
	if diff := cmp.Diff(wantInit, resp.Result["init"]); diff != "" {
		t.Errorf("Initialize as the runtime saw it (-want +got):\n%s", diff)
	}
	if resp.Result["correlation_id"] != "trace-1" {
		t.Errorf("correlation_id %v, want trace-1", resp.Result["correlation_id"])
	}
	// The deadline travels as timeout_ms (and as the gRPC deadline): the
	// runtime sees at most the 30 s the caller allowed, and some of it.
	if d, _ := resp.Result["deadline_ms"].(float64); d <= 0 || d > 30000 {
		t.Errorf("runtime saw a deadline %v ms away, want within (0, 30000]", d)
	}
	pid := pidOf(t, resp)

	// A warm worker serves the next calls; an explicit execution id is kept.
	for range 3 {
		resp, err = inst.Execute(ctx, &capabilityruntime.Request{ExecutionID: "exec-7"})
		if err != nil {
			t.Fatal(err)
		}
		if got := pidOf(t, resp); got != pid {
			t.Fatalf("call served by pid %d, want the warm worker %d", got, pid)
		}
		if resp.Result["execution_id"] != "exec-7" {
			t.Fatalf("execution_id %v, want exec-7", resp.Result["execution_id"])
		}
	}
	if err := inst.Health(ctx); err != nil {
		t.Fatalf("Health: %v", err)
	}
	if err := closeInstance(t, inst); err != nil {
		t.Fatalf("Close: %v", err)
	}
	requireNoLeftovers(t, entry, cfg.TempDir)
	if _, err := inst.Execute(ctx, nil); !errors.Is(err, process.ErrClosed) {
		t.Fatalf("Execute after Close: %v, want ErrClosed", err)
	}
	if err := inst.Health(ctx); !errors.Is(err, process.ErrClosed) {
		t.Fatalf("Health after Close: %v, want ErrClosed", err)
	}
	if err := closeInstance(t, inst); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestHealthStartsAWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", capabilityruntime.ProtocolV1, 1, nil)
	if n := len(processes(f.entry)); n != 0 {
		t.Fatalf("Start ran %d processes; workers start on demand", n)
	}
	if err := f.inst.Health(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(processes(f.entry)); n != 1 {
		t.Fatalf("after Health: %d processes, want the one worker that answered", n)
	}
	f.close(t)
}

// TestHealthAsksTheWorker: Health reports the runtime's own answer, and a
// worker that answers not ready is kept (it answered; it is not broken).
func TestHealthAsksTheWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "unready", "", 1, nil)
	pid := pidOf(t, f.call(t, nil))
	err := f.inst.Health(t.Context())
	if !errors.Is(err, process.ErrUnhealthy) || !strings.Contains(err.Error(), "warming up") {
		t.Fatalf("Health: %v, want ErrUnhealthy with the runtime's message", err)
	}
	if pidOf(t, f.call(t, nil)) != pid {
		t.Fatal("a worker that answered not ready was replaced")
	}
	f.close(t)
}

// TestPoolNeverExceedsMaxWorkers runs 50 concurrent calls on a pool of 3,
// one in five abandoned by its caller once it is running in a worker (which
// discards that worker while other calls need replacements), and samples
// /proc throughout: at no moment do more than 3 processes of the runtime
// exist, zombies included.
func TestPoolNeverExceedsMaxWorkers(t *testing.T) {
	t.Parallel()
	const calls, maxWorkers = 50, 3
	cfg := testConfig(t)
	b := newBackend(t, cfg)
	root, entry := runtimeFile(t, "echo")
	inst := start(t, b, spec(root, entry, "", maxWorkers))

	stop := make(chan struct{})
	var peak, samples int
	seen := map[int]bool{}
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pids := processes(entry)
			peak = max(peak, len(pids))
			for _, p := range pids {
				seen[p] = true
			}
			samples++
		}
	}()

	var (
		mu        sync.Mutex
		served    = map[int]bool{}
		abandoned int
		wg        sync.WaitGroup
	)
	for i := range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			params := map[string]any{"sleep_ms": 10, "i": i}
			if i%5 == 4 {
				// Abandoned: the runtime would sleep a minute; the caller
				// gives up as soon as the call is running in a worker, and
				// the runtime takes 100 ms to notice, so that the discarded
				// worker's stop overlaps the start of its replacement.
				marker := fmt.Sprint("abandon-", i)
				params["sleep_ms"], params["touch"], params["linger_ms"] = 60000, marker, 100
				go func() {
					defer cancel()
					for ctx.Err() == nil {
						if _, err := os.Stat(filepath.Join(root, marker)); err == nil {
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				}()
			}
			resp, err := inst.Execute(ctx, &capabilityruntime.Request{Params: params})
			mu.Lock()
			defer mu.Unlock()
			if i%5 == 4 {
				if !errors.Is(err, context.Canceled) {
					t.Errorf("abandoned call %d: %v, want context.Canceled", i, err)
				}
				abandoned++
				return
			}
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			served[pidOf(t, resp)] = true
		})
	}
	wg.Wait()
	if err := closeInstance(t, inst); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-sampled
	t.Logf("%d samples of /proc: peak %d processes, %d distinct processes; %d workers served, %d calls abandoned",
		samples, peak, len(seen), len(served), abandoned)
	if peak > maxWorkers {
		t.Errorf("/proc showed %d processes of the runtime at once, MaxWorkers is %d", peak, maxWorkers)
	}
	// Each abandoned call discarded its worker, so replacements were
	// started while discarded workers stopped: the case the slot
	// accounting is for.
	if len(seen) <= maxWorkers || samples < 10 {
		t.Errorf("the sampler saw %d distinct processes in %d samples: no worker was replaced, the check proves little", len(seen), samples)
	}
	requireNoLeftovers(t, entry, cfg.TempDir)
}

func TestCancelledCallDiscardsWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", "", 1, nil)
	first := pidOf(t, f.call(t, nil))

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		// The runtime marks the call's arrival with a file in its working
		// directory (the root), then sleeps a minute.
		_, err := f.inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"touch": "arrived", "sleep_ms": 60000}})
		done <- err
	}()
	waitFor(t, "the call to reach the worker", func() bool {
		_, err := os.Stat(filepath.Join(f.root, "arrived"))
		return err == nil
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v, want context.Canceled", err)
	}
	resp := f.call(t, nil)
	if second := pidOf(t, resp); second == first {
		t.Fatalf("the cancelled call's worker %d served again", first)
	}
	waitFor(t, "the discarded worker to be gone", func() bool { return !alive(first) })
	f.close(t)
}

func TestDeadlineMidCallDiscardsWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", "", 1, nil)
	first := pidOf(t, f.call(t, nil)) // warm: the next call reaches the worker at once
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	// deaf: the runtime does not notice the deadline itself (one that did
	// would answer, and an answered call leaves its worker reusable).
	_, err := f.inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"sleep_ms": 60000, "deaf": true}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call past its deadline: %v, want DeadlineExceeded", err)
	}
	waitFor(t, "the worker of the call past its deadline to be gone", func() bool { return !alive(first) })
	if pidOf(t, f.call(t, nil)) == first {
		t.Fatal("the worker of the call past its deadline served again")
	}
	f.close(t)
}

func TestCrashDiscardsWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", "", 1, nil)
	first := pidOf(t, f.call(t, nil))
	// The worker exits mid-call: a transport error, not the caller's doing.
	_, err := f.inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"crash": true}})
	if !errors.Is(err, process.ErrWorkerFailed) {
		t.Fatalf("crashed call: %v, want ErrWorkerFailed", err)
	}
	idle := pidOf(t, f.call(t, nil)) // a dead worker reused would fail here
	if idle == first {
		t.Fatal("the crashed worker served again")
	}

	// A worker that dies while idle is replaced before a call reaches it.
	if err := syscall.Kill(idle, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed idle worker to be reaped", func() bool { return !alive(idle) && len(processes(f.entry)) == 0 })
	if pidOf(t, f.call(t, nil)) == idle {
		t.Fatal("a dead worker's pid answered")
	}
	f.close(t)
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour string
		deadline  time.Duration
		want      []error
		stderr    string
	}{
		{"crashstart", time.Minute, []error{process.ErrExited}, "missing credentials"},
		{"neverready", 300 * time.Millisecond, []error{process.ErrNotReady, context.DeadlineExceeded}, ""},
		{"wrongproto", time.Minute, []error{process.ErrProtocolMismatch}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			b := newBackend(t, cfg)
			root, entry := runtimeFile(t, tt.behaviour)
			inst := start(t, b, spec(root, entry, "", 1))
			ctx, cancel := context.WithTimeout(t.Context(), tt.deadline)
			defer cancel()
			_, err := inst.Execute(ctx, nil)
			var se *process.StartError
			if !errors.As(err, &se) {
				t.Fatalf("Execute: %v, want a *StartError", err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v does not wrap %v", err, w)
				}
			}
			if se.PID == 0 || !regexp.MustCompile(regexp.QuoteMeta(tt.stderr)).MatchString(se.Stderr) {
				t.Errorf("StartError pid %d stderr %q; want the worker's pid and stderr containing %q", se.PID, se.Stderr, tt.stderr)
			}
			if tt.behaviour == "wrongproto" {
				var pe *process.ProtocolError
				if !errors.As(err, &pe) || pe.Want != capabilityruntime.ProtocolV1 || pe.Got != "neuron/capability-runtime-v0" {
					t.Errorf("ProtocolError = %+v", pe)
				}
			}
			// A failed start leaves nothing, even before Close.
			requireNoLeftovers(t, entry, cfg.TempDir)
			if err := closeInstance(t, inst); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStubbornWorkerIsKilled: a worker that ignores both the Shutdown call
// (it stops serving but stays alive) and SIGTERM is killed after two grace
// periods, and Close says so.
func TestStubbornWorkerIsKilled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stubborn", "", 1, func(c *process.Config) {
		c.ShutdownGrace = 200 * time.Millisecond
	})
	pid := pidOf(t, f.call(t, nil))
	err := closeInstance(t, f.inst)
	if !errors.Is(err, process.ErrKilled) {
		t.Fatalf("Close: %v, want ErrKilled", err)
	}
	if alive(pid) {
		t.Fatalf("stubborn worker %d alive after Close", pid)
	}
	requireNoLeftovers(t, f.entry, f.cfg.TempDir)
}

// TestCloseWithCallsInFlight: Close bounded by its context ends calls that
// would otherwise run for an hour, on workers that ignore every polite
// request, including one discarded earlier and still being stopped in the
// background, and leaves no process, socket or directory behind.
func TestCloseWithCallsInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "stubborn", "", 4, func(c *process.Config) {
		c.ShutdownGrace = time.Hour // only Close's context can end this
	})
	abandon, cancelAbandoned := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, 4)
	abandoned := make(chan struct{})
	for i := range 4 {
		wg.Go(func() {
			ctx := context.Background()
			if i == 0 {
				ctx = abandon
				defer close(abandoned)
			}
			params := map[string]any{"sleep_ms": 3600000, "touch": fmt.Sprint("arrived-", i)}
			_, errs[i] = f.inst.Execute(ctx, &capabilityruntime.Request{Params: params})
		})
	}
	waitFor(t, "four calls in their workers", func() bool {
		m, _ := filepath.Glob(filepath.Join(f.root, "arrived-*"))
		return len(m) == 4
	})
	// The abandoned call's worker is discarded; its stop (an hour of grace
	// per phase) runs in the background.
	cancelAbandoned()
	<-abandoned
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := f.inst.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close: %v, want the context's DeadlineExceeded (workers killed at its bound)", err)
	}
	wg.Wait()
	if !errors.Is(errs[0], context.Canceled) {
		t.Errorf("abandoned call: %v, want context.Canceled", errs[0])
	}
	for _, err := range errs[1:] {
		if !errors.Is(err, process.ErrWorkerFailed) {
			t.Errorf("in-flight call: %v, want ErrWorkerFailed", err)
		}
	}
	requireNoLeftovers(t, f.entry, f.cfg.TempDir)
}

// TestCloseEndsWaitingCalls: a call waiting for the pool's only worker
// fails with ErrClosed when the pool closes.
func TestCloseEndsWaitingCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", "", 1, func(c *process.Config) {
		c.ShutdownGrace = 500 * time.Millisecond
	})
	busy := make(chan error, 1)
	go func() {
		_, err := f.inst.Execute(context.Background(), &capabilityruntime.Request{Params: map[string]any{"sleep_ms": 3600000}})
		busy <- err
	}()
	waitFor(t, "the worker", func() bool { return len(processes(f.entry)) == 1 })
	waiting := make(chan error, 1)
	go func() {
		_, err := f.inst.Execute(context.Background(), nil)
		waiting <- err
	}()
	if err := closeInstance(t, f.inst); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; !errors.Is(err, process.ErrClosed) && !errors.Is(err, process.ErrWorkerFailed) {
		t.Errorf("waiting call: %v, want ErrClosed", err)
	}
	if err := <-busy; err == nil {
		t.Error("the busy call succeeded after Close")
	}
	requireNoLeftovers(t, f.entry, f.cfg.TempDir)
}

func TestSharedPoolAndRestart(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	b := newBackend(t, cfg)
	root, entry := runtimeFile(t, "echo")
	s := spec(root, entry, "", 1)
	a, c := start(t, b, s), start(t, b, s)
	ra, err := a.Execute(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.Execute(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, ra)
	if pidOf(t, rc) != pid {
		t.Fatal("two instances of one type@version did not share the pool")
	}
	// One holder closing (twice: the second is a no-op, not a second
	// release) leaves the pool to the other.
	if err := closeInstance(t, a); err != nil {
		t.Fatal(err)
	}
	if err := closeInstance(t, a); err != nil {
		t.Fatal(err)
	}
	rc, err = c.Execute(t.Context(), nil)
	if err != nil {
		t.Fatalf("the other holder lost its pool: %v", err)
	}
	if pidOf(t, rc) != pid {
		t.Fatal("closing one holder replaced the pool's worker")
	}
	// A different spec for the same type@version is refused while it lives.
	other := s
	other.MaxWorkers = 2
	if _, err := b.Start(t.Context(), other); !errors.Is(err, process.ErrSpecConflict) {
		t.Fatalf("conflicting spec: %v, want ErrSpecConflict", err)
	}
	if err := closeInstance(t, c); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, entry, cfg.TempDir)

	// After the last holder closed, a Start gets a fresh pool, and the
	// other spec is no longer in conflict.
	d := start(t, b, other)
	rd, err := d.Execute(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if pidOf(t, rd) == pid {
		t.Fatal("a restart reused the closed pool's worker")
	}
	if err := closeInstance(t, d); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, entry, cfg.TempDir)
}

func TestBackendClose(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	b, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	root, entry := runtimeFile(t, "echo")
	inst := start(t, b, spec(root, entry, "", 2))
	if _, err := inst.Execute(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	one := start(t, b, spec(root, entry, capabilityruntime.ProtocolJSONV1, 0))
	if err := b.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, entry, cfg.TempDir)
	if _, err := inst.Execute(t.Context(), nil); !errors.Is(err, process.ErrClosed) {
		t.Errorf("pool Execute after Backend.Close: %v", err)
	}
	if _, err := one.Execute(t.Context(), nil); !errors.Is(err, process.ErrClosed) {
		t.Errorf("one-shot Execute after Backend.Close: %v", err)
	}
	if _, err := b.Start(t.Context(), spec(root, entry, "", 1)); !errors.Is(err, process.ErrClosed) {
		t.Errorf("Start after Backend.Close: %v", err)
	}
	if err := closeInstance(t, inst); err != nil {
		t.Errorf("instance Close after Backend.Close: %v", err)
	}
	if err := b.Close(t.Context()); err != nil {
		t.Errorf("second Backend.Close: %v", err)
	}
}

func fileBase(p string) string {
	fi, err := os.Stat(p)
	if err != nil {
		return p
	}
	return fi.Name()
}
