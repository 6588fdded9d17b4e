package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// demoScope is the organization and project of the demo's operations.
var demoScope = ledger.Scope{OrganizationID: "org-demo", ProjectID: "project-demo"}

func demoCommand() *command {
	return &command{
		name:      "demo",
		usageLine: "demo [-ledger PATH]",
		short:     "run capability operations end to end on the simulated host and print the trace",
		long: `Demo runs capability operations end to end, exactly as an embedding
controller would with package supervise, and prints what happens: the
launch, each IPC request and the state it was answered, the ledger's
evidence (fence, bootstrap redemption, each effect with its authorization
and receipt, the budget left) and the result with its artifact.

It needs nothing but Go: the host is zeoctl itself in its hidden host mode
(the simulated host; see 'zeoctl help host'), and the ledger is a bolt file
in a temporary directory, removed at the end, or at -ledger PATH, kept for
'zeoctl ledger' and 'zeoctl artifact' to inspect.

The steps:

  1. example.echo@1.0.0: a capability with no effects.
  2. example.two_effects@1.0.0: two effects, each authorized by the ledger,
     dispatched once and confirmed with a receipt.
  3. A redelivery: the host of a new operation is lost once the ledger has
     confirmed its two effects, before it publishes; the next attempt sends
     the same logical effects again and gets the same receipts from the
     ledger, with no second dispatch.
  4. A lost result: invoking step 2's operation again returns its accepted
     result from the ledger, without launching anything.

Demo exits 0 when every step showed what it should.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			path := fs.String("ledger", "", "the ledger to use and keep: a bolt `file`, or a postgres:// DSN (default: a temporary file, removed at the end)")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return demo(ctx, e, *path)
			}
		},
	}
}

// demoDispatcher stands for the credential holder: it "consumes" each
// effect by counting it, and answers a receipt derived from the
// authorization id.
type demoDispatcher struct {
	mu    sync.Mutex // guards calls
	calls int
}

func (d *demoDispatcher) Dispatch(_ context.Context, disp supervise.Dispatch) (supervise.Receipt, error) {
	d.mu.Lock()
	d.calls++
	d.mu.Unlock()
	return supervise.Receipt{ReceiptID: "receipt-for-" + disp.AuthorizationID,
		Result: map[string]any{"operation": disp.Request.Operation}}, nil
}

func (d *demoDispatcher) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

func demo(ctx context.Context, e *env, path string) (err error) {
	kept := path != ""
	if !kept {
		dir, err := os.MkdirTemp("", "zeoctl-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "ledger.db")
	}
	l, err := openLedger(ctx, path)
	if err != nil {
		return err
	}
	defer closeLedger(l, &err)

	w := e.stdout
	tr := &tracer{w: w}
	disp := &demoDispatcher{}
	// One Supervisor for the whole demo, as one controller has: its two
	// provider environments are the simulated host as it is, and the same
	// host told to lose itself before it publishes (step 3).
	hf := hostFlags{simulated: true}
	base, cleanup, err := hf.launchConfig(e)
	if err != nil {
		return err
	}
	defer cleanup()
	if _, err := announce(e, base); err != nil {
		return err
	}
	lost := base
	lost.Env = append(slices.Clone(base.Env), hostproc.EnvScenario+"=hang-before-publish")
	var loseHost atomic.Bool
	sup, err := supervise.New(supervise.Config{
		Ledger: l, Provider: hostsim.DemoBinding(), HostPythonVersion: hostsim.DefaultPythonVersion, Dispatcher: disp,
		Environments: func(manifest.ProviderBinding) (launch.Config, error) {
			if loseHost.Load() {
				return lost, nil
			}
			return base, nil
		},
		SeatID: "seat-demo", RuntimeBindingID: "runtime-demo", Workspace: "workspace-demo",
		Observer: tr.observe, TracerProvider: e.telemetry.tracerProvider(), MeterProvider: e.telemetry.meterProvider(),
	})
	if err != nil {
		return err
	}
	defer closeSupervisor(sup, &err)

	run := newRunID()
	fmt.Fprintf(w, "zeoctl demo: capability operations end to end, on the simulated host (this zeoctl in its\n"+
		"hidden host mode, a real child process) and the %s ledger %s\n", ledgerKind(path), displayLedger(path))

	// 1. No effects.
	echo := supervise.Call{Scope: demoScope, OperationID: "demo-echo-" + run, CapabilityID: "example.echo@1.0.0",
		Arguments: map[string]any{"text": "hello"}}
	fmt.Fprintf(w, "\n1. %s %s: no effects\n", echo.CapabilityID, `{"text": "hello"}`)
	if err := demoInvoke(ctx, w, sup, l, echo, launch.StateSucceeded); err != nil {
		return err
	}

	// 2. Two effects.
	effects := supervise.Call{Scope: demoScope, OperationID: "demo-effects-" + run, CapabilityID: "example.two_effects@1.0.0",
		Arguments: map[string]any{"target": "doc-1"}, EffectBudget: 2}
	fmt.Fprintf(w, "\n2. %s %s: two effects, each authorized, dispatched once, confirmed\n", effects.CapabilityID, `{"target": "doc-1"}`)
	before := disp.count()
	if err := demoInvoke(ctx, w, sup, l, effects, launch.StateSucceeded); err != nil {
		return err
	}
	if n := disp.count() - before; n != 2 {
		return fmt.Errorf("step 2: the dispatcher was called %d times, want 2", n)
	}

	// 3. Redelivery after a lost host.
	redo := effects
	redo.OperationID = "demo-redelivery-" + run
	fmt.Fprintf(w, "\n3. redelivery: operation %s loses its host once the ledger has confirmed both effects, before it publishes\n", redo.OperationID)
	before = disp.count()
	loseHost.Store(true)
	err = demoLostHost(ctx, w, sup, tr, l, redo)
	loseHost.Store(false)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "   the next attempt sends the same logical effects again:")
	if err := demoInvoke(ctx, w, sup, l, redo, launch.StateSucceeded); err != nil {
		return err
	}
	if n := disp.count() - before; n != 2 {
		return fmt.Errorf("step 3: the dispatcher was called %d times across both attempts, want 2 (one per logical effect)", n)
	}
	fmt.Fprintf(w, "   the dispatcher was called 2 times for 2 logical effects across 2 attempts: same receipts, no second dispatch\n")

	// 4. Lost result.
	fmt.Fprintf(w, "\n4. lost result: the caller of step 2 never saw its answer and invokes operation %s again\n", effects.OperationID)
	before = disp.count()
	o, err := sup.Invoke(ctx, effects)
	if err != nil {
		return fmt.Errorf("step 4: %w", err)
	}
	if !o.Reconnected || o.Launched || disp.count() != before {
		return errors.New("step 4: the accepted result was not returned from the ledger without launching")
	}
	if err := printArtifact(ctx, w, l, o); err != nil {
		return err
	}

	if kept {
		fmt.Fprintf(w, "\nDone. The ledger is kept: 'zeoctl ledger operations -ledger %s' lists its operations.\n", displayLedger(path))
	} else {
		fmt.Fprintf(w, "\nDone. The ledger was temporary; run 'zeoctl demo -ledger PATH' to keep it for 'zeoctl ledger'.\n")
	}
	return nil
}

// demoInvoke runs one Invoke, prints the ledger's evidence and the
// artifact, and checks the state.
func demoInvoke(ctx context.Context, w io.Writer, s *supervise.Supervisor, l ledger.Ledger, c supervise.Call, want launch.State) error {
	o, err := s.Invoke(ctx, c)
	if o == nil {
		return fmt.Errorf("operation %s: %w", c.OperationID, err)
	}
	if o.State != want {
		return fmt.Errorf("operation %s ended %s, want %s: %w", c.OperationID, o.State, want, err)
	}
	if err := printEvidence(ctx, w, l, c.Scope, c.OperationID); err != nil {
		return err
	}
	return printArtifact(ctx, w, l, o)
}

// demoLostHost runs an attempt whose host never publishes (the simulated
// host's hang-before-publish scenario) and abandons it once the ledger has
// confirmed its second effect: its context is cancelled and the host
// stopped, as when a controller loses its host.
func demoLostHost(ctx context.Context, w io.Writer, s *supervise.Supervisor, tr *tracer, l ledger.Ledger, c supervise.Call) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	confirmed := 0
	tr.setHook(func(ev supervise.Event) {
		if ev.Kind == supervise.EventRequest && ev.Method == ipc.MethodEffect && ev.State == ipc.StateAllowed {
			if confirmed++; confirmed == 2 {
				fmt.Fprintln(w, "  (the host is lost here: it is stopped before result.publish)")
				cancel()
			}
		}
	})
	defer tr.setHook(nil)
	o, err := s.Invoke(actx, c)
	if o == nil {
		return fmt.Errorf("operation %s: %w", c.OperationID, err)
	}
	if o.State == launch.StateSucceeded || confirmed != 2 {
		return fmt.Errorf("operation %s: the lost attempt ended %s after %d confirmed effects, want no result after 2", c.OperationID, o.State, confirmed)
	}
	return printEvidence(ctx, w, l, c.Scope, c.OperationID)
}

// printArtifact writes the accepted result's artifact bytes.
func printArtifact(ctx context.Context, w io.Writer, l ledger.Ledger, o *supervise.Outcome) error {
	if o.Result == nil || len(o.Result.ArtifactRefs) == 0 {
		return nil
	}
	a, err := l.Artifact(ctx, o.Scope, o.Result.ArtifactRefs[0])
	if err != nil {
		return fmt.Errorf("reading the artifact: %w", err)
	}
	fmt.Fprintf(w, "  artifact   %s (%s): %s\n", a.Ref, a.Digest, a.Bytes)
	return nil
}

// newRunID returns a short random suffix that keeps the demo's operation
// ids apart when it runs again on a kept ledger.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
