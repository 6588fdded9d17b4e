package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// The fleet test: controller processes with leases share one ledger; one
// is killed with SIGKILL while it works; the others take over what it
// held once its lease has expired, and never each other's work.

// workerModeEnv selects leaseWorkerMain for a worker process;
// workerStallEnv makes it stall, holding its attempt, after it authorized
// the first effect of each operation it launched (the victim of the fleet
// test, which is killed then).
const (
	workerModeEnv  = "ZEO_POSTGRES_TEST_WORKER_MODE"
	workerStallEnv = "ZEO_POSTGRES_TEST_WORKER_STALL"
)

// The fleet's leases: long enough that a live controller on a loaded
// machine renews in time (ten chances per ttl), short enough that the
// test does not wait long for the killed one's to expire.
const (
	fleetTTL   = 5 * time.Second
	fleetRenew = fleetTTL / 10
)

func fleetController(w string) string { return "controller-" + w }

// leaseWorkerMain is one controller of the fleet test: it holds a lease
// (renewed in the background; if a renewal is refused it stops at once,
// fail-stop, and exits 3), launches the operations of its share (i ≡ w
// mod processes) for itself and works them to their result, then sweeps
// the open operations until none is left: an operation nobody launched it
// launches, any other it tries to take over, which the ledger allows only
// once the attempt's controller is no longer live.
func leaseWorkerMain(w string) int {
	enc := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	emit := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	}
	fail := func(err error) int {
		emit(event{Ev: "error", Msg: err.Error()})
		return 1
	}
	ops, err := strconv.Atoi(os.Getenv(workerOpsEnv))
	if err != nil {
		return fail(err)
	}
	n, err := strconv.Atoi(w)
	if err != nil {
		return fail(err)
	}
	processes, err := strconv.Atoi(os.Getenv("ZEO_POSTGRES_TEST_WORKER_PROCESSES"))
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := postgres.Open(ctx, os.Getenv(dsnEnv), postgres.Options{Schema: os.Getenv(workerSchemaEnv)})
	if err != nil {
		return fail(err)
	}
	defer l.Close(context.Background())
	me := fleetController(w)
	if err := retry(func() error { _, err := l.AcquireLease(ctx, me, fleetTTL); return err }); err != nil {
		return fail(err)
	}
	// The renewer: a refused renewal ends the controller before it can
	// act on a lease it no longer holds.
	lost := make(chan struct{})
	go func() {
		t := time.NewTicker(fleetRenew)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := retry(func() error { _, err := l.RenewLease(ctx, me, fleetTTL); return err })
			if errors.Is(err, ledger.ErrLeaseExpired) {
				emit(event{Ev: "lease_lost", Msg: err.Error()})
				close(lost)
				os.Exit(3)
			}
		}
	}()
	var calls atomic.Int64
	stall := os.Getenv(workerStallEnv) != ""
	work := func(f ledger.Fence) error {
		n, err := fleetFinish(ctx, l, f, stall, emit)
		calls.Add(int64(n))
		return err
	}
	// The controller's share, in workStreams streams at once.
	var (
		wg   sync.WaitGroup
		errs = make([]error, workStreams)
	)
	for st := range workStreams {
		wg.Go(func() {
			for i := n + st*processes; i < ops; i += processes * workStreams {
				op := workOpID(i)
				f, err := fleetLaunch(ctx, l, op, 1, "w"+w, me)
				calls.Add(1)
				var fe *ledger.FenceError
				switch {
				case errors.As(err, &fe):
					emit(event{Ev: "lost_race", Op: op, Msg: "LaunchAttempt"})
					continue
				case err != nil:
					errs[st] = fmt.Errorf("%s: LaunchAttempt: %w", op, err)
					return
				}
				emit(event{Ev: "start", Op: op, Gen: f.Generation})
				if err := work(f); err != nil {
					errs[st] = fmt.Errorf("%s: %w", op, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	// The sweep.
	for {
		open, err := l.ListOperations(ctx, ledger.OperationQuery{State: ledger.OperationOpen, Limit: 1000})
		calls.Add(1)
		if err != nil {
			return fail(err)
		}
		if len(open) == 0 {
			break
		}
		for _, o := range open {
			var f ledger.Fence
			if o.CurrentGeneration == 0 {
				f, err = fleetLaunch(ctx, l, o.OperationID, 1, "w"+w, me)
			} else {
				from := ledger.Fence{Scope: o.Scope, OperationID: o.OperationID, AttemptID: o.CurrentAttemptID, Generation: o.CurrentGeneration}
				err = retry(func() (err error) {
					f, err = l.TakeOver(ctx, ledger.Takeover{From: from, AttemptID: fmt.Sprintf("w%s-g%d", w, from.Generation+1), ControllerID: me})
					return err
				})
			}
			calls.Add(1)
			var fe *ledger.FenceError
			switch {
			case errors.Is(err, ledger.ErrOwnerLive):
				emit(event{Ev: "owner_live", Op: o.OperationID})
				continue
			case errors.As(err, &fe), errors.Is(err, ledger.ErrResultAlreadyAccepted):
				emit(event{Ev: "lost_race", Op: o.OperationID, Msg: "takeover"})
				continue
			case err != nil:
				return fail(fmt.Errorf("%s: taking over: %w", o.OperationID, err))
			}
			ev := "takeover"
			if o.CurrentGeneration == 0 {
				ev = "start"
			}
			emit(event{Ev: ev, Op: o.OperationID, Gen: f.Generation, Auth: o.CurrentControllerID})
			if err := work(f); err != nil {
				return fail(fmt.Errorf("%s: %w", o.OperationID, err))
			}
		}
		select {
		case <-lost:
		case <-time.After(20 * time.Millisecond): // between sweeps
		}
	}
	if err := retry(func() error { _, err := l.ReleaseLease(ctx, me); return err }); err != nil {
		return fail(err)
	}
	emit(event{Ev: "done", Calls: int(calls.Load())})
	return 0
}

// fleetLaunch launches attempt attempt of operation op for controller me.
func fleetLaunch(ctx context.Context, l ledger.Ledger, op string, gen int64, attempt, me string) (f ledger.Fence, err error) {
	err = retry(func() (err error) {
		f, err = l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: opSpec(testScope, op, int64(len(workEffects))),
			AttemptID: attempt, Generation: gen, BootstrapID: "boot-" + op + "-" + attempt, LaunchDigest: digest("launch " + attempt),
			ControllerID: me})
		return err
	})
	return f, err
}

// fleetFinish works the attempt f names to the operation's result: its
// bootstrap id (a taken-over attempt gets its first one here), admission,
// every effect (one the attempt finds authorized by a dead predecessor is
// resolved as consumed, since this test's dispatcher consumes every
// effect it is given), the result. Being fenced is an event, not an
// error: the parent decides whether it was allowed.
func fleetFinish(ctx context.Context, l ledger.Ledger, f ledger.Fence, stall bool, emit func(event)) (calls int, err error) {
	op := f.OperationID
	boot, launch := "boot-"+op+"-"+f.AttemptID, digest("launch "+f.AttemptID)
	errFenced := errors.New("fenced")
	step := func(name string, fn func() error) error {
		calls++
		err := retry(fn)
		var fe *ledger.FenceError
		switch {
		case errors.As(err, &fe):
			emit(event{Ev: "fenced", Op: op, Gen: f.Generation, Msg: name + ": " + err.Error()})
			return errFenced
		case err != nil:
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"LaunchAttempt", func() error { _, err := ledgertest.Issue(ctx, l, f, boot, launch); return err }},
		{"RedeemBootstrap", func() error {
			_, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: launch, PID: os.Getpid(), SessionID: "s-" + f.AttemptID})
			return err
		}},
		{"Admit", func() error { _, err := l.Admit(ctx, f, digest("request")); return err }},
	}
	for _, s := range steps {
		if err := step(s.name, s.fn); err != nil {
			return calls, ignoreFenced(err, errFenced)
		}
	}
	for _, e := range workEffects {
		d := digest("effect " + e)
		var g ledger.EffectGrant
		if err := step("BeginEffect", func() (err error) { g, err = l.BeginEffect(ctx, f, e, d); return err }); err != nil {
			return calls, ignoreFenced(err, errFenced)
		}
		switch {
		case !g.Redelivery:
			emit(event{Ev: "auth", Op: op, Effect: e, Auth: g.Effect.AuthorizationID, Gen: f.Generation})
			if stall {
				<-ctx.Done() // dispatching, until killed
				return calls, ctx.Err()
			}
			if err := step("ConfirmEffect", func() error { _, err := l.ConfirmEffect(ctx, f, e, d, "receipt-"+e); return err }); err != nil {
				return calls, ignoreFenced(err, errFenced)
			}
		case g.Effect.State == ledger.EffectAuthorized:
			// Authorized by the attempt taken over, outcome never
			// recorded: its controller is gone, so Resolve may settle it.
			emit(event{Ev: "resolve", Op: op, Effect: e, Gen: g.Effect.Generation, Auth: g.Effect.ControllerID})
			if err := step("Resolve", func() error {
				_, err := l.Resolve(ctx, testScope, op, e, d, ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "receipt-" + e})
				return err
			}); err != nil {
				return calls, err
			}
		}
	}
	if err := step("AcceptResult", func() error { _, err := l.AcceptResult(ctx, f, digest("data "+op), []byte(op)); return err }); err != nil {
		return calls, ignoreFenced(err, errFenced)
	}
	emit(event{Ev: "accepted", Op: op, Gen: f.Generation})
	return calls, nil
}

