package supervise_test

import (
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// TestTakenOverOperationContinuesAnywhere: once a controller has taken an
// orphaned attempt over, the operation's current attempt is the taker's
// empty one, which runs nothing. Another live controller asked for the
// operation runs it, instead of answering "running under the taker" for as
// long as the taker lives.
func TestTakenOverOperationContinuesAnywhere(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	base := memory.New()
	hl, release := hangOn(t, base)
	auth := newAuthority()
	auth.block = "effect-1"
	cfg := config(t, hl, newLauncher(t, 0))
	cfg.LeaseTTL, cfg.Authority, cfg.Dispatcher = 450*time.Millisecond, auth, newDispatcher()
	orphan := newSupervisor(t, cfg)
	var authOnce sync.Once
	letGo := func() { authOnce.Do(func() { close(auth.release) }) }
	t.Cleanup(letGo) // before orphan is closed, should the test fail first
	done := make(chan struct{})
	go func() {
		defer close(done)
		orphan.Invoke(ctx, call("op-taken", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 2))
	}()
	<-auth.entered // the host asked for effect-1
	hl.renew.Store(true)
	<-hl.entered // its controller cannot renew: its lease expires
	waitFor(t, func() bool { return !leaseOf(t, base, orphan.ControllerID()).Live })

	taker := newSupervisor(t, config(t, base, newLauncher(t, 0)))
	rec, err := taker.Recover(ctx)
	if err != nil || len(rec.Fenced) != 1 {
		t.Fatalf("Recover: %+v, %v", rec, err)
	}
	d := newDispatcher()
	otherCfg := config(t, base, newLauncher(t, 0))
	otherCfg.Dispatcher = d
	other := newSupervisor(t, otherCfg)
	again := call("op-taken", "example.two_effects@1.0.0", map[string]any{"target": "doc"}, 0)
	again.Deadline = time.Time{}
	o, err := other.Invoke(ctx, again)
	wantState(t, o, err, launch.StateSucceeded, nil)
	if !o.Launched || d.count("effect-1") != 1 || d.count("effect-2") != 1 {
		t.Fatalf("after the takeover, another controller: %+v, dispatches %d, %d", o, d.count("effect-1"), d.count("effect-2"))
	}
	letGo()
	<-done
	release()
}
