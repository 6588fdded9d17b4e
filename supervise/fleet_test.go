package supervise_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// The fleet test runs four controllers as real processes (the test binary
// re-executed with fleetEnv set) on one PostgreSQL ledger, configured by
// these variables.
const (
	fleetEnv      = "ZEO_SUPERVISE_TEST_FLEET" // the controller's index, 0..3
	fleetSchema   = "ZEO_SUPERVISE_TEST_FLEET_SCHEMA"
	fleetDir      = "ZEO_SUPERVISE_TEST_FLEET_DIR"  // the shared log, markers, per-controller files
	fleetOpsEnv   = "ZEO_SUPERVISE_TEST_FLEET_OPS"  // operations in all; also overrides the default
	fleetRole     = "ZEO_SUPERVISE_TEST_FLEET_ROLE" // "survivor", "killed" or "paused"
	fleetMarkAt   = "ZEO_SUPERVISE_TEST_FLEET_MARK" // the dispatch count at which the role's marker is written
	fleetTTLEnv   = "ZEO_SUPERVISE_TEST_FLEET_TTL"  // the lease ttl, a time.Duration; also overrides the default
	postgresDSN   = "ZEO_TEST_POSTGRES_DSN"
	fleetWorkers  = 4 // concurrent invocations per controller
	fleetDoneFile = "survivors-may-finish"
)

// The fleet's defaults: 2,000 operations with ZEO_LONG_TESTS=1 (as .ci/run
// sets it, also under -race), 400 otherwise, and a 2 s lease (renewed
// every 667 ms, takeover passes every 500 ms). A shorter ttl lets a
// survivor on a loaded 2-core machine, with -race, miss its renewals and
// fail-stop. Every operation launches a host and makes some ten ledger
// commits: 2,000 operations take about 85 s without the race detector and
// about as long with it on a quiet machine (it multiplies the
// controllers' CPU about fourfold). ZEO_SUPERVISE_TEST_FLEET_OPS sets any
// other count.
const (
	defaultFleetOps     = 400
	defaultFleetOpsLong = 2000
	defaultFleetTTL     = 2 * time.Second
)

func fleetOps() int {
	if n, err := strconv.Atoi(os.Getenv(fleetOpsEnv)); err == nil && n >= 8 {
		return n
	}
	return longtest.Size(defaultFleetOps, defaultFleetOpsLong)
}

func fleetTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(fleetTTLEnv)); err == nil && d >= 100*time.Millisecond {
		return d
	}
	return defaultFleetTTL
}

func fleetOp(i int) string { return fmt.Sprintf("fleet-%05d", i) }

// fleetControllerID is the controller id of controller index i, process pid.
func fleetControllerID(i, pid int) string { return fmt.Sprintf("fleet-ctl-%d-%d", i, pid) }

// logDispatcher is the credential holder of the fleet: before anything
// else it notes each call in its process's entered file (one write), then
// appends "op effect authorization pid" to the shared dispatch log with
// O_APPEND and syncs it before answering: a line in the log is an effect
// consumed. Its receipt is "rcpt-<authorization>". At its markAt-th
// dispatch it writes its role's marker file; the killed controller's then
// never returns (it is killed in the middle of that dispatch).
type logDispatcher struct {
	log, entered *os.File
	pid          int
	n            atomic.Int64
	markAt       int64
	marker       string // written at markAt
	block        bool   // never return from the markAt-th dispatch
}

func (d *logDispatcher) Dispatch(ctx context.Context, x port.Dispatch) (port.Receipt, error) {
	if _, err := fmt.Fprintf(d.entered, "%s %s %s\n", x.OperationID, x.LogicalEffectID, x.AuthorizationID); err != nil {
		return port.Receipt{}, port.NotConsumed("noting the dispatch: " + err.Error())
	}
	if _, err := fmt.Fprintf(d.log, "%s %s %s %d\n", x.OperationID, x.LogicalEffectID, x.AuthorizationID, d.pid); err != nil {
		return port.Receipt{}, err // uncertain: part of it may be written
	}
	if err := d.log.Sync(); err != nil {
		return port.Receipt{}, err
	}
	if d.n.Add(1) == d.markAt && d.marker != "" {
		if err := os.WriteFile(d.marker, []byte(x.OperationID+" "+x.LogicalEffectID), 0o600); err != nil {
			return port.Receipt{}, err
		}
		if d.block {
			select {} // killed here, the effect consumed and not confirmed
		}
	}
	return port.Receipt{ReceiptID: "rcpt-" + x.AuthorizationID}, nil
}

