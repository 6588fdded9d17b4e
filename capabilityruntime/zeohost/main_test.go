package zeohost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/serve"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

// nativeType is the capability runtime type under which this test binary,
// re-executed by the process backend, is a one-shot JSON runtime (see
// TestMain): the process runtime of the registry test costs no build.
const nativeType = "acme:zeohost-native"

func TestMain(m *testing.M) {
	// The contained hosts of these tests start as this binary (contain.Init,
	// which RunHost calls), and ExampleBackend_Start's hosts are this
	// binary re-executed as supervisetest's simulated host.
	supervisetest.RunHost()
	if os.Getenv(capabilityruntime.EnvType) == nativeType {
		os.Exit(nativeMain())
	}
	os.Exit(testbin.RunWithHostsim(m, &hostsimPath))
}

// nativeMain is the process runtime: it echoes its params with its kind.
func nativeMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := serve.Serve(ctx, serve.Handler{Execute: func(_ context.Context, req *serve.Call) (map[string]any, error) {
		if req.Params["do"] == "fail" {
			return nil, errors.New("asked to fail")
		}
		return map[string]any{"kind": capabilityruntime.RuntimeKindProcess, "params": req.Params}, nil
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

var scope = ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}

// dispatcher counts every dispatch per logical effect and answers by the
// mode set for the effect id: consumed (default), "uncertain" (an error:
// the effect is recorded unknown), "block" (waits for release, then
// consumed).
type dispatcher struct {
	mu      sync.Mutex
	calls   map[string]int
	mode    map[string]string
	entered chan string
	release chan struct{}
}

func newDispatcher() *dispatcher {
	return &dispatcher{calls: map[string]int{}, mode: map[string]string{}, entered: make(chan string, 16), release: make(chan struct{})}
}

func (d *dispatcher) set(id, mode string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mode[id] = mode
}

func (d *dispatcher) count(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[id]
}

func (d *dispatcher) Dispatch(ctx context.Context, x port.Dispatch) (port.Receipt, error) {
	id := x.LogicalEffectID
	d.mu.Lock()
	d.calls[id]++
	mode := d.mode[id]
	d.mu.Unlock()
	switch mode {
	case "uncertain":
		return port.Receipt{}, errors.New("connection reset while dispatching " + id)
	case "block":
		d.entered <- id
		select {
		case <-d.release:
		case <-ctx.Done():
			return port.Receipt{}, ctx.Err()
		}
	}
	return port.Receipt{ReceiptID: "rcpt-" + id}, nil
}

// refuser is an Authority that refuses every admission.
type refuser struct{ port.AllowAll }

func (refuser) Admit(context.Context, port.Admission) (port.Verdict, error) {
	return port.Verdict{Decision: port.Refuse, Reason: "test authority: no consent for this seat"}, nil
}

// env is one test's backend, ledger and dispatcher.
type env struct {
	b *zeohost.Backend
	l *bolt.Ledger
	d *dispatcher
}

// newEnv returns a zeohost Backend on a fresh bolt ledger and the simulated
// host, with hostEnv as the hosts' whole environment; mutate, when set,
// changes the config first. The test's cleanup closes the backend and the
// ledger, then checks that no goroutine is left.
func newEnv(t *testing.T, mutate func(*zeohost.Config), hostEnv ...string) *env {
	t.Helper()
	check := leaktest.Goroutines(t)
	l, err := bolt.Open(filepath.Join(t.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := newDispatcher()
	cfg := zeohost.Config{
		Supervisor: supervise.Config{Ledger: l, Dispatcher: d, HostPythonVersion: hostsim.DefaultPythonVersion,
			SeatID: "seat-a", RuntimeBindingID: "runtime-a", Workspace: "/workspace-a"},
		Launch: launch.Config{Env: hostEnv, Verifier: environment.Trust{}, Grace: 200 * time.Millisecond,
			WaitDelay:     500 * time.Millisecond,
			AllowRootHost: true}, // tests run as whoever runs them, root included
	}
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := zeohost.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the backend: %v", err)
		}
		l.Close(ctx)
		check()
	})
	return &env{b: b, l: l, d: d}
}

// spec is the BackendSpec of the simulated provider's demo binding, run by
// interpreter (relative to its directory), with an effect budget of 2.
func spec(interpreter string) capabilityruntime.BackendSpec {
	return capabilityruntime.BackendSpec{
		Type: "acme:zeo-demo", Version: "1.0.0",
		Entrypoint: filepath.Base(interpreter), RootDir: filepath.Dir(interpreter),
		Config: map[string]any{
			zeohost.ConfigBinding:      hostsim.DemoBinding(),
			zeohost.ConfigScope:        map[string]any{"organization_id": scope.OrganizationID, "project_id": scope.ProjectID},
			zeohost.ConfigEffectBudget: 2,
		},
	}
}

func (e *env) start(t *testing.T, s capabilityruntime.BackendSpec) capabilityruntime.BackendInstance {
	t.Helper()
	inst, err := e.b.Start(testCtx(t), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// execute runs one capability as operation op.
func execute(t *testing.T, inst capabilityruntime.BackendInstance, op, capability string, args map[string]any) (*capabilityruntime.Response, error) {
	t.Helper()
	return inst.Execute(testCtx(t), &capabilityruntime.Request{Params: map[string]any{
		zeohost.ParamCapabilityID: capability, zeohost.ParamArguments: args, zeohost.ParamOperationID: op}})
}

// callError asserts that err is a controlled failure with code: a
// *zeohost.CallError wrapping ErrRuntimeFailure and sentinel, next to a
// Response whose Error is code.
func callError(t *testing.T, resp *capabilityruntime.Response, err error, code string, sentinel error) *zeohost.CallError {
	t.Helper()
	ce, ok := errors.AsType[*zeohost.CallError](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *zeohost.CallError", err, err)
	}
	if resp == nil || resp.Error != code {
		t.Fatalf("response %+v, want Error %q", resp, code)
	}
	if !errors.Is(err, capabilityruntime.ErrRuntimeFailure) || !errors.Is(err, sentinel) {
		t.Fatalf("error %v does not wrap ErrRuntimeFailure and %v", err, sentinel)
	}
	if resp.Result[zeohost.ResultState] != code {
		t.Fatalf("result state %v, want %q", resp.Result[zeohost.ResultState], code)
	}
	return ce
}
