package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// The restart test runs controllers as real processes: the test binary
// re-executed with controllerEnv set, configured by these variables.
const (
	controllerEnv  = "ZEO_SUPERVISE_TEST_CONTROLLER"
	ctlLedger      = "ZEO_SUPERVISE_TEST_LEDGER"       // bolt file
	ctlHost        = "ZEO_SUPERVISE_TEST_HOST"         // simulated host executable
	ctlWorkdir     = "ZEO_SUPERVISE_TEST_WORKDIR"      // the host's working directory
	ctlScenario    = "ZEO_SUPERVISE_TEST_SCENARIO"     // the host's ZEO_HOSTSIM_SCENARIO
	ctlDispatchLog = "ZEO_SUPERVISE_TEST_DISPATCH_LOG" // one line per dispatch, appended and synced
	ctlRecover     = "ZEO_SUPERVISE_TEST_RECOVER"      // "1": Recover before invoking
)

// controllerReport is what a controller process prints on stdout.
type controllerReport struct {
	Recovery    *supervise.Recovery `json:"recovery,omitempty"`
	State       launch.State        `json:"state"`
	AttemptID   string              `json:"attempt_id"`
	Launched    bool                `json:"launched"`
	Reconnected bool                `json:"reconnected"`
	Refs        []string            `json:"refs"`
	Err         string              `json:"err,omitempty"`
}

// fileDispatcher appends each dispatched effect id to a file and syncs it
// before answering, so that dispatches are counted across processes, and
// answers receipt "rcpt-<id>-<pid of the controller>".
type fileDispatcher struct{ path string }

func (d fileDispatcher) Dispatch(_ context.Context, x port.Dispatch) (port.Receipt, error) {
	f, err := os.OpenFile(d.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return port.Receipt{}, port.NotConsumed(err.Error())
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, x.LogicalEffectID); err != nil {
		return port.Receipt{}, err
	}
	if err := f.Sync(); err != nil {
		return port.Receipt{}, err
	}
	return port.Receipt{ReceiptID: fmt.Sprintf("rcpt-%s-%d", x.LogicalEffectID, os.Getpid())}, nil
}

// controllerMain is a controller process: it opens the ledger, recovers
// when asked, invokes operation op-restart (two effects) and reports.
func controllerMain() int {
	ctx := context.Background()
	rep := controllerReport{}
	defer func() { json.NewEncoder(os.Stdout).Encode(rep) }()
	fail := func(err error) int { rep.Err = err.Error(); return 1 }
	l, err := bolt.Open(os.Getenv(ctlLedger), bolt.Options{})
	if err != nil {
		return fail(err)
	}
	defer l.Close(ctx)
	var env []string
	if sc := os.Getenv(ctlScenario); sc != "" {
		env = append(env, hostproc.EnvScenario+"="+sc)
	}
	ln, err := launch.New(launch.Config{Interpreter: os.Getenv(ctlHost), Env: env, Dir: os.Getenv(ctlWorkdir),
		Verifier: environment.Trust{}, AllowRootHost: true})
	if err != nil {
		return fail(err)
	}
	cfg := config(nil, l, ln)
	cfg.Dispatcher = fileDispatcher{os.Getenv(ctlDispatchLog)}
	s, err := supervise.New(cfg)
	if err != nil {
		return fail(err)
	}
	if os.Getenv(ctlRecover) == "1" {
		r, err := s.Recover(ctx)
		if err != nil {
			return fail(err)
		}
		rep.Recovery = &r
	}
	c := call("op-restart", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
	c.Deadline = time.Time{} // as recorded; the first controller creates it
	o, err := s.Invoke(ctx, c)
	if o == nil {
		return fail(err)
	}
	rep.State, rep.AttemptID, rep.Launched, rep.Reconnected = o.State, o.AttemptID, o.Launched, o.Reconnected
	if o.Result != nil {
		rep.Refs = o.Result.ArtifactRefs
	}
	if err != nil {
		rep.Err = err.Error()
	}
	return 0
}

// controller starts a controller process.
func controller(t *testing.T, dir, workdir, scenario string, recover bool) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), controllerEnv+"=1", ctlLedger+"="+filepath.Join(dir, "ledger.db"), ctlHost+"="+hostsimPath,
		ctlWorkdir+"="+workdir, ctlScenario+"="+scenario, ctlDispatchLog+"="+filepath.Join(dir, "dispatches"))
	if recover {
		cmd.Env = append(cmd.Env, ctlRecover+"=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, &out
}

// runController runs a controller process to its end and returns its
// report.
func runController(t *testing.T, dir, workdir string, recover bool) controllerReport {
	t.Helper()
	cmd, out := controller(t, dir, workdir, "", recover)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("controller: %v; output %s", err, out)
	}
	var rep controllerReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("controller report %q: %v", out, err)
	}
	return rep
}