// takeoverRecord is a takeover a controller's takeover loop logged.
type takeoverRecord struct {
	At        time.Time `json:"at"`
	Operation string    `json:"operation"`
	Attempt   string    `json:"attempt"`
	From      string    `json:"from"` // the controller of the fenced attempt
	By        string    `json:"by"`
}

// fleetLog is the controllers' slog handler: it writes every takeover the
// Supervisor logs as a JSON line to the takeovers file, and keeps the
// first warnings.
type fleetLog struct {
	by string
	mu sync.Mutex
	f  *os.File
	w  []string
}

func (h *fleetLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *fleetLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *fleetLog) WithGroup(string) slog.Handler                { return h }
func (h *fleetLog) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.HasPrefix(r.Message, "supervise: recover: took over") {
		b, _ := json.Marshal(takeoverRecord{At: r.Time, Operation: attrs[supervise.KeyOperation], Attempt: attrs[supervise.KeyAttempt], From: attrs[supervise.KeyController], By: h.by})
		_, err := h.f.Write(append(b, '\n'))
		return err
	}
	if r.Level >= slog.LevelWarn && len(h.w) < 20 {
		h.w = append(h.w, fmt.Sprintf("%s %s %v", r.Time.Format(time.StampMicro), r.Message, attrs))
	}
	return nil
}

// fleetReport is what a controller process prints on stdout when it ends.
type fleetReport struct {
	ControllerID string            `json:"controller_id"`
	Results      map[string]string `json:"results"` // op → "attempt data-digest" of each succeeded answer
	States       map[string]int    `json:"states"`  // outcome states counted
	Running      int               `json:"running"` // answered running elsewhere, asked again later
	LeaseLost    int               `json:"lease_lost"`
	LostAfter    int               `json:"lost_after"` // Invoke calls answered otherwise after a first ErrLeaseLost
	Errors       []string          `json:"errors"`     // Invoke errors without an outcome, but ErrLeaseLost
	Fenced       []string          `json:"fenced"`     // requests refused with a stale fence: fenced while it ran
	FencedN      int               `json:"fenced_n"`
	Warnings     []string          `json:"warnings"`
	CloseErr     string            `json:"close_err,omitempty"`
}

