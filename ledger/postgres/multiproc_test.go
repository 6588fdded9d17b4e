package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// The multi-controller test re-executes this test binary as controller
// processes: TestMain runs workerMain instead of the tests when
// workerEnv is set.
const (
	workerEnv       = "ZEO_POSTGRES_TEST_WORKER" // the worker's number
	workerSchemaEnv = "ZEO_POSTGRES_TEST_WORKER_SCHEMA"
	workerOpsEnv    = "ZEO_POSTGRES_TEST_WORKER_OPS"
)

func TestMain(m *testing.M) {
	if w := os.Getenv(workerEnv); w != "" {
		if os.Getenv(workerModeEnv) == "lease" {
			os.Exit(leaseWorkerMain(w))
		}
		os.Exit(workerMain(w))
	}
	longtest.ShrinkRapidAlways()
	os.Exit(m.Run())
}

// Each operation of the multi-controller test has workEffects logical
// effects and a budget of workBudget, so that every operation that gets
// far enough also exhausts its budget.
var workEffects = []string{"e0", "e1"}

const workBudget = 1

// workStreams is how many operations each controller works at once (one
// goroutine per stream, operation i in stream i % workStreams), so that
// every controller races the others on the same operations and its own
// writes share commits.
const workStreams = 4

// event is one line a worker writes on stdout: something it observed.
type event struct {
	Ev         string `json:"ev"` // start, auth, budget, stale, over, accepted, done, error
	Op         string `json:"op,omitempty"`
	Effect     string `json:"effect,omitempty"`
	Auth       string `json:"auth,omitempty"`
	Gen        int64  `json:"gen,omitempty"`
	Redelivery bool   `json:"redelivery,omitempty"`
	Calls      int    `json:"calls,omitempty"`
	Msg        string `json:"msg,omitempty"`
}

func workOpID(i int) string { return fmt.Sprintf("op-%05d", i) }

