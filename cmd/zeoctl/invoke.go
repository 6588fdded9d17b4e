package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// invokeFlags are invoke's flags.
type invokeFlags struct {
	host        hostFlags
	capability  string
	args        string
	ledgerPath  string
	deadline    time.Duration
	budget      int64
	services    string
	operationID string
	scope       scopeFlags
	effects     string
	grants      grantFlags
	warm        bool
	json        bool
}

func invokeCommand() *command {
	return &command{
		name:      "invoke",
		usageLine: "invoke (-python PATH | -host PATH | -simulated) [-binding FILE] [-capability ID] [-args JSON|@FILE] [-ledger PATH] [-org ID] [-project ID] [-operation ID] [-deadline D] [-budget N] [-effects refuse|accept|uncertain] [-warm] [-json]",
		short:     "run one capability operation on a provider, on a ledger",
		long: `Invoke runs one capability operation end to end with package supervise:
it records the operation in the ledger, starts an attempt with a new fence,
launches the host with its LaunchContext and a one-shot bootstrap id, answers
its IPC from the ledger, and records the outcome. It prints the host's own
result (its HostResult, evidence) and the Runtime's outcome, then the
accepted artifact. The trace of the attempt goes to stderr as it happens.

-capability may be left out when the binding has one capability. -args is
the arguments object as JSON, or @FILE to read it from a file; the request
schema's defaults are filled in before it is sent.
The operation is recorded in the scope -org and -project name, by default
org-local/project-local, which every other command defaults to as well
('zeoctl help scope').

The ledger is a bolt file with -ledger PATH, which keeps the operation: run
invoke again with the same -operation ID to continue it (a new attempt; an
accepted result is returned without launching anything). Without -ledger
the ledger lives in memory and is gone when invoke exits.

Effects: zeoctl holds no credentials, so it performs none. With -effects
refuse (the default) every new effect is answered refused and spends no
budget; with -effects accept each is recorded as consumed with a synthetic
receipt, without doing anything, so that a provider can be tried end to end;
with -effects uncertain each dispatch fails uncertainly, so the effect is
recorded unknown and the attempt ends needs_reconciliation, to rehearse
'zeoctl ledger resolve'. -budget bounds the distinct effects of the operation across its attempts.

-warm (with -python only) starts the host warm: zeoctl first starts a
fork server from the interpreter, which imports the host's dependencies
(pydantic, jsonschema), and the host is forked from it instead of started
cold. For one invocation that saves nothing (the server's start costs what
a cold start does); it shows the mode an embedder runs with
launch.Zygote. The demo always starts its hosts cold.

Exit status 0 means succeeded; 3 means the operation ended otherwise, and
the outcome says what to do next:

  waiting_approval       approve, then invoke again with the same -operation
  needs_reconciliation   settle the effect ('zeoctl ledger resolve'), then
                         invoke again with the same -operation
  protocol_error         invoke again with the same -operation: recorded
                         effects are redelivered, never dispatched twice
  failed, refused, invalid_request, unavailable, cancelled, timed_out
                         as the reason says
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f invokeFlags
			f.host.register(fs)
			fs.StringVar(&f.capability, "capability", "", "the capability `ID` (namespace.name@version)")
			fs.StringVar(&f.args, "args", "{}", "the arguments: a JSON object, or @FILE")
			fs.StringVar(&f.ledgerPath, "ledger", "", "the ledger: a bolt `file`, or a postgres:// DSN (default: a memory ledger, gone at exit)")
			fs.DurationVar(&f.deadline, "deadline", time.Minute, "the operation's deadline, from now, for every attempt (a new operation only)")
			fs.Int64Var(&f.budget, "budget", 0, "the operation's total effect budget: distinct logical effects across all attempts (a new operation only)")
			fs.StringVar(&f.services, "services", port.EffectsService, "comma-separated services the Runtime offers; a capability requiring another is refused before launch")
			fs.StringVar(&f.operationID, "operation", "", "the operation `ID`; the same id continues an operation (default: a new random id)")
			f.scope.register(fs, false)
			registerEffects(fs, &f.effects)
			f.grants.register(fs)
			fs.BoolVar(&f.warm, "warm", false, "fork the host from a zygote (a fork server that preloaded the host's dependencies) instead of starting it cold; -python only")
			fs.BoolVar(&f.json, "json", false, "print the outcome as one JSON object")
			return func(ctx context.Context, e *env, args []string) error {
				if err := noArgs(args); err != nil {
					return err
				}
				return invoke(ctx, e, &f)
			}
		},
	}
}

// readArgs parses -args: a JSON object, or @FILE.
func readArgs(s string) (map[string]any, error) {
	raw := []byte(s)
	if name, ok := strings.CutPrefix(s, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading the arguments: %w", err)
		}
		raw = b
	}
	var args map[string]any
	if err := canon.Unmarshal(raw, &args); err != nil {
		return nil, usagef("-args must be a JSON object (strict JSON: no duplicate keys, integers within ±(2^53-1)): %v", err)
	}
	return args, nil
}

func invoke(ctx context.Context, e *env, f *invokeFlags) (err error) {
	if err := f.host.check(); err != nil {
		return err
	}
	args, err := readArgs(f.args)
	if err != nil {
		return err
	}
	dispatcher, err := dispatcherFor(e, f.effects)
	if err != nil {
		return err
	}
	if f.warm && f.host.python == "" {
		return usagef("-warm needs -python: only a host run as `python -m` can be forked from a zygote")
	}
	if f.budget < 0 || f.deadline <= 0 {
		return usagef("-budget must be at least 0 and -deadline positive")
	}
	b, err := f.host.loadBinding()
	if err != nil {
		return err
	}
	if f.capability == "" {
		if len(b.Manifests) != 1 {
			ids := make([]string, len(b.Manifests))
			for i, m := range b.Manifests {
				ids[i] = capabilityID(m)
			}
			slices.Sort(ids)
			return usagef("-capability is required: the binding has %d capabilities (%s)", len(ids), strings.Join(ids, ", "))
		}
		f.capability = capabilityID(b.Manifests[0])
	}
	m, err := manifest.Describe(b.Manifests, f.capability)
	if err != nil {
		return fmt.Errorf("the binding has no capability %s; 'zeoctl capabilities list' shows those it has", f.capability)
	}
	offered := strings.Split(f.services, ",")
	for _, s := range m.Requirements.Services {
		if !slices.Contains(offered, s) {
			return fmt.Errorf("capability %s requires service %q, which -services does not offer (%s)", f.capability, s, f.services)
		}
	}

	var l ledger.Ledger
	if f.ledgerPath != "" {
		bl, err := openLedger(ctx, f.ledgerPath)
		if err != nil {
			return err
		}
		l = bl
	} else {
		e.progress("note: memory ledger: the operation is gone when invoke exits (pass -ledger PATH to keep it)")
		l = memory.New()
	}
	defer closeLedger(l, &err)

	e.progress("asking %s for its Python version", f.host.describeHost())
	inst, _, perr := f.host.installation(ctx, b.Distribution)
	if perr != nil {
		e.progress("note: could not ask the interpreter its version (%v); the host will check it", perr)
	}
	lnch, cleanup, err := f.host.launcher(e)
	if err != nil {
		return err
	}
	defer cleanup()
	var zygote *launch.Zygote
	if f.warm {
		if zygote, err = lnch.StartZygote(ctx, launch.ZygoteConfig{Provider: b}); err != nil {
			return fmt.Errorf("starting the zygote: %w", err)
		}
		defer zygote.Close()
		st := zygote.Stats()
		what := "the fixed list (the host's imports could not be discovered; see the warning)"
		if st.Discovered {
			what = "the host's own imports"
		}
		e.progress("zygote started (server pid %d, %d modules preloaded: %s): the host is forked warm", st.ServerPID, len(st.Preloaded), what)
	}
	tr := &tracer{w: e.stderr}
	sup, err := supervise.New(supervise.Config{
		Ledger: l, Launcher: lnch, Zygote: zygote, Provider: b,
		// An interpreter that cannot be asked leaves the check to the host.
		HostPythonVersion: inst.Python, SkipPythonVersionCheck: inst.Python == "",
		Dispatcher: dispatcher,
		Grants:     f.grants.grants(),
		SeatID:     "seat-zeoctl", RuntimeBindingID: "runtime-zeoctl", Workspace: "workspace-zeoctl",
		Observer: tr.observe, TracerProvider: e.telemetry.tracerProvider(), MeterProvider: e.telemetry.meterProvider(),
	})
	if err != nil {
		return err
	}
	defer closeSupervisor(sup, &err)
	call := supervise.Call{
		Scope:        f.scope.scope(),
		OperationID:  f.operationID,
		CapabilityID: f.capability,
		Arguments:    args,
		EffectBudget: f.budget,
		Deadline:     time.Now().Add(f.deadline),
	}
	if call.OperationID == "" {
		call.OperationID = "op-" + newRunID() + newRunID()
	} else if view, err := l.Operation(ctx, call.Scope, call.OperationID); err == nil {
		// Continuing: the recorded deadline and budget stand.
		call.Deadline, call.EffectBudget = view.Operation.Deadline, view.Operation.EffectBudget
	} else if !errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("reading operation %s: %w", call.OperationID, err)
	}
	e.progress("invoking %s as operation %s", f.capability, call.OperationID)
	o, ierr := sup.Invoke(ctx, call)
	if errors.Is(ierr, supervise.ErrOperationMismatch) {
		return mismatchError(ctx, l, call.Scope, call.OperationID, f.capability, b.ManifestDigest, ierr)
	}
	if o == nil {
		return ierr
	}
	if where, ok := argumentsProblem(ierr); ok {
		o.Reason = "the arguments do not satisfy the capability's request schema: " + where
		ierr = argumentsError(where, f.capability)
	}
	if f.json {
		if err := printJSON(e.stdout, outcomeJSON(ctx, l, o)); err != nil {
			return err
		}
	} else if err := printOutcome(ctx, e.stdout, l, o, f.ledgerPath, f.effects == "refuse"); err != nil {
		return err
	}
	if ierr != nil {
		return &outcomeError{ierr}
	}
	return nil
}

// mismatchError says in words what differs when an operation id is
// reused for another request (supervise.ErrOperationMismatch): the
// capability, the provider's manifests, or the arguments. manifestDigest
// is "" when the caller does not choose the binding. When the recorded
// operation cannot be read, err is returned as it is.
func mismatchError(ctx context.Context, l ledger.Ledger, scope ledger.Scope, operationID, capability string, manifestDigest canon.Digest, err error) error {
	v, rerr := l.Operation(ctx, scope, operationID)
	if rerr != nil {
		return err
	}
	op := v.Operation
	const oneRequest = "an operation id names one request: repeat it to continue that request, or give a new -operation (or none) for this one"
	switch {
	case op.CapabilityID != capability:
		return fmt.Errorf("operation %s was recorded for capability %s, not %s: %s", operationID, op.CapabilityID, capability, oneRequest)
	case manifestDigest != "" && op.ManifestDigest != manifestDigest:
		return fmt.Errorf("the provider binding differs from the one operation %s was recorded with (manifest digest %s, now %s): %s",
			operationID, shortDigest(string(op.ManifestDigest)), shortDigest(string(manifestDigest)), oneRequest)
	}
	return fmt.Errorf("the arguments differ from those operation %s was recorded with (request digest %s): %s",
		operationID, shortDigest(string(op.RequestDigest)), oneRequest)
}

// argumentsProblem says where and why the request schema refused the
// arguments (“at /text: got number, want string”), when err is that
// refusal.
func argumentsProblem(err error) (string, bool) {
	var ve *manifest.ValidationError
	if !errors.As(err, &ve) || !errors.Is(ve.Err, manifest.ErrInvalidArguments) {
		return "", false
	}
	where := "at " + ve.Pointer
	if ve.Pointer == "" {
		where = "at the top level"
	}
	if ve.Detail == "" {
		return where + " (" + ve.Rule + ")", true
	}
	return where + ": " + ve.Detail, true
}

// argumentsError is the one-line error of -args refused by the request
// schema at where.
func argumentsError(where, capability string) error {
	return fmt.Errorf("invalid_request: -args %s (the request schema: 'zeoctl capabilities describe %s' with the same host flags)", where, capability)
}

// printOutcome writes the host's result, the outcome and the artifact.
func printOutcome(ctx context.Context, w io.Writer, l ledger.Ledger, o *supervise.Outcome, ledgerPath string, noEffects bool) error {
	if o.Host != nil {
		fmt.Fprintln(w, "host result (evidence):")
		b, err := canon.Marshal(o.Host)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s\n", b)
	} else if o.Launched {
		fmt.Fprintln(w, "host result: none that parses")
	}
	fmt.Fprintln(w, "outcome:")
	fmt.Fprintf(w, "  state      %s\n", o.State)
	fmt.Fprintf(w, "  operation  %s/%s %s", o.Scope.OrganizationID, o.Scope.ProjectID, o.OperationID)
	if o.AttemptID != "" {
		fmt.Fprintf(w, ", attempt %s (generation %d)", o.AttemptID, o.Generation)
	}
	fmt.Fprintln(w)
	if o.Launch != nil && o.Launch.Process.Warm {
		fmt.Fprintf(w, "  host       pid %d, forked warm from the zygote\n", o.Launch.Process.PID)
	}
	if o.Reconnected {
		fmt.Fprintln(w, "  reconnected: the result was already accepted; nothing was launched")
	}
	if o.ErrorCode != "" {
		fmt.Fprintf(w, "  error code %s\n", o.ErrorCode)
	}
	if o.Reason != "" {
		fmt.Fprintf(w, "  reason     %s\n", o.Reason)
	}
	for _, ef := range o.Effects {
		fmt.Fprintf(w, "  effect     %s: %s, authorization %s", ef.LogicalEffectID, ef.State, ef.AuthorizationID)
		if ef.ReceiptID != "" {
			fmt.Fprintf(w, ", receipt %s", ef.ReceiptID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  budget     %d of %d effects used\n", o.BudgetUsed, o.Budget)
	for _, ev := range o.Decisions {
		if ev.Method == ipc.MethodEffect && ev.State == ipc.StateRefused && !ev.Dispatched && !ev.Redelivery && noEffects {
			fmt.Fprintln(w, "  note       zeoctl performs no effects; -effects accept records them as consumed without performing them")
			break
		}
	}
	for i, line := range nextStep(o, ledgerPath) {
		if i == 0 {
			fmt.Fprintf(w, "  next       %s\n", line)
		} else {
			fmt.Fprintf(w, "             %s\n", line)
		}
	}
	return style{}.printArtifact(ctx, w, l, o)
}

// nextStep says what the caller may do after a non-success, one line
// each: for an effect to settle, the exact 'zeoctl ledger resolve'
// command.
func nextStep(o *supervise.Outcome, ledgerPath string) []string {
	again := "invoke again with the same flags and -operation " + o.OperationID
	if ledgerPath == "" {
		again += " and a -ledger PATH (this memory ledger is gone at exit)"
	}
	switch o.State {
	case launch.StateWaitingApproval:
		return []string{"approve, then " + again}
	case launch.StateProtocolError:
		return []string{again + ": recorded effects are redelivered, never dispatched twice"}
	case launch.StateNeedsReconciliation:
	default:
		return nil
	}
	var settle []string
	for _, ef := range o.Effects {
		if ef.State == ledger.EffectUnknown || ef.State == ledger.EffectAuthorized {
			settle = append(settle, resolveCommandLine(ledgerPath, o.Scope, o.OperationID, ef.LogicalEffectID))
		}
	}
	if ledgerPath == "" {
		return []string{"nothing can settle its effects: this memory ledger is gone at exit; invoke with a -ledger PATH to rehearse 'zeoctl ledger resolve'"}
	}
	if len(settle) == 0 {
		return []string{"settle its effects ('zeoctl ledger effects -unknown -ledger " + shellQuote(displayLedger(ledgerPath)) + "' prints the command for each), then " + again}
	}
	out := []string{"ask the service whether each effect was consumed, settle it with:"}
	for _, c := range settle {
		out = append(out, "  "+c)
	}
	return append(out, "then "+again)
}

// outcomeJSON is invoke's -json document.
func outcomeJSON(ctx context.Context, l ledger.Ledger, o *supervise.Outcome) map[string]any {
	out := map[string]any{
		"state": o.State, "organization_id": o.Scope.OrganizationID, "project_id": o.Scope.ProjectID,
		"operation_id": o.OperationID, "attempt_id": o.AttemptID, "fencing_generation": o.Generation,
		"launched": o.Launched, "reconnected": o.Reconnected, "error_code": o.ErrorCode, "reason": o.Reason,
		"effects": o.Effects, "budget": o.Budget, "budget_used": o.BudgetUsed,
		"host_result": o.Host, "result": o.Result,
	}
	if o.Result != nil && len(o.Result.ArtifactRefs) > 0 {
		if a, err := l.Artifact(ctx, o.Scope, o.Result.ArtifactRefs[0]); err == nil {
			out["artifact"] = string(a.Bytes)
		}
	}
	return out
}