// fleetMain is a fleet controller process: it runs every operation of the
// shared work list, beginning at its own quarter and going round, with
// fleetWorkers at a time, asks again those answered running once the
// test lets it finish, closes and reports.
func fleetMain(index string) int {
	i, _ := strconv.Atoi(index)
	dir := os.Getenv(fleetDir)
	rep := fleetReport{Results: map[string]string{}, States: map[string]int{}}
	defer func() { json.NewEncoder(os.Stdout).Encode(&rep) }()
	fail := func(err error) int { rep.Errors = append(rep.Errors, err.Error()); return 1 }
	ctx := context.Background()
	l, err := postgres.Open(ctx, os.Getenv(postgresDSN), postgres.Options{Schema: os.Getenv(fleetSchema)})
	if err != nil {
		return fail(err)
	}
	defer l.Close(ctx)
	ln, err := launch.New(launch.Config{Interpreter: os.Getenv(ctlHost), Dir: os.Getenv(ctlWorkdir),
		Verifier: environment.Trust{}, AllowRootHost: true})
	if err != nil {
		return fail(err)
	}
	open := func(name string) *os.File {
		f, ferr := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if ferr != nil && err == nil {
			err = ferr
		}
		return f
	}
	pid := os.Getpid()
	role := os.Getenv(fleetRole)
	markAt, _ := strconv.ParseInt(os.Getenv(fleetMarkAt), 10, 64)
	d := &logDispatcher{log: open("dispatches"), entered: open(fmt.Sprintf("entered-%d", pid)), pid: pid, markAt: markAt}
	if role != "survivor" {
		d.marker, d.block = filepath.Join(dir, role+".mark"), role == "killed"
	}
	rep.ControllerID = fleetControllerID(i, pid)
	lg := &fleetLog{by: rep.ControllerID, f: open(fmt.Sprintf("takeovers-%d", pid))}
	if err != nil {
		return fail(err)
	}
	ttl := fleetTTL()
	cfg := config(nil, l, ln)
	cfg.Dispatcher, cfg.ControllerID, cfg.LeaseTTL, cfg.TakeoverInterval = d, rep.ControllerID, ttl, ttl/4
	cfg.Logger = slog.New(lg)
	var mu sync.Mutex
	cfg.Observer = func(ev supervise.Event) {
		if ev.Kind != supervise.EventRequest || !errors.Is(ev.Refusal, ledger.ErrStaleFence) ||
			(ev.Method == "bootstrap" && strings.HasPrefix(ev.Reason, "recording the launch was refused")) {
			return // a launch that lost its generation to a concurrent one is not a fenced attempt
		}
		mu.Lock()
		defer mu.Unlock()
		rep.FencedN++
		if len(rep.Fenced) < 20 {
			rep.Fenced = append(rep.Fenced, fmt.Sprintf("%s %s %s: %s", ev.OperationID, ev.AttemptID, ev.Method, ev.Reason))
		}
	}
	s, err := supervise.New(cfg)
	if err != nil {
		return fail(err)
	}

	n := fleetOps()
	var lost atomic.Bool
	invoke := func(op int) (again bool) {
		c := supervise.Call{Scope: scope, OperationID: fleetOp(op), CapabilityID: "example.two_effects@1.0.0",
			Arguments: map[string]any{"target": fleetOp(op)}, EffectBudget: 2}
		late := lost.Load() // asked after a call was answered ErrLeaseLost
		o, err := s.Invoke(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(err, supervise.ErrLeaseLost):
			rep.LeaseLost++
			lost.Store(true)
			return false
		case late:
			rep.LostAfter++
		}
		if o == nil {
			rep.Errors = append(rep.Errors, err.Error())
			return false
		}
		rep.States[string(o.State)]++
		switch o.State {
		case launch.StateSucceeded:
			rep.Results[c.OperationID] = o.Result.AttemptID + " " + string(o.Result.DataDigest)
		case launch.StateRunning:
			rep.Running++
			return true
		}
		return false
	}
	run := func(ops []int) (again []int) {
		work := make(chan int)
		var wg sync.WaitGroup
		var amu sync.Mutex
		for range fleetWorkers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for op := range work {
					if invoke(op) {
						amu.Lock()
						again = append(again, op)
						amu.Unlock()
					}
				}
			}()
		}
		for _, op := range ops {
			if lost.Load() {
				break
			}
			work <- op
		}
		close(work)
		wg.Wait()
		return again
	}
	ops := make([]int, n)
	for k := range ops {
		ops[k] = (i*n/4 + k) % n
	}
	again := run(ops)
	// Stay until the test has seen the paused controller taken over.
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && !lost.Load(); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, fleetDoneFile)); err == nil {
			break
		}
	}
	for round := 0; round < 10 && len(again) > 0 && !lost.Load(); round++ {
		slices.Sort(again)
		again = run(again)
		time.Sleep(ttl / 4)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Close(cctx); err != nil {
		rep.CloseErr = err.Error()
	}
	lg.mu.Lock()
	rep.Warnings = lg.w
	lg.mu.Unlock()
	return 0
}

// newPostgresSchema returns the name of a schema of the test database no
// other run uses, dropped with everything in it when t ends; it skips t
// without a database.
func newPostgresSchema(t *testing.T) (dsn, schema string) {
	t.Helper()
	dsn = os.Getenv(postgresDSN)
	if dsn == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to a database the tests may create and drop schemas in, e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", postgresDSN, postgresDSN)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema = "zeo_test_fleet_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping test schema %s: %v", schema, err)
		}
	})
	return dsn, schema
}

// fleetProc is one controller process of the fleet test.
type fleetProc struct {
	index int
	role  string
	cmd   *exec.Cmd
	out   strings.Builder
	done  chan struct{}
	err   error
	id    string
}

// dispatchLine is one line of the dispatch log.
type dispatchLine struct{ op, effect, auth, pid string }