func ignoreFenced(err, fenced error) error {
	if errors.Is(err, fenced) {
		return nil
	}
	return err
}

// TestFleetTakeover runs controller processes with leases on the same
// ledger, kills one with SIGKILL mid-dispatch (an effect authorized in
// each operation it holds, listed in flight), and checks that the others
// finished every operation, took over the killed one's only once its
// lease had expired (the ledger refuses a live owner's: owner_live),
// resolved its effects only then, were never fenced off themselves while
// they held their leases, and left nothing unknown or in flight.
func TestFleetTakeover(t *testing.T) {
	dsn := testDSN(t)
	const (
		processes = 4
		ops       = 400
	)
	schema := newSchema(t, dsn)
	l, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, l)
	// Every operation exists before the fleet starts, as the Runtime's
	// own record of its work: those the victim never launched are open
	// with no attempt, for the others to launch.
	for i := range ops {
		if _, err := l.CreateOperation(bg, opSpec(testScope, workOpID(i), int64(len(workEffects)))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := bg
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(bg, dl.Add(-10*time.Second))
		defer cancel()
	}
	workers := make([]*worker, processes)
	for i := range workers {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), workerEnv+"="+strconv.Itoa(i), workerModeEnv+"=lease", workerSchemaEnv+"="+schema,
			workerOpsEnv+"="+strconv.Itoa(ops), "ZEO_POSTGRES_TEST_WORKER_PROCESSES="+strconv.Itoa(processes))
		if i == 0 {
			cmd.Env = append(cmd.Env, workerStallEnv+"=1")
		}
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		w := &worker{cmd: cmd, starts: make(chan struct{}, 1), read: make(chan struct{})}
		workers[i] = w
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go w.collect(out)
	}
	t.Cleanup(func() {
		for _, w := range workers {
			_ = w.cmd.Process.Kill()
			<-w.read
			_ = w.cmd.Wait()
		}
	})
	// The victim stalls in each of its streams with an effect
	// authorized: once the ledger lists all of them in flight under its
	// live lease, it is killed mid-dispatch.
	victim, held := workers[0], 0
	for held < workStreams {
		select {
		case <-victim.read:
			t.Fatalf("the victim ended before it held %d operations: %v", workStreams, victim.events)
		default:
		}
		es, err := l.ListInFlight(bg)
		if err != nil {
			t.Fatal(err)
		}
		held = 0
		for _, e := range es {
			if e.ControllerID == fleetController("0") {
				held++
			}
		}
		time.Sleep(time.Millisecond)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lostLease := map[string]bool{fleetController("0"): true} // controllers whose lease ended while they worked
	for i, w := range workers {
		<-w.read
		err := w.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case i == 0:
			if !(errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL) {
				t.Fatalf("victim: %v, want killed by SIGKILL", err)
			}
		case errors.As(err, &ee) && ee.ExitCode() == 3:
			// Fail-stop: it could not renew in time on this machine; its
			// work is the others' to take over, as the victim's.
			t.Logf("controller %d lost its lease and stopped: %v", i, lastEvents(w, 1))
			lostLease[fleetController(strconv.Itoa(i))] = true
		case err != nil:
			t.Fatalf("controller %d: %v; its last events: %v", i, err, lastEvents(w, 5))
		}
	}
	if len(lostLease) == processes {
		t.Fatal("every controller lost its lease")
	}

	counts := map[string]int{}
	auths := map[string]string{}
	for i, w := range workers {
		me := fleetController(strconv.Itoa(i))
		for _, e := range w.events {
			counts[e.Ev]++
			switch e.Ev {
			case "error":
				t.Errorf("controller %d: %s", i, e.Msg)
			case "fenced":
				if !lostLease[me] {
					t.Errorf("controller %d was fenced off %s (generation %d) while it held its lease: %s", i, e.Op, e.Gen, e.Msg)
				}
			case "takeover", "resolve":
				if !lostLease[e.Auth] {
					t.Errorf("controller %d: %s of %s from %q, a controller that held its lease", i, e.Ev, e.Op, e.Auth)
				}
			case "auth":
				k := e.Op + "/" + e.Effect
				if a, ok := auths[k]; ok && a != e.Auth {
					t.Errorf("%s: two authorizations, %s and %s", k, a, e.Auth)
				}
				auths[k] = e.Auth
			}
		}
	}
	t.Logf("%d operations, %d controllers (one killed holding %d); events: %v", ops, processes, held, counts)
	if counts["takeover"] < held || counts["resolve"] < held {
		t.Errorf("%d takeovers and %d effects resolved; the victim held %d operations with an effect in flight each",
			counts["takeover"], counts["resolve"], held)
	}

	var fences []ledger.Fence
	for i := range ops {
		op := workOpID(i)
		v, err := l.Operation(bg, testScope, op)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if v.Operation.State != ledger.OperationCompleted {
			t.Errorf("%s is %s, want completed", op, v.Operation.State)
		}
		for _, a := range v.Attempts[:max(0, len(v.Attempts)-1)] {
			if !lostLease[a.ControllerID] {
				t.Errorf("%s: attempt %s of controller %q was fenced off while its controller held its lease", op, a.AttemptID, a.ControllerID)
			}
		}
		for _, e := range v.Effects {
			if e.State != ledger.EffectConfirmed {
				t.Errorf("%s/%s is %s, want confirmed", op, e.LogicalEffectID, e.State)
			}
		}
		fences = append(fences, ledger.Fence{Scope: testScope, OperationID: op, AttemptID: v.Operation.CurrentAttemptID, Generation: v.Operation.CurrentGeneration})
	}
	for _, list := range []func(context.Context) ([]ledger.Effect, error){l.ListUnknown, l.ListInFlight} {
		if es, err := list(bg); err != nil || len(es) != 0 {
			t.Errorf("effects left unsettled: %+v, %v", es, err)
		}
	}
	ledgertest.Check(t, l, fences...)
	checkTables(t, dsn, schema)
}