// waitFile waits until path exists and returns its content; exited, which
// is closed when the controller ends, must not be closed first, and the
// test's deadline bounds the wait.
func waitFile(t *testing.T, path string, exited <-chan struct{}) []byte {
	t.Helper()
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b
		}
		select {
		case <-exited:
			t.Fatalf("the controller exited before %s appeared", path)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestControllerRestart: a controller is killed with SIGKILL between the
// confirmation of an attempt's effects and its result.publish. A new
// controller process recovers (the attempt left open is fenced off), and
// its attempt redelivers both effects: the same receipts, the dispatcher
// called once per effect in total, the result accepted once; a third
// controller finds the result without launching.
func TestControllerRestart(t *testing.T) {
	// Orphans of the killed controller (its paused host) are reparented
	// to this process, which reaps them.
	becomeSubreaper(t)
	dir, workdir := t.TempDir(), t.TempDir()
	first, _ := controller(t, dir, workdir, "hang-before-publish", false)
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = first.Wait(); close(exited) }()
	pidText := waitFile(t, filepath.Join(workdir, hostproc.PausedPIDFile), exited)
	hostPID, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	// Both effects are confirmed (the host had their allowed replies);
	// the result is not published. Kill the controller, then its host.
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	if waitErr == nil || first.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("first controller: %v, want killed", waitErr)
	}
	if err := syscall.Kill(-hostPID, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the orphaned host's group: %v", err)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(hostPID, &ws, 0, nil); err != nil {
		t.Fatalf("reaping the orphaned host: %v", err)
	}
	lines := func() []string {
		b, err := os.ReadFile(filepath.Join(dir, "dispatches"))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Fields(string(b))
	}
	if got := lines(); strings.Join(got, " ") != "effect-1 effect-2" {
		t.Fatalf("dispatches before the restart: %v", got)
	}

	second := runController(t, dir, workdir, true)
	if second.Err != "" || second.State != launch.StateSucceeded || !second.Launched || second.Recovery == nil ||
		len(second.Recovery.Fenced) != 1 || len(second.Recovery.Unknown) != 0 {
		t.Fatalf("second controller: %+v", second)
	}
	if got := lines(); strings.Join(got, " ") != "effect-1 effect-2" {
		t.Fatalf("dispatches after the restart: %v, want each effect once in total", got)
	}
	third := runController(t, dir, workdir, false)
	if third.State != launch.StateSucceeded || third.Launched || !third.Reconnected || strings.Join(third.Refs, " ") != strings.Join(second.Refs, " ") {
		t.Fatalf("third controller: %+v, second %+v", third, second)
	}

	// The ledger, as the controllers left it.
	ctx := testCtx(t)
	l := openBolt(t, dir)
	view, err := l.Operation(ctx, scope, "op-restart")
	if err != nil {
		t.Fatal(err)
	}
	killed := second.Recovery.Fenced[0]
	if len(view.Attempts) != 3 || view.Attempts[0].AttemptID != killed.AttemptID || view.Result == nil ||
		view.Result.AttemptID != second.AttemptID || view.Operation.EffectsUsed != 2 {
		t.Fatalf("operation after the restart: %+v", view)
	}
	for _, e := range view.Effects {
		if e.State != ledger.EffectConfirmed || e.AttemptID != killed.AttemptID || !strings.HasPrefix(e.ReceiptID, "rcpt-"+e.LogicalEffectID+"-") {
			t.Fatalf("effect %+v", e)
		}
	}
	a, err := l.Artifact(ctx, scope, view.Result.ArtifactRefs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"receipts":["%s","%s"],"target":"doc-1"}`, view.Effects[0].ReceiptID, view.Effects[1].ReceiptID)
	if string(a.Bytes) != want {
		t.Fatalf("artifact %s, want the first controller's receipts %s", a.Bytes, want)
	}
	evs, err := l.Evidence(ctx, scope, "op-restart")
	if err != nil || len(evs) != 1 || evs[0].AttemptID != second.AttemptID || evs[0].State != "succeeded" {
		t.Fatalf("evidence %+v, %v: want only the second controller's attempt, succeeded", evs, err)
	}
	if _, err := l.Artifact(ctx, ledger.Scope{OrganizationID: "org-b", ProjectID: scope.ProjectID}, view.Result.ArtifactRefs[0]); !errors.Is(err, ledger.ErrOutOfScope) {
		t.Fatalf("artifact from another organization: %v", err)
	}
}