func readDispatches(t *testing.T, path string) []dispatchLine {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dispatchLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 4 && len(fs) != 3 {
			t.Fatalf("dispatch log line %q", sc.Text())
		}
		l := dispatchLine{op: fs[0], effect: fs[1], auth: fs[2]}
		if len(fs) == 4 {
			l.pid = fs[3]
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func readTakeovers(t *testing.T, dir string) []takeoverRecord {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "takeovers-*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []takeoverRecord
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r takeoverRecord
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("takeover record %q: %v", line, err)
			}
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b takeoverRecord) int { return a.At.Compare(b.At) })
	return out
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// linesFrom returns the dispatch-log-shaped lines of path at or after
// byte offset from (before it when before is set).
func linesFrom(t *testing.T, path string, from int64, before bool) []dispatchLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	from = min(from, int64(len(b)))
	if before {
		b = b[:from]
	} else {
		b = b[from:]
	}
	tmp := filepath.Join(t.TempDir(), "lines")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return readDispatches(t, tmp)
}

// stopped reports whether process pid is stopped (state T in /proc).
func stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

// TestFleet: four controller processes share a PostgreSQL ledger and run
// the same list of operations (two effects each), each beginning at its
// own quarter and going round, so that every operation is asked for by
// every controller, some at the same time: overlapping lists, not
// disjoint ones, because a fleet behind a load balancer gets retries of
// one operation on any controller, and only overlap tests that several
// controllers invoking one operation id never dispatch an effect twice
// nor fence a live controller's attempt. Rotating the start keeps the
// duplicated work mostly to cheap answers from the ledger (a result to
// reconnect to, or "running elsewhere"), so the hosts launched stay close
// to one per operation. One controller is killed with SIGKILL in the
// middle of a dispatch, one is stopped (SIGSTOP) past its lease's ttl and
// then continued. The others take over the orphaned attempts; the woken
// controller acts no more. After a final pass that reconciles every
// effect from the dispatcher's own log (the service's truth) and invokes
// every unfinished operation again, the invariants are checked against the
// log and the ledger.
//
// What the woken controller may still do: a dispatch that had entered the
// dispatcher before the stop completes after it (the entered file proves
// it began before); no process can fence that but the service itself. A
// dispatch that begins after the stop fails the test.
func TestFleet(t *testing.T) {
	dsn, schema := newPostgresSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema}) // creates the schema before the controllers race
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) }) // after the final pass's Supervisor is closed
	n, ttl := fleetOps(), fleetTTL()
	dir, workdir := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	killAt, pauseAt := int64(n/10), int64(n/6) // dispatches of that controller: a fifth and a third into its quarter
	roles := []string{"survivor", "killed", "paused", "survivor"}
	procs := make([]*fleetProc, len(roles))
	start := time.Now()
	for i, role := range roles {
		p := &fleetProc{index: i, role: role, done: make(chan struct{})}
		p.cmd = exec.Command(self)
		p.cmd.Env = append(os.Environ(), fleetEnv+"="+strconv.Itoa(i), fleetSchema+"="+schema, fleetDir+"="+dir,
			fleetOpsEnv+"="+strconv.Itoa(n), fleetRole+"="+role, fleetTTLEnv+"="+ttl.String(),
			ctlHost+"="+hostsimPath, ctlWorkdir+"="+workdir)
		switch role {
		case "killed":
			p.cmd.Env = append(p.cmd.Env, fleetMarkAt+"="+strconv.FormatInt(killAt, 10))
		case "paused":
			p.cmd.Env = append(p.cmd.Env, fleetMarkAt+"="+strconv.FormatInt(pauseAt, 10))
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, os.Stderr
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.id = fleetControllerID(i, p.cmd.Process.Pid)
		go func() { p.err = p.cmd.Wait(); close(p.done) }()
		procs[i] = p
	}
	defer func() {
		for _, p := range procs {
			p.cmd.Process.Signal(syscall.SIGCONT)
			p.cmd.Process.Kill()
			<-p.done
		}
	}()
	killed, paused := procs[1], procs[2]
	waitMarker := func(p *fleetProc) string {
		t.Helper()
		for {
			if b, err := os.ReadFile(filepath.Join(dir, p.role+".mark")); err == nil && len(b) > 0 {
				return string(b)
			}
			select {
			case <-p.done:
				t.Fatalf("the %s controller ended before its marker: %v\n%s", p.role, p.err, p.out.String())
			case <-ctx.Done():
				t.Fatal("no marker")
			case <-time.After(2 * time.Millisecond):
			}
		}
	}

	// SIGKILL in the middle of a dispatch: the effect is in the log, not
	// confirmed in the ledger.
	var killedAt time.Time
	killedEffect := ""
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		killedEffect = waitMarker(killed)
		killedAt = time.Now()
		killed.cmd.Process.Signal(syscall.SIGKILL)
		<-killed.done
	}()

	// SIGSTOP past the ttl, until a survivor has taken one of its attempts
	// over, then SIGCONT.
	pausedPID := paused.cmd.Process.Pid
	waitMarker(paused)
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for !stopped(pausedPID) {
		time.Sleep(time.Millisecond)
	}
	stoppedAt := time.Now()
	logAtStop := fileSize(t, filepath.Join(dir, "dispatches"))
	enteredPath := filepath.Join(dir, fmt.Sprintf("entered-%d", pausedPID))
	enteredAtStop := fileSize(t, enteredPath)
	var expiredAt time.Time
	for expiredAt.IsZero() {
		for _, ls := range mustLeases(t, l) {
			if ls.ControllerID == paused.id && !ls.Live {
				expiredAt = time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for deadline := time.Now().Add(6 * ttl); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if slices.ContainsFunc(readTakeovers(t, dir), func(r takeoverRecord) bool { return r.From == paused.id }) {
			break
		}
	}
	continuedAt := time.Now()
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := os.WriteFile(filepath.Join(dir, fleetDoneFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	reports := map[string]fleetReport{}
	for _, p := range procs {
		<-p.done
		if p.role == "killed" {
			continue
		}
		var rep fleetReport
		if err := json.Unmarshal([]byte(p.out.String()), &rep); err != nil || p.err != nil {
			t.Fatalf("%s controller %s: %v, report %q: %v", p.role, p.id, p.err, p.out.String(), err)
		}
		reports[p.id] = rep
	}
	fleetDone := time.Now()

	// The woken controller: refused, and nothing new dispatched.
	prep := reports[paused.id]
	if prep.LeaseLost == 0 || prep.LostAfter != 0 {
		t.Errorf("woken controller: %d calls answered ErrLeaseLost, %d answered otherwise after the first: %+v", prep.LeaseLost, prep.LostAfter, prep)
	}
	if late := linesFrom(t, enteredPath, enteredAtStop, false); len(late) != 0 {
		t.Errorf("the woken controller started %d dispatches after it was stopped (past its lease): %v", len(late), late)
	}
	enteredBefore := map[string]bool{}
	for _, e := range linesFrom(t, enteredPath, enteredAtStop, true) {
		enteredBefore[e.auth] = true
	}
	inFlightAtStop := 0
	for _, x := range linesFrom(t, filepath.Join(dir, "dispatches"), logAtStop, false) {
		if x.pid != strconv.Itoa(pausedPID) {
			continue
		}
		if !enteredBefore[x.auth] {
			t.Errorf("the woken controller dispatched %s %s (authorization %s) after it was stopped", x.op, x.effect, x.auth)
		}
		inFlightAtStop++ // entered the dispatcher before the stop; only the service could still refuse it
	}

	// Survivors: never fenced off while live, every takeover of a
	// controller whose lease had expired.
	for _, p := range procs {
		rep, ok := reports[p.id]
		if !ok {
			continue
		}
		if p.role == "survivor" && (rep.FencedN != 0 || rep.LeaseLost != 0 || len(rep.Errors) != 0 || rep.CloseErr != "") {
			t.Errorf("survivor %s: %d requests refused with a stale fence %v, %d ErrLeaseLost, errors %v, close %q; warnings %v",
				p.id, rep.FencedN, rep.Fenced, rep.LeaseLost, rep.Errors, rep.CloseErr, rep.Warnings)
		}
		t.Logf("%s %s: states %v, running-elsewhere answers %d, ErrLeaseLost %d, stale-fence refusals %d, close %q",
			p.role, p.id, rep.States, rep.Running, rep.LeaseLost, rep.FencedN, rep.CloseErr)
	}
	takeovers := readTakeovers(t, dir)
	from := map[string]int{}
	var firstKilled, firstPaused time.Time
	for _, r := range takeovers {
		from[r.From]++
		switch r.From {
		case killed.id:
			if firstKilled.IsZero() {
				firstKilled = r.At
			}
		case paused.id:
			if firstPaused.IsZero() {
				firstPaused = r.At
			}
		default:
			t.Errorf("takeover of %s from %s by %s: that controller was never stopped", r.Operation, r.From, r.By)
		}
	}
	if from[killed.id] == 0 || from[paused.id] == 0 {
		t.Errorf("takeovers by controller taken from: %v; want some of the killed %s and of the paused %s", from, killed.id, paused.id)
	}
	t.Logf("ttl %v, renewal every %v, takeover pass every %v; fleet of %d operations ran %v", ttl, ttl/3, ttl/4, n, fleetDone.Sub(start).Round(time.Millisecond))
	t.Logf("SIGKILL → first takeover of the killed controller's attempts: %v (ttl + one renewal period = %v); %d of its attempts taken over",
		firstKilled.Sub(killedAt).Round(time.Millisecond), ttl+ttl/3, from[killed.id])
	t.Logf("SIGSTOP → lease seen expired %v, → first takeover %v; continued after %v; %d of its attempts taken over; %d of its dispatches were inside the dispatcher at the stop and landed after it",
		expiredAt.Sub(stoppedAt).Round(time.Millisecond), firstPaused.Sub(stoppedAt).Round(time.Millisecond),
		continuedAt.Sub(stoppedAt).Round(time.Millisecond), from[paused.id], inFlightAtStop)

	// The log against the ledger as the fleet left it.
	logPath := filepath.Join(dir, "dispatches")
	var consumed map[string]dispatchLine // op/effect → its dispatch
	readConsumed := func() {
		t.Helper()
		consumed = map[string]dispatchLine{}
		byAuth := map[string]int{}
		for _, x := range readDispatches(t, logPath) {
			k := x.op + "/" + x.effect
			if prev, ok := consumed[k]; ok {
				t.Errorf("effect %s dispatched twice: by %s (authorization %s) and %s (authorization %s)", k, prev.pid, prev.auth, x.pid, x.auth)
			}
			consumed[k] = x
			byAuth[x.auth]++
		}
		for a, c := range byAuth {
			if c > 1 {
				t.Errorf("authorization %s dispatched %d times", a, c)
			}
		}
	}
	readConsumed()
	fleetDispatched := len(consumed)
	if _, ok := consumed[strings.ReplaceAll(killedEffect, " ", "/")]; !ok {
		t.Errorf("the effect the killed controller was dispatching (%s) is not in the log", killedEffect)
	}
	views := func() map[string]ledger.OperationView {
		out := make(map[string]ledger.OperationView, n)
		for i := range n {
			v, err := l.Operation(ctx, scope, fleetOp(i))
			if errors.Is(err, ledger.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out[fleetOp(i)] = v
		}
		return out
	}
	checkEffects := func(when string, vs map[string]ledger.OperationView) {
		t.Helper()
		for op, v := range vs {
			if v.Operation.EffectsUsed > v.Operation.EffectBudget || int64(len(v.Effects)) != v.Operation.EffectsUsed {
				t.Errorf("%s: %s used %d effects of a budget of %d, %d recorded", when, op, v.Operation.EffectsUsed, v.Operation.EffectBudget, len(v.Effects))
			}
			for _, e := range v.Effects {
				x, ok := consumed[op+"/"+e.LogicalEffectID]
				switch {
				case ok && x.auth != e.AuthorizationID:
					t.Errorf("%s: %s %s dispatched under authorization %s, recorded %s", when, op, e.LogicalEffectID, x.auth, e.AuthorizationID)
				case ok && e.State == ledger.EffectNotConsumed:
					t.Errorf("%s: %s %s was consumed (%v) and is recorded not consumed", when, op, e.LogicalEffectID, x)
				case ok && e.State == ledger.EffectConfirmed && e.ReceiptID != "rcpt-"+x.auth:
					t.Errorf("%s: %s %s confirmed with receipt %q, dispatched as %v", when, op, e.LogicalEffectID, e.ReceiptID, x)
				case !ok && e.State == ledger.EffectConfirmed:
					t.Errorf("%s: %s %s is confirmed and was never dispatched", when, op, e.LogicalEffectID)
				}
			}
		}
		for k := range consumed {
			op, eff, _ := strings.Cut(k, "/")
			if !slices.ContainsFunc(vs[op].Effects, func(e ledger.Effect) bool { return e.LogicalEffectID == eff }) {
				t.Errorf("%s: %s was dispatched and the ledger has no such effect", when, k)
			}
		}
	}
	checkEffects("after the fleet", views())

	// The final pass: a controller of its own takes over what is left,
	// reconciles every effect from the log, and invokes every unfinished
	// operation until it has a result or is settled without one.
	d := &logDispatcher{pid: os.Getpid()}
	if d.log, err = os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
		t.Fatal(err)
	}
	defer d.log.Close()
	if d.entered, err = os.OpenFile(filepath.Join(dir, "entered-final"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
		t.Fatal(err)
	}
	defer d.entered.Close()
	cfg := config(t, l, newLauncher(t, 0))
	cfg.Dispatcher = d
	s := newSupervisor(t, cfg)
	rec, err := s.Recover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rec.Fenced {
		v, err := l.Operation(ctx, scope, f.OperationID)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range v.Attempts {
			if a.AttemptID == f.AttemptID && a.ControllerID != killed.id && a.ControllerID != paused.id {
				t.Errorf("final pass took over %s's attempt %s of %s, a controller that closed cleanly", a.ControllerID, a.AttemptID, f.OperationID)
			}
		}
	}
	checkEffects("after the final Recover", views())
	resolved, settledRefused, reinvoked := 0, map[string]bool{}, 0
	for round := 0; ; round++ {
		readConsumed()
		unknown, err := l.ListUnknown(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range unknown {
			res := ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}
			if x, ok := consumed[e.OperationID+"/"+e.LogicalEffectID]; ok {
				res = ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt-" + x.auth}
			}
			if _, err := s.Resolve(ctx, scope, e.OperationID, e.LogicalEffectID, res); err != nil {
				t.Fatalf("resolving %s %s: %v", e.OperationID, e.LogicalEffectID, err)
			}
			resolved++
		}
		vs := views()
		var open []string
		for i := range n {
			op := fleetOp(i)
			if v, ok := vs[op]; (!ok || v.Result == nil) && !settledRefused[op] {
				open = append(open, op)
			}
		}
		if len(open) == 0 {
			break
		}
		if round == 4 {
			t.Fatalf("after %d rounds, %d operations have no result: %v", round, len(open), open[:min(len(open), 20)])
		}
		for _, op := range open {
			reinvoked++
			c := supervise.Call{Scope: scope, OperationID: op, CapabilityID: "example.two_effects@1.0.0",
				Arguments: map[string]any{"target": op}, EffectBudget: 2}
			o, err := s.Invoke(ctx, c)
			if o == nil {
				t.Fatalf("final pass, %s: %v", op, err)
			}
			if o.State == launch.StateRefused && slices.ContainsFunc(o.Effects, func(e ledger.Effect) bool { return e.State == ledger.EffectNotConsumed }) {
				// An effect authorized and never dispatched, resolved not
				// consumed: the operation is answered refused for good.
				settledRefused[op] = true
			}
		}
	}
	vs := views()
	readConsumed() // and the final pass's dispatches
	checkEffects("at the end", vs)
	completed := 0
	for i := range n {
		op := fleetOp(i)
		v := vs[op]
		if v.Result == nil {
			notConsumed := slices.ContainsFunc(v.Effects, func(e ledger.Effect) bool {
				_, ok := consumed[op+"/"+e.LogicalEffectID]
				return e.State == ledger.EffectNotConsumed && !ok
			})
			if !notConsumed {
				t.Errorf("%s ended without a result and without an effect resolved not consumed: %+v", op, v.Operation)
			}
			continue
		}
		completed++
		for _, e := range v.Effects {
			if e.State != ledger.EffectConfirmed {
				t.Errorf("%s completed with effect %s %s", op, e.LogicalEffectID, e.State)
			}
		}
		for id, rep := range reports {
			if got, ok := rep.Results[op]; ok && got != v.Result.AttemptID+" "+string(v.Result.DataDigest) {
				t.Errorf("%s answered %s with result %s, the ledger holds %s %s", id, op, got, v.Result.AttemptID, v.Result.DataDigest)
			}
		}
	}
	t.Logf("%d operations, %d completed, %d settled refused (an effect authorized, never dispatched, resolved not consumed); %d effects dispatched by the fleet, %d by the final pass (%d fenced, %d effects resolved, %d invocations)",
		n, completed, n-completed, fleetDispatched, len(consumed)-fleetDispatched, len(rec.Fenced), resolved, reinvoked)
}

func mustLeases(t *testing.T, l ledger.Ledger) []ledger.Lease {
	t.Helper()
	ls, err := l.Leases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ls
}
