package supervise_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// TestThousandInvocations runs 1,000 invocations (with ZEO_LONG_TESTS=1;
// 100 by default) with mixed outcomes on one bolt ledger — successes with no and with two effects, business failures,
// uncertain dispatches, and hosts killed at their deadline — four at a time,
// and checks that nothing leaked: descriptors, goroutines, processes.
func TestThousandInvocations(t *testing.T) {
	n := longtest.Size(100, 1000)
	// A bound for a broken run, not a speed check: 1,000 launches on a
	// shared 2-core machine under the race detector take minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	l := openBolt(t, t.TempDir())
	okCfg := config(t, l, newLauncher(t, 0))
	okCfg.Dispatcher = newDispatcher()
	ok := newSupervisor(t, okCfg)
	uncertain := newDispatcher()
	for _, id := range []string{"effect-1", "effect-2"} {
		uncertain.set(id, "uncertain")
	}
	uncCfg := config(t, l, newLauncher(t, 0))
	uncCfg.Dispatcher = uncertain
	unc := newSupervisor(t, uncCfg)
	hang := newSupervisor(t, config(t, l, newLauncher(t, 50*time.Millisecond, hostproc.EnvScenario+"=hang")))

	runtime.GC()
	fds, goroutines, kids := leaktest.OpenFDs(t), runtime.NumGoroutine(), leaktest.Children(t)
	if len(kids) != 0 {
		t.Fatalf("children before the loop: %v", kids)
	}
	type kind struct {
		s     *supervise.Supervisor
		cap   string
		args  map[string]any
		state launch.State
	}
	echo, two := map[string]any{"text": "hello"}, map[string]any{"target": "doc-1"}
	kinds := []kind{
		{ok, "example.echo@1.0.0", echo, launch.StateSucceeded},
		{ok, "example.two_effects@1.0.0", two, launch.StateSucceeded},
		{ok, "example.fail@1.0.0", map[string]any{}, launch.StateFailed},
		{unc, "example.two_effects@1.0.0", two, launch.StateNeedsReconciliation},
		{hang, "example.echo@1.0.0", echo, launch.StateTimedOut},
	}
	// Mostly successes, 1 in 25 killed at its deadline.
	pick := func(i int) kind {
		switch r := i % 25; {
		case r == 0:
			return kinds[4]
		case r < 4:
			return kinds[2]
		case r < 6:
			return kinds[3]
		case r < 13:
			return kinds[1]
		}
		return kinds[0]
	}
	var mu sync.Mutex
	counts := map[launch.State]int{}
	work := make(chan int)
	var wg sync.WaitGroup
	// Four at a time: the ledger's group commit shares its fsyncs between
	// concurrent writers, which is what bounds this loop's time.
	const workers = 4
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				k := pick(i)
				c := call(fmt.Sprintf("op-%d", i), k.cap, k.args, 2)
				if k.state == launch.StateTimedOut {
					c.Deadline = time.Now().Add(30 * time.Millisecond)
				}
				o, err := k.s.Invoke(ctx, c)
				if o == nil || o.State != k.state || (err == nil) != (k.state == launch.StateSucceeded) || o.EvidenceErr != nil {
					errs <- fmt.Errorf("invocation %d (%s): outcome %+v, err %v", i, k.cap, o, err)
					return
				}
				mu.Lock()
				counts[o.State]++
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		select {
		case work <- i:
		case err := <-errs:
			close(work)
			wg.Wait()
			t.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	t.Logf("%d invocations: %v", n, counts)
	// The Supervisor's own goroutines (its lease renewal) end at Close.
	for _, s := range []*supervise.Supervisor{ok, unc, hang} {
		closeSupervisor(t, s)
	}

	// Goroutines end asynchronously after the last call returns (timers,
	// the runtime's own); wait for the count to come back down.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > goroutines {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after the loop, %d before:\n%s", g, goroutines, buf[:runtime.Stack(buf, true)])
	}
	if f := leaktest.OpenFDs(t); f != fds {
		t.Fatalf("%d open descriptors after the loop, %d before", f, fds)
	}
	if k := leaktest.Children(t); len(k) != 0 {
		t.Fatalf("child processes after the loop: %v", k)
	}
}
