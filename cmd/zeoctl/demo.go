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
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// demoScope is the organization and project of the demo's operations.
var demoScope = ledger.Scope{OrganizationID: "org-demo", ProjectID: "project-demo"}

// demoWidth is the most columns a line of the demo takes.
const demoWidth = 100

// The targets the demo's Authority and dispatcher treat apart.
const (
	lockedTarget = "doc-locked" // every effect refused
	reviewTarget = "doc-review" // its commit held until approved
	flakyTarget  = "doc-flaky"  // its first dispatch uncertain
)

func demoCommand() *command {
	return &command{
		name:      "demo",
		usageLine: "demo [-ledger PATH] [-v]",
		short:     "run capability operations end to end on the simulated host and print the trace",
		long: `Demo runs capability operations end to end, exactly as an embedding
controller would with package supervise, and prints what happens: the
launch, each IPC request and the state it was answered, the ledger's
evidence (fence, bootstrap redemption, each effect with its authorization
and receipt, the budget left) and the result with its artifact.

It needs nothing but Go: the host is zeoctl itself in its hidden host mode
(the simulated host; see 'zeoctl help host'), and the ledger is a bolt file
in a temporary directory, removed at the end, or at -ledger PATH, kept for
'zeoctl ledger' and 'zeoctl artifact' to inspect. The receipts come from a
stand-in dispatcher, which performs nothing. examples/quickstart is the
code of such a controller, in a page.

The steps:

  1. example.echo@1.0.0: a capability with no effects.
  2. example.two_effects@1.0.0: two effects, each authorized by the ledger,
     dispatched once and confirmed with a receipt.
  3. A redelivery: the demo deliberately stops the host of a new operation
     once the ledger has confirmed its two effects, before it publishes
     (the attempt ends protocol_error, as a lost host does); the next
     attempt sends the same logical effects again and gets the same
     receipts from the ledger, with no second dispatch.
  4. A lost result: invoking step 2's operation again returns its accepted
     result from the ledger, without launching anything.
  5. The Authority: it refuses every effect on doc-locked (the attempt
     ends refused, no budget spent), and holds the commit of doc-review
     until a person approves (waiting_approval; the next attempt, once
     approved, dispatches it).
  6. An uncertain effect: the service does not answer the first dispatch
     on doc-flaky, so the ledger records the effect unknown and the
     attempt ends needs_reconciliation; the operator asks the service,
     settles it as 'zeoctl ledger resolve' does, and the next attempt
     redelivers it with that receipt.

Ids and digests are shortened to keep every line within 100 columns; -v
prints them in full, on lines as long as they need. Demo exits 0 when every
step showed what it should.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			path := fs.String("ledger", "", "the ledger to use and keep: a bolt `file`, or a postgres:// DSN (default: a temporary file, removed at the end)")
			verbose := fs.Bool("v", false, "print ids and digests in full")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return demo(ctx, e, *path, *verbose)
			}
		},
	}
}

// demoDispatcher stands for the credential holder: it "consumes" each
// effect by counting it, and answers a receipt derived from the
// authorization id. The first dispatch of an effect on flakyTarget gets no
// answer from the "service": uncertain.
type demoDispatcher struct {
	mu    sync.Mutex // guards calls and flaked
	calls int
	// flaked is whether the one uncertain dispatch happened.
	flaked bool
}

func (d *demoDispatcher) Dispatch(_ context.Context, disp port.Dispatch) (port.Receipt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if disp.Request.Arguments["target"] == flakyTarget && !d.flaked {
		d.flaked = true
		return port.Receipt{}, errors.New("the service did not answer in time")
	}
	return port.Receipt{ReceiptID: demoReceipt(disp.AuthorizationID),
		Result: map[string]any{"operation": disp.Request.Operation}}, nil
}

// demoReceipt is the stand-in service's receipt for an authorization.
func demoReceipt(authorizationID string) string {
	return "rcpt-" + strings.TrimPrefix(authorizationID, "auth_")[:8]
}

func (d *demoDispatcher) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// demoAuthority is the embedder's policy in the demo: every effect on
// lockedTarget is refused; the commit of reviewTarget is held until the
// operation is approved.
type demoAuthority struct {
	mu       sync.Mutex // guards approved
	approved map[string]bool
}

func (a *demoAuthority) Admit(context.Context, port.Admission) (port.Verdict, error) {
	return port.Verdict{Decision: port.Allow}, nil
}

func (a *demoAuthority) Effect(_ context.Context, q port.EffectQuestion) (port.Verdict, error) {
	switch q.Request.Arguments["target"] {
	case lockedTarget:
		return port.Verdict{Decision: port.Refuse, Reason: lockedTarget + " is read-only"}, nil
	case reviewTarget:
		a.mu.Lock()
		defer a.mu.Unlock()
		if q.Request.Operation == "commit" && !a.approved[q.Operation.OperationID] {
			return port.Verdict{Decision: port.Hold, Reason: "a person must approve the commit"}, nil
		}
	}
	return port.Verdict{Decision: port.Allow}, nil
}

// approve records a person's approval of an operation.
func (a *demoAuthority) approve(operationID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.approved == nil {
		a.approved = map[string]bool{}
	}
	a.approved[operationID] = true
}

// demoRun is one run of the demo: where it writes and what it runs on.
type demoRun struct {
	w io.Writer
	// raw is w without the wrapping, for a command line, which is not
	// broken even when a long -ledger makes it wider.
	raw  io.Writer
	st   style
	tr   *tracer
	sup  *supervise.Supervisor
	l    ledger.Ledger
	disp *demoDispatcher
	path string // the ledger, as -ledger names it
}

func demo(ctx context.Context, e *env, path string, verbose bool) (err error) {
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

	// Every line within demoWidth columns: shortened ids keep most of them
	// on one; a longer one (a long reason) is wrapped. With -v, lines are
	// whole, full ids and all.
	var out io.Writer = e.stdout
	if !verbose {
		ww := &wrapWriter{w: e.stdout, width: demoWidth, indent: 13}
		defer ww.Flush()
		out = ww
	}
	d := &demoRun{w: out, raw: e.stdout, st: style{short: !verbose}, l: l, disp: &demoDispatcher{}, path: path}
	d.tr = &tracer{w: out, st: d.st}
	authority := &demoAuthority{}
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
	d.sup, err = supervise.New(supervise.Config{
		Ledger: l, Provider: hostsim.DemoBinding(), HostPythonVersion: hostsim.DefaultPythonVersion,
		Dispatcher: d.disp, Authority: authority,
		Environments: func(manifest.ProviderBinding) (launch.Config, error) {
			if loseHost.Load() {
				return lost, nil
			}
			return base, nil
		},
		SeatID: "seat-demo", RuntimeBindingID: "runtime-demo", Workspace: "workspace-demo",
		Observer: d.tr.observe, TracerProvider: e.telemetry.tracerProvider(), MeterProvider: e.telemetry.meterProvider(),
	})
	if err != nil {
		return err
	}
	defer closeSupervisor(d.sup, &err)

	w := d.w
	run := newRunID()
	fmt.Fprintf(w, "zeoctl demo: capability operations end to end, on the simulated host (this zeoctl in its\n"+
		"hidden host mode, a real child process) and a %s ledger:\n  %s\n", ledgerKind(path), displayLedger(path))
	fmt.Fprintln(w, "The receipts come from a stand-in dispatcher: it performs nothing, and names a receipt")
	fmt.Fprintln(w, "after each authorization; a real one calls the service that holds the credentials.")
	if d.st.short {
		fmt.Fprintln(w, "Ids and digests are shortened (…); 'zeoctl demo -v' prints them in full.")
	}

	// 1. No effects.
	echo := supervise.Call{Scope: demoScope, OperationID: "demo-echo-" + run, CapabilityID: "example.echo@1.0.0",
		Arguments: map[string]any{"text": "hello"}}
	fmt.Fprintf(w, "\n1. %s %s: no effects\n", echo.CapabilityID, `{"text": "hello"}`)
	if _, err := d.invoke(ctx, echo, launch.StateSucceeded); err != nil {
		return err
	}

	// 2. Two effects.
	effects := twoEffects("demo-effects-"+run, "doc-1")
	fmt.Fprintf(w, "\n2. %s %s: two effects, authorized, dispatched, confirmed\n",
		effects.CapabilityID, `{"target": "doc-1"}`)
	before := d.disp.count()
	if _, err := d.invoke(ctx, effects, launch.StateSucceeded); err != nil {
		return err
	}
	if n := d.disp.count() - before; n != 2 {
		return fmt.Errorf("step 2: the dispatcher was called %d times, want 2", n)
	}

	// 3. Redelivery after a lost host.
	redo := twoEffects("demo-redelivery-"+run, "doc-1")
	fmt.Fprintf(w, "\n3. redelivery: the demo deliberately loses the host of %s once the ledger\n"+
		"   has confirmed both effects, before it publishes\n", redo.OperationID)
	before = d.disp.count()
	loseHost.Store(true)
	err = d.lostHost(ctx, redo)
	loseHost.Store(false)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "   the next attempt sends the same logical effects again:")
	if _, err := d.invoke(ctx, redo, launch.StateSucceeded); err != nil {
		return err
	}
	if n := d.disp.count() - before; n != 2 {
		return fmt.Errorf("step 3: the dispatcher was called %d times across both attempts, want 2 (one per logical effect)", n)
	}
	fmt.Fprintln(w, "   the dispatcher was called 2 times for 2 logical effects across 2 attempts:")
	fmt.Fprintln(w, "   the second got the same receipts from the ledger, with no second dispatch")

	// 4. Lost result.
	fmt.Fprintf(w, "\n4. lost result: the caller of step 2 never saw its answer and invokes %s again\n", effects.OperationID)
	before = d.disp.count()
	o, err := d.sup.Invoke(ctx, effects)
	if err != nil {
		return fmt.Errorf("step 4: %w", err)
	}
	if !o.Reconnected || o.Launched || d.disp.count() != before {
		return errors.New("step 4: the accepted result was not returned from the ledger without launching")
	}
	if err := d.st.printArtifact(ctx, w, l, o); err != nil {
		return err
	}

	// 5. The Authority: a refusal and a hold.
	locked := twoEffects("demo-refused-"+run, lockedTarget)
	fmt.Fprintf(w, "\n5. the Authority (the embedder's policy) decides each new effect: it refuses every\n"+
		"   effect on %s, and holds the commit of %s until a person approves\n", lockedTarget, reviewTarget)
	fmt.Fprintf(w, "   refused: %s on %s\n", locked.OperationID, lockedTarget)
	before = d.disp.count()
	if o, err = d.invoke(ctx, locked, launch.StateRefused); err != nil {
		return err
	}
	if o.BudgetUsed != 0 || d.disp.count() != before {
		return fmt.Errorf("step 5: a refused effect spent budget (%d) or was dispatched", o.BudgetUsed)
	}
	fmt.Fprintln(w, "   refused before the ledger recorded it: nothing dispatched, no budget spent")
	review := twoEffects("demo-held-"+run, reviewTarget)
	fmt.Fprintf(w, "   held: %s on %s\n", review.OperationID, reviewTarget)
	if _, err = d.invoke(ctx, review, launch.StateWaitingApproval); err != nil {
		return err
	}
	fmt.Fprintln(w, "   a person approves the commit; the same operation is invoked again:")
	authority.approve(review.OperationID)
	before = d.disp.count()
	if _, err = d.invoke(ctx, review, launch.StateSucceeded); err != nil {
		return err
	}
	if n := d.disp.count() - before; n != 1 {
		return fmt.Errorf("step 5: the approved attempt dispatched %d effects, want 1 (the commit)", n)
	}
	fmt.Fprintln(w, "   effect-1 redelivered from the ledger; the commit, asked again and allowed, dispatched")

	// 6. An uncertain effect and its resolution.
	flaky := twoEffects("demo-uncertain-"+run, flakyTarget)
	fmt.Fprintf(w, "\n6. an uncertain effect: the service does not answer the first dispatch on %s\n", flakyTarget)
	if err := d.uncertain(ctx, flaky); err != nil {
		return err
	}

	fmt.Fprintln(w, "\nThe code behind this demo: examples/quickstart (go run ./examples/quickstart) makes")
	fmt.Fprintln(w, "the same calls to package supervise, in a page.")
	if kept {
		fmt.Fprintf(w, "Done. The ledger is kept; its operations:\n  zeoctl ledger operations -ledger %s\n", shellQuote(displayLedger(path)))
	} else {
		fmt.Fprintln(w, "Done. The ledger was temporary; 'zeoctl demo -ledger PATH' keeps it for 'zeoctl ledger'.")
	}
	return nil
}

// twoEffects is a call of example.two_effects@1.0.0 on target.
func twoEffects(operationID, target string) supervise.Call {
	return supervise.Call{Scope: demoScope, OperationID: operationID, CapabilityID: "example.two_effects@1.0.0",
		Arguments: map[string]any{"target": target}, EffectBudget: 2}
}

// invoke runs one Invoke, prints the ledger's evidence and the artifact,
// and checks the state.
func (d *demoRun) invoke(ctx context.Context, c supervise.Call, want launch.State) (*supervise.Outcome, error) {
	o, err := d.sup.Invoke(ctx, c)
	if o == nil {
		return nil, fmt.Errorf("operation %s: %w", c.OperationID, err)
	}
	if o.State != want {
		return nil, fmt.Errorf("operation %s ended %s, want %s: %w", c.OperationID, o.State, want, err)
	}
	if err := d.st.printEvidence(ctx, d.w, d.l, c.Scope, c.OperationID); err != nil {
		return nil, err
	}
	return o, d.st.printArtifact(ctx, d.w, d.l, o)
}

// lostHost runs an attempt whose host never publishes (the simulated
// host's hang-before-publish scenario) and abandons it once the ledger has
// confirmed its second effect: its context is cancelled and the host
// stopped, as when a controller loses its host.
func (d *demoRun) lostHost(ctx context.Context, c supervise.Call) error {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	confirmed := 0
	d.tr.setHook(func(ev supervise.Event) {
		if ev.Kind == supervise.EventRequest && ev.Method == ipc.MethodEffect && ev.State == ipc.StateAllowed {
			if confirmed++; confirmed == 2 {
				fmt.Fprintln(d.w, "  (deliberately lost here: the demo stops the host before result.publish)")
				cancel()
			}
		}
	})
	defer d.tr.setHook(nil)
	o, err := d.sup.Invoke(actx, c)
	if o == nil {
		return fmt.Errorf("operation %s: %w", c.OperationID, err)
	}
	if o.State == launch.StateSucceeded || confirmed != 2 {
		return fmt.Errorf("operation %s: the lost attempt ended %s after %d confirmed effects, want no result after 2", c.OperationID, o.State, confirmed)
	}
	fmt.Fprintf(d.w, "  (%s is how an attempt ends when its host is lost: here, on purpose)\n", o.State)
	return d.st.printEvidence(ctx, d.w, d.l, c.Scope, c.OperationID)
}

// uncertain runs step 6: an attempt whose first dispatch is uncertain
// ends needs_reconciliation; the operator settles the effect as 'zeoctl
// ledger resolve' does; the next attempt redelivers it.
func (d *demoRun) uncertain(ctx context.Context, c supervise.Call) error {
	w := d.w
	o, err := d.invoke(ctx, c, launch.StateNeedsReconciliation)
	if err != nil {
		return err
	}
	var unknown *ledger.Effect
	for i := range o.Effects {
		if o.Effects[i].State == ledger.EffectUnknown {
			unknown = &o.Effects[i]
		}
	}
	if unknown == nil {
		return errors.New("step 6: no effect was recorded unknown")
	}
	receipt := demoReceipt(unknown.AuthorizationID)
	fmt.Fprintf(w, "   %s is unknown: it is never dispatched again until someone settles it. The\n", unknown.LogicalEffectID)
	fmt.Fprintf(w, "   operator asks the service, which did consume it (receipt %s), and runs:\n", receipt)
	fmt.Fprintf(d.raw, "     zeoctl ledger resolve -ledger %s \\\n"+
		"       -org %s -project %s -operation %s \\\n"+
		"       -effect %s -confirmed %s\n", shellQuote(displayLedger(d.path)),
		c.Scope.OrganizationID, c.Scope.ProjectID, c.OperationID, unknown.LogicalEffectID, receipt)
	fmt.Fprintln(w, "   (the demo, which holds the ledger, makes the same ledger call)")
	res := ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: receipt}
	if _, err := d.l.Resolve(ctx, c.Scope, c.OperationID, unknown.LogicalEffectID, unknown.RequestDigest, res); err != nil {
		return fmt.Errorf("step 6: resolving %s: %w", unknown.LogicalEffectID, err)
	}
	fmt.Fprintln(w, "   the same operation again:")
	before := d.disp.count()
	if _, err := d.invoke(ctx, c, launch.StateSucceeded); err != nil {
		return err
	}
	if n := d.disp.count() - before; n != 1 {
		return fmt.Errorf("step 6: the attempt after the resolution dispatched %d effects, want 1 (effect-2)", n)
	}
	fmt.Fprintf(w, "   %s redelivered with the operator's receipt; only effect-2 dispatched\n", unknown.LogicalEffectID)
	return nil
}

// newRunID returns a short random suffix that keeps the demo's operation
// ids apart when it runs again on a kept ledger.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