// workerMain is one controller: it works every operation of the test, in
// order in each of its streams, as attempt "w<n>", racing the other controllers on each: it
// creates the operation (idempotent), starts its attempt (which fences
// off the others' older ones), bootstraps and admits it, authorizes and
// confirms every logical effect, and accepts the result. A stale fence
// ends its work on the operation; an operation already over is skipped.
func workerMain(w string) int {
	enc := json.NewEncoder(os.Stdout) // one Write per event: lines never interleave
	var mu sync.Mutex                 // guards enc
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
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l, err := postgres.Open(ctx, os.Getenv(dsnEnv), postgres.Options{Schema: os.Getenv(workerSchemaEnv)})
	if err != nil {
		return fail(err)
	}
	defer l.Close(context.Background())
	var (
		wg    sync.WaitGroup
		calls atomic.Int64
		errs  = make([]error, workStreams)
	)
	for s := range workStreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := s; i < ops; i += workStreams {
				n, err := workOne(ctx, l, workOpID(i), "w"+w, emit)
				calls.Add(int64(n))
				if err != nil {
					errs[s] = fmt.Errorf("%s: %w", workOpID(i), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	emit(event{Ev: "done", Calls: int(calls.Load())})
	return 0
}

// workOne works one operation; it returns the number of ledger calls made
// and an error only for an outcome the test does not expect.
func workOne(ctx context.Context, l ledger.Ledger, op, attempt string, emit func(event)) (calls int, err error) {
	// ended classifies an error: nil to go on, errStop to leave the
	// operation (a refusal this race makes normal), or the error.
	errStop := errors.New("stop")
	ended := func(call string, err error) error {
		calls++
		var fe *ledger.FenceError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &fe):
			emit(event{Ev: "stale", Op: op, Msg: call})
			return errStop
		case errors.Is(err, ledger.ErrResultAlreadyAccepted):
			emit(event{Ev: "over", Op: op, Msg: call})
			return errStop
		}
		return fmt.Errorf("%s: %w", call, err)
	}
	stop := func(err error) (int, error) {
		if err == errStop {
			return calls, nil
		}
		return calls, err
	}
	if err := ended("CreateOperation", retry(func() error {
		_, err := l.CreateOperation(ctx, opSpec(testScope, op, workBudget))
		return err
	})); err != nil {
		return stop(err)
	}
	var f ledger.Fence
	if err := ended("StartAttempt", retry(func() (err error) {
		f, err = l.StartAttempt(ctx, testScope, op, attempt)
		return err
	})); err != nil {
		return stop(err)
	}
	emit(event{Ev: "start", Op: op, Gen: f.Generation})
	boot, launch := "boot-"+op+"-"+attempt, digest("launch")
	steps := []struct {
		name string
		fn   func() error
	}{
		{"LaunchAttempt", func() error { _, err := ledgertest.Issue(ctx, l, f, boot, launch); return err }},
		{"RedeemBootstrap", func() error {
			_, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: launch, PID: os.Getpid(), SessionID: "s-" + attempt})
			return err
		}},
		{"Admit", func() error { _, err := l.Admit(ctx, f, digest("request")); return err }},
	}
	for _, s := range steps {
		if err := ended(s.name, retry(s.fn)); err != nil {
			return stop(err)
		}
	}
	for _, e := range workEffects {
		var g ledger.EffectGrant
		err := retry(func() (err error) { g, err = l.BeginEffect(ctx, f, e, digest("effect "+e)); return err })
		if errors.Is(err, ledger.ErrBudgetExhausted) {
			calls++
			emit(event{Ev: "budget", Op: op, Effect: e})
			continue
		}
		if err := ended("BeginEffect", err); err != nil {
			return stop(err)
		}
		emit(event{Ev: "auth", Op: op, Effect: e, Auth: g.Effect.AuthorizationID, Gen: g.Effect.Generation, Redelivery: g.Redelivery})
		if err := ended("ConfirmEffect", retry(func() error {
			_, err := l.ConfirmEffect(ctx, f, e, digest("effect "+e), "receipt-"+e)
			return err
		})); err != nil {
			return stop(err)
		}
	}
	if err := ended("AcceptResult", retry(func() error {
		_, err := l.AcceptResult(ctx, f, digest("data "+op), []byte(op))
		return err
	})); err != nil {
		return stop(err)
	}
	emit(event{Ev: "accepted", Op: op, Gen: f.Generation})
	return calls, nil
}

// retry repeats fn while its outcome is not known or it was not applied:
// every write is idempotent, so the repeat returns the recorded outcome.
func retry(fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		if i < 100 && (errors.Is(err, ledger.ErrOutcomeUnknown) || errors.Is(err, ledger.ErrNotApplied)) {
			continue
		}
		return err
	}
}

// worker is one controller process and what it reported.
type worker struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []event
	starts chan struct{} // receives once per start event
	read   chan struct{} // closed when stdout is drained
}

func (w *worker) collect(r io.Reader) {
	defer close(w.read)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			e = event{Ev: "error", Msg: fmt.Sprintf("unreadable line %q", sc.Text())}
		}
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
		if e.Ev == "start" {
			select {
			case w.starts <- struct{}{}:
			default:
			}
		}
	}
}

