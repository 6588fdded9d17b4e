package zeohost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// TestExecute runs echo end to end: Start runs the host's doctor, Execute
// launches the simulated host through the Supervisor and answers the
// accepted result's data; the same operation id again returns it from the
// ledger without launching.
func TestExecute(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	resp, err := execute(t, inst, "op-echo", "example.echo@1.0.0", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error != "" {
		t.Fatalf("Error %q", resp.Error)
	}
	want := map[string]any{"text": "hello"}
	if diff := cmp.Diff(want, resp.Result[zeohost.ResultData]); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if resp.Result[zeohost.ResultState] != "succeeded" || resp.Result[zeohost.ResultLaunched] != true ||
		resp.Result[zeohost.ResultOperationID] != "op-echo" || resp.Result[zeohost.ResultAttemptID] == nil {
		t.Errorf("result %v", resp.Result)
	}
	art, ok := resp.Result[zeohost.ResultArtifact].(map[string]any)
	if !ok {
		t.Fatalf("artifact %v", resp.Result[zeohost.ResultArtifact])
	}
	refs := art["artifact_refs"].([]any)
	a, err := e.b.Supervisor().Artifact(testCtx(t), scope, refs[0].(string))
	if err != nil || string(a.Bytes) != `{"text":"hello"}` {
		t.Errorf("artifact %q, %v", a.Bytes, err)
	}

	again, err := execute(t, inst, "op-echo", "example.echo@1.0.0", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Result[zeohost.ResultReconnected] != true || again.Result[zeohost.ResultLaunched] != false {
		t.Errorf("a redelivered Execute launched: %v", again.Result)
	}
	if diff := cmp.Diff(want, again.Result[zeohost.ResultData]); diff != "" {
		t.Errorf("redelivered data (-want +got):\n%s", diff)
	}

	// The operation id is the ExecutionID when params name none, and a
	// fresh one, returned, when neither does.
	resp, err = inst.Execute(testCtx(t), &capabilityruntime.Request{ExecutionID: "op-echo",
		Params: map[string]any{zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: map[string]any{"text": "hello"}}})
	if err != nil || resp.Result[zeohost.ResultReconnected] != true {
		t.Errorf("ExecutionID as the operation id: %v, %v", resp, err)
	}
	resp, err = inst.Execute(testCtx(t), &capabilityruntime.Request{
		Params: map[string]any{zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: map[string]any{"text": "x"}}})
	if err != nil || !strings.HasPrefix(resp.Result[zeohost.ResultOperationID].(string), "zeohost-") {
		t.Errorf("fresh operation id: %v, %v", resp, err)
	}
	// The same operation id with another request is not an outcome.
	_, err = execute(t, inst, "op-echo", "example.echo@1.0.0", map[string]any{"text": "other"})
	if !errors.Is(err, supervise.ErrOperationMismatch) {
		t.Errorf("operation id reused: %v, want ErrOperationMismatch", err)
	}
	if err := inst.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := execute(t, inst, "op-2", "example.echo@1.0.0", nil); !errors.Is(err, zeohost.ErrClosed) {
		t.Errorf("Execute after Close: %v, want ErrClosed", err)
	}
}

// TestTwoEffects runs two effects through the Supervisor's ledger: the
// second one's dispatch is uncertain (needs_reconciliation); once it is
// resolved, the retried Execute with the same operation id continues the
// operation, and both effects are answered from the ledger, dispatched
// once each. A third Execute returns the result without launching.
func TestTwoEffects(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	e.d.set("effect-2", "uncertain")
	args := map[string]any{"target": "doc-1"}
	resp, err := execute(t, inst, "op-effects", "example.two_effects@1.0.0", args)
	callError(t, resp, err, zeohost.CodeNeedsReconciliation, supervise.ErrNeedsReconciliation)
	if got := len(resp.Result[zeohost.ResultEffects].([]any)); got != 2 {
		t.Fatalf("%d effects recorded, want 2: %v", got, resp.Result)
	}
	if _, err := e.b.Supervisor().Resolve(testCtx(t), scope, "op-effects", "effect-2",
		ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt-reconciled"}); err != nil {
		t.Fatal(err)
	}
	resp, err = execute(t, inst, "op-effects", "example.two_effects@1.0.0", args)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Result[zeohost.ResultLaunched] != true || resp.Result[zeohost.ResultGeneration] != float64(2) {
		t.Errorf("the retry did not run a second attempt: %v", resp.Result)
	}
	data := resp.Result[zeohost.ResultData].(map[string]any)
	if diff := cmp.Diff([]any{"rcpt-effect-1", "rcpt-reconciled"}, data["receipts"]); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
	if e.d.count("effect-1") != 1 || e.d.count("effect-2") != 1 {
		t.Errorf("dispatches: effect-1 %d, effect-2 %d; want 1 each", e.d.count("effect-1"), e.d.count("effect-2"))
	}
	if resp.Result[zeohost.ResultBudgetUsed] != float64(2) {
		t.Errorf("budget used %v, want 2", resp.Result[zeohost.ResultBudgetUsed])
	}
	resp, err = execute(t, inst, "op-effects", "example.two_effects@1.0.0", args)
	if err != nil || resp.Result[zeohost.ResultReconnected] != true {
		t.Fatalf("third Execute: %v, %v", resp, err)
	}
	if e.d.count("effect-1") != 1 || e.d.count("effect-2") != 1 {
		t.Errorf("a redelivered Execute dispatched: effect-1 %d, effect-2 %d", e.d.count("effect-1"), e.d.count("effect-2"))
	}
}

// TestRefusedAdmission: the embedder's Authority refuses the admission;
// Execute answers Response.Error "refused" with the Authority's reason, and
// nothing is launched or dispatched. A capability failure is a code too.
func TestRefusedAdmission(t *testing.T) {
	e := newEnv(t, func(c *zeohost.Config) { c.Supervisor.Authority = refuser{} })
	inst := e.start(t, spec(hostsimPath))
	resp, err := execute(t, inst, "op-refused", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"})
	ce := callError(t, resp, err, zeohost.CodeRefused, supervise.ErrRefused)
	if reason, _ := resp.Result[zeohost.ResultReason].(string); !strings.Contains(reason, "no consent for this seat") {
		t.Errorf("reason %q does not carry the Authority's", reason)
	}
	if resp.Result[zeohost.ResultLaunched] != false || ce.Outcome.Outcome.Launched {
		t.Errorf("a refused admission launched: %v", resp.Result)
	}
	if ce.Runtime.Message != zeohost.CodeRefused || ce.Runtime.Type != "acme:zeo-demo" {
		t.Errorf("RuntimeError %+v", ce.Runtime)
	}
	if e.d.count("effect-1") != 0 {
		t.Errorf("a refused admission dispatched")
	}
}

// TestCodes: a capability failure, a capability outside the inventory and
// params that say nothing runnable.
func TestCodes(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	resp, err := execute(t, inst, "op-fail", "example.fail@1.0.0", map[string]any{})
	callError(t, resp, err, zeohost.CodeFailed, supervise.ErrFailed)
	resp, err = execute(t, inst, "op-missing", "example.missing@1.0.0", map[string]any{})
	callError(t, resp, err, zeohost.CodeRefused, supervise.ErrRefused)
	if !errors.Is(err, supervise.ErrPreflight) {
		t.Errorf("%v does not wrap ErrPreflight", err)
	}
	for name, params := range map[string]map[string]any{
		"no capability":  {zeohost.ParamArguments: map[string]any{}},
		"unknown key":    {zeohost.ParamCapabilityID: "example.echo@1.0.0", "operation": "x"},
		"arguments list": {zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: []any{1}},
		"empty id":       {zeohost.ParamCapabilityID: ""},
	} {
		resp, err := inst.Execute(testCtx(t), &capabilityruntime.Request{Params: params})
		if resp != nil || !errors.Is(err, zeohost.ErrInvalidParams) {
			t.Errorf("%s: %v, %v; want ErrInvalidParams", name, resp, err)
		}
	}
	_, err = inst.Execute(testCtx(t), &capabilityruntime.Request{ExecutionID: "a",
		Params: map[string]any{zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamOperationID: "b"}})
	if !errors.Is(err, zeohost.ErrInvalidParams) {
		t.Errorf("two operation ids: %v", err)
	}
}

// TestStart: what Start refuses, before anything runs or after the doctor.
func TestStart(t *testing.T) {
	e := newEnv(t, nil)
	ctx := testCtx(t)
	mutate := func(f func(*capabilityruntime.BackendSpec)) capabilityruntime.BackendSpec {
		s := spec(hostsimPath)
		f(&s)
		return s
	}
	for name, s := range map[string]capabilityruntime.BackendSpec{
		"grpc protocol":   mutate(func(s *capabilityruntime.BackendSpec) { s.Protocol = capabilityruntime.ProtocolV1 }),
		"relative root":   mutate(func(s *capabilityruntime.BackendSpec) { s.RootDir = "envs/demo" }),
		"escaping":        mutate(func(s *capabilityruntime.BackendSpec) { s.Entrypoint = "../../bin/sh" }),
		"no config":       mutate(func(s *capabilityruntime.BackendSpec) { s.Config = nil }),
		"unknown key":     mutate(func(s *capabilityruntime.BackendSpec) { s.Config["ledger"] = "/tmp/other.db" }),
		"no scope":        mutate(func(s *capabilityruntime.BackendSpec) { delete(s.Config, zeohost.ConfigScope) }),
		"negative budget": mutate(func(s *capabilityruntime.BackendSpec) { s.Config[zeohost.ConfigEffectBudget] = -1 }),
		"python version": mutate(func(s *capabilityruntime.BackendSpec) {
			b := hostsim.DemoBinding()
			b.PythonVersion = "3.9.0"
			s.Config[zeohost.ConfigBinding] = b
		}),
		"missing interpreter": mutate(func(s *capabilityruntime.BackendSpec) { s.Entrypoint = "no-such-python" }),
	} {
		if inst, err := e.b.Start(ctx, s); !errors.Is(err, zeohost.ErrInvalidSpec) {
			t.Errorf("%s: %v, %v; want ErrInvalidSpec", name, inst, err)
		}
	}
	// A host whose doctor contradicts the binding is refused at Start.
	liar := newEnv(t, nil, hostproc.EnvScenario+"=lie")
	_, err := liar.b.Start(ctx, spec(hostsimPath))
	if !errors.Is(err, zeohost.ErrDoctor) || !errors.Is(err, discovery.ErrMismatch) {
		t.Errorf("lying doctor: %v, want ErrDoctor and discovery.ErrMismatch", err)
	}
	// Another environment for a live binding is a conflict.
	inst := e.start(t, spec(hostsimPath))
	other := copyHost(t)
	if _, err := e.b.Start(ctx, spec(other)); !errors.Is(err, zeohost.ErrSpecConflict) {
		t.Errorf("second environment: %v, want ErrSpecConflict", err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	second := e.start(t, spec(other))
	if err := second.Health(ctx); err != nil {
		t.Errorf("once the first closed: %v", err)
	}
}

// copyHost copies the simulated host into a directory of the test's own:
// a provider environment the test may break.
func copyHost(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(hostsimPath)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(p, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHealth: Health runs the host's doctor; once the provider
// environment's interpreter is broken it fails, with the process
// evidence, and Execute fails too.
func TestHealth(t *testing.T) {
	e := newEnv(t, nil)
	interp := copyHost(t)
	inst := e.start(t, spec(interp))
	if err := inst.Health(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// The interpreter is replaced by one that exits 1, as a broken
	// environment would.
	if err := os.WriteFile(interp+".new", []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(interp+".new", interp); err != nil {
		t.Fatal(err)
	}
	err := inst.Health(testCtx(t))
	if !errors.Is(err, zeohost.ErrDoctor) {
		t.Fatalf("Health of a broken binding: %v, want ErrDoctor", err)
	}
	de, ok := errors.AsType[*discovery.Error](err)
	if !ok || de.Process == nil || de.Process.ExitCode != 1 {
		t.Fatalf("Health's error %v carries no process evidence", err)
	}
	resp, err := execute(t, inst, "op-broken", "example.echo@1.0.0", map[string]any{"text": "x"})
	if err == nil || (resp != nil && resp.Error == "") {
		t.Errorf("Execute on a broken binding: %v, %v", resp, err)
	}
}

// TestCloseDrains: Close with a call in flight (its effect blocked in the
// Dispatcher) refuses new calls at once, waits for the call, which
// succeeds, and returns nil.
func TestCloseDrains(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	e.d.set("effect-1", "block")
	type answer struct {
		resp *capabilityruntime.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := inst.Execute(context.Background(), &capabilityruntime.Request{Params: map[string]any{
			zeohost.ParamCapabilityID: "example.two_effects@1.0.0", zeohost.ParamArguments: map[string]any{"target": "doc-1"},
			zeohost.ParamOperationID: "op-inflight"}})
		done <- answer{resp, err}
	}()
	<-e.d.entered
	closed := make(chan error, 1)
	go func() { closed <- inst.Close(testCtx(t)) }()
	for !zeohost.Closing(inst) {
		time.Sleep(time.Millisecond)
	}
	if _, err := execute(t, inst, "op-late", "example.echo@1.0.0", nil); !errors.Is(err, zeohost.ErrClosed) {
		t.Errorf("Execute while closing: %v, want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned %v with a call in flight", err)
	default:
	}
	close(e.d.release)
	a := <-done
	if a.err != nil || a.resp.Result[zeohost.ResultState] != "succeeded" {
		t.Errorf("the drained call: %v, %v", a.resp, a.err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestCloseAtBound: Close whose context ends with a call in flight (its
// host paused before publishing) cancels it: the host is stopped, the
// call returns its recorded outcome (protocol_error: continue it with the
// same operation id), not a hang, and Close returns within its grace.
func TestCloseAtBound(t *testing.T) {
	admitted := make(chan struct{}, 1)
	e := newEnv(t, func(c *zeohost.Config) {
		c.Supervisor.Observer = func(ev supervise.Event) {
			if ev.Kind == supervise.EventRequest && ev.Method == ipc.MethodAdmit {
				select {
				case admitted <- struct{}{}:
				default:
				}
			}
		}
	}, hostproc.EnvScenario+"=hang-before-publish")
	inst := e.start(t, spec(hostsimPath))
	done := make(chan error, 1)
	var resp *capabilityruntime.Response
	go func() {
		var err error
		resp, err = inst.Execute(context.Background(), &capabilityruntime.Request{Params: map[string]any{
			zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamArguments: map[string]any{"text": "x"},
			zeohost.ParamOperationID: "op-paused"}})
		done <- err
	}()
	<-admitted
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the bound has passed: Close cancels at once
	if err := inst.Close(ctx); err != nil {
		t.Errorf("Close at its bound: %v", err)
	}
	err := <-done
	if _, ok := errors.AsType[*zeohost.CallError](err); !ok || resp == nil || resp.Error != zeohost.CodeProtocolError {
		t.Fatalf("the cut call: %v, %v; want a controlled failure", resp, err)
	}
	// The outcome is recorded: the operation is not running any more.
	evs, err := e.l.Evidence(testCtx(t), scope, "op-paused")
	if err != nil || len(evs) != 1 {
		t.Errorf("evidence of the cut attempt: %v, %v", evs, err)
	}
}

// TestCancelledAndRunning: an operation cancelled through the backend's
// Supervisor is answered cancelled without launching; an Execute of an
// operation whose attempt is running (its effect blocked in the
// Dispatcher) and whose context ends first is answered running, and the
// operation, once done, is returned to a later Execute from the ledger.
func TestCancelledAndRunning(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	if _, err := e.b.Supervisor().Cancel(testCtx(t), scope, "op-cancelled", "the user changed their mind"); err != nil {
		t.Fatal(err)
	}
	resp, err := execute(t, inst, "op-cancelled", "example.echo@1.0.0", map[string]any{"text": "x"})
	callError(t, resp, err, zeohost.CodeCancelled, supervise.ErrCancelled)
	if resp.Result[zeohost.ResultLaunched] != false {
		t.Errorf("a cancelled operation launched: %v", resp.Result)
	}

	e.d.set("effect-1", "block")
	params := map[string]any{zeohost.ParamCapabilityID: "example.two_effects@1.0.0",
		zeohost.ParamArguments: map[string]any{"target": "doc-1"}, zeohost.ParamOperationID: "op-running"}
	done := make(chan error, 1)
	go func() {
		_, err := inst.Execute(context.Background(), &capabilityruntime.Request{Params: params})
		done <- err
	}()
	<-e.d.entered
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err = inst.Execute(ended, &capabilityruntime.Request{Params: params})
	callError(t, resp, err, zeohost.CodeRunning, supervise.ErrRunning)
	close(e.d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	resp, err = inst.Execute(testCtx(t), &capabilityruntime.Request{Params: params})
	if err != nil || resp.Result[zeohost.ResultReconnected] != true {
		t.Errorf("after the attempt: %v, %v", resp, err)
	}
}

// TestMaxWorkers: with MaxWorkers 1, a second call waits for the first
// one's slot within its own context, and fails with its cause (nothing
// launched) when that ends first.
func TestMaxWorkers(t *testing.T) {
	e := newEnv(t, nil)
	s := spec(hostsimPath)
	s.MaxWorkers = 1
	inst := e.start(t, s)
	e.d.set("effect-1", "block")
	done := make(chan error, 1)
	go func() {
		_, err := execute(t, inst, "op-first", "example.two_effects@1.0.0", map[string]any{"target": "doc-1"})
		done <- err
	}()
	<-e.d.entered
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	resp, err := inst.Execute(ended, &capabilityruntime.Request{Params: map[string]any{
		zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamOperationID: "op-second"}})
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Errorf("second call: %v, %v; want context.Canceled", resp, err)
	}
	close(e.d.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := e.l.Operation(testCtx(t), scope, "op-second"); !errors.Is(err, ledger.ErrNotFound) {
		t.Errorf("the refused call was recorded: %v", err)
	}
}

// TestBackendCloseDrains: the Backend's Close (Supervisor.Close) with a
// call in flight refuses new Starts and calls at once, drains the call,
// which succeeds, and then releases the controller's lease.
func TestBackendCloseDrains(t *testing.T) {
	e := newEnv(t, nil)
	inst := e.start(t, spec(hostsimPath))
	e.d.set("effect-1", "block")
	done := make(chan error, 1)
	go func() {
		_, err := inst.Execute(context.Background(), &capabilityruntime.Request{Params: map[string]any{
			zeohost.ParamCapabilityID: "example.two_effects@1.0.0", zeohost.ParamArguments: map[string]any{"target": "doc-1"},
			zeohost.ParamOperationID: "op-draining"}})
		done <- err
	}()
	<-e.d.entered
	closed := make(chan error, 1)
	go func() { closed <- e.b.Close(testCtx(t)) }()
	for !zeohost.BackendClosing(e.b) {
		time.Sleep(time.Millisecond)
	}
	if _, err := e.b.Start(testCtx(t), spec(hostsimPath)); !errors.Is(err, zeohost.ErrClosed) {
		t.Errorf("Start while closing: %v, want ErrClosed", err)
	}
	if _, err := execute(t, inst, "op-late", "example.echo@1.0.0", nil); !errors.Is(err, zeohost.ErrClosed) {
		t.Errorf("Execute while closing: %v, want ErrClosed", err)
	}
	close(e.d.release)
	if err := <-done; err != nil {
		t.Errorf("the drained call: %v", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	leases, err := e.l.Leases(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		if l.Live {
			t.Errorf("lease %s still live after a drained Close", l.ControllerID)
		}
	}
}