// TestMultiController runs four controller processes on the same
// operations and logical effects at once and kills one of them with
// SIGKILL while it works. It then checks what they observed and what the
// tables hold: exactly one authorization per logical effect, fences
// strictly increasing, stale writers refused, no budget exceeded, every
// operation finished except those the killed controller held, and its
// unfinished effects listed for reconciliation.
func TestMultiController(t *testing.T) {
	dsn := testDSN(t)
	const (
		processes = 4
		ops       = 2000
		killAfter = 150 // operations the victim starts before it is killed
	)
	schema := newSchema(t, dsn)
	l, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema}) // creates the schema before the race
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, l)
	ctx := bg
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(bg, dl.Add(-10*time.Second))
		defer cancel()
	}
	workers := make([]*worker, processes)
	for i := range workers {
		cmd := exec.CommandContext(ctx, os.Args[0])
		cmd.Env = append(os.Environ(), workerEnv+"="+strconv.Itoa(i), workerSchemaEnv+"="+schema, workerOpsEnv+"="+strconv.Itoa(ops))
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
			_ = w.cmd.Process.Kill() // no-op for those already waited for
			<-w.read
			_ = w.cmd.Wait()
		}
	})

	victim := workers[0]
	for started := 0; started < killAfter; started++ {
		select {
		case <-victim.starts:
		case <-victim.read:
			t.Fatalf("the victim ended before it started %d operations: %v", killAfter, victim.events)
		}
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, w := range workers {
		<-w.read
		err := w.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case i == 0 && !(errors.As(err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL):
			t.Fatalf("victim: %v, want killed by SIGKILL", err)
		case i > 0 && err != nil:
			t.Fatalf("controller %d: %v; its last events: %v", i, err, lastEvents(w, 5))
		}
	}

	// What the controllers observed.
	counts := map[string]int{}
	auths := map[string]string{}       // op/effect -> authorization id
	gens := map[string]map[int64]int{} // op -> generation -> controller
	calls := 0
	for i, w := range workers {
		for _, e := range w.events {
			counts[e.Ev]++
			switch e.Ev {
			case "error":
				t.Errorf("controller %d: %s", i, e.Msg)
			case "done":
				calls += e.Calls
			case "start":
				if gens[e.Op] == nil {
					gens[e.Op] = map[int64]int{}
				}
				if other, dup := gens[e.Op][e.Gen]; dup {
					t.Errorf("%s: generation %d issued to controllers %d and %d", e.Op, e.Gen, other, i)
				}
				gens[e.Op][e.Gen] = i
			case "auth":
				k := e.Op + "/" + e.Effect
				if a, ok := auths[k]; ok && a != e.Auth {
					t.Errorf("%s: two authorizations, %s and %s", k, a, e.Auth)
				}
				auths[k] = e.Auth
			}
		}
	}
	t.Logf("%d operations, %d controllers (one killed after %d starts); %d ledger calls by the survivors; events: %v",
		ops, processes, killAfter, calls, counts)
	for _, ev := range []string{"start", "auth", "budget", "stale", "accepted"} {
		if counts[ev] == 0 {
			t.Errorf("no %q event: the controllers did not race as the test intends", ev)
		}
	}

	// What the ledger holds.
	var fences []ledger.Fence
	var unfinished []string
	for i := range ops {
		op := workOpID(i)
		v, err := l.Operation(bg, testScope, op)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		for _, e := range v.Effects {
			if a, ok := auths[op+"/"+e.LogicalEffectID]; ok && a != e.AuthorizationID {
				t.Errorf("%s/%s: controllers saw authorization %s, the ledger holds %s", op, e.LogicalEffectID, a, e.AuthorizationID)
			}
		}
		for g, c := range gens[op] {
			if g > int64(len(v.Attempts)) || v.Attempts[g-1].AttemptID != "w"+strconv.Itoa(c) {
				t.Errorf("%s: controller %d started generation %d, the ledger's attempts are %v", op, c, g, v.Attempts)
			}
		}
		if v.Operation.State != ledger.OperationCompleted {
			unfinished = append(unfinished, op)
			if v.Operation.CurrentAttemptID != "w0" {
				t.Errorf("%s is %s with current attempt %q; only the killed controller leaves operations unfinished",
					op, v.Operation.State, v.Operation.CurrentAttemptID)
			}
		}
		fences = append(fences, ledger.Fence{Scope: testScope, OperationID: op, AttemptID: v.Operation.CurrentAttemptID, Generation: v.Operation.CurrentGeneration})
	}
	t.Logf("unfinished operations (held by the killed controller): %v", unfinished)
	if len(unfinished) > workStreams {
		t.Errorf("%d operations unfinished; the killed controller held at most %d", len(unfinished), workStreams)
	}
	unknown, err := l.ListUnknown(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range unknown {
		if !slices.Contains(unfinished, e.OperationID) {
			t.Errorf("effect %s/%s is %s in a finished operation", e.OperationID, e.LogicalEffectID, e.State)
		}
	}
	ledgertest.Check(t, l, fences...)
	checkTables(t, dsn, schema)
}

func lastEvents(w *worker, n int) []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.events[max(0, len(w.events)-n):]
}
