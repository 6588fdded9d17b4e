package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// ledgerFlags name a ledger and, for the commands that read or write
// records of a scope, the scope.
type ledgerFlags struct {
	scopeFlags
	path string
	json bool
}

// scopeMode says what -org and -project mean to a command.
type scopeMode int

const (
	// noScope: the command takes no -org and -project.
	noScope scopeMode = iota
	// oneScope: the command acts within one scope; the flags default to
	// org-local and project-local.
	oneScope
	// listingScope: the command lists every scope unless the flags are
	// given (and acts within one when it names an operation).
	listingScope
)

func (f *ledgerFlags) register(fs *flag.FlagSet, mode scopeMode) {
	fs.StringVar(&f.path, "ledger", "", "the ledger: a bolt `file`, or a postgres:// DSN (required)")
	fs.BoolVar(&f.json, "json", false, "print JSON")
	if mode != noScope {
		f.scopeFlags.register(fs, mode == listingScope)
	}
}

// open checks the flags and opens the ledger. Unless write, a bolt file
// is opened read-only (openLedgerReadOnly).
func (f *ledgerFlags) open(ctx context.Context, write bool) (ledger.Ledger, error) {
	if f.path == "" {
		return nil, usagef("-ledger PATH is required: the bolt ledger file (zeoctl demo -ledger PATH or invoke -ledger PATH writes one), or a postgres:// DSN")
	}
	if !isDSN(f.path) {
		// Every command here works on an existing ledger.
		if err := checkLedgerFile(f.path, true); err != nil {
			return nil, err
		}
	}
	if write {
		return openLedger(ctx, f.path)
	}
	return openLedgerReadOnly(ctx, f.path)
}

func ledgerEffectsCommand() *command {
	return &command{
		name:      "ledger effects",
		usageLine: "ledger effects -ledger PATH (-unknown | -in-flight | -operation ID) [-org ID] [-project ID] [-json]",
		short:     "list an operation's effects, or every effect that needs reconciliation",
		long: `Ledger effects prints logical effects as the ledger holds them: each with its
state (authorized, confirmed, not_consumed, unknown), authorization id,
receipt and the attempt that authorized it.

With -unknown it lists, across the whole ledger, every effect that needs
reconciliation: unknown (its dispatch was uncertain), or authorized with no
recorded outcome (its controller stopped while it ran). Find out from the
service whether each was consumed, then settle it with 'zeoctl ledger
resolve'; until then the operation's attempts are answered
needs_reconciliation for it, and it is never dispatched again.

With -in-flight it lists the effects authorized by attempts whose controller
still holds a live lease: their dispatch may be under way, the controller
records the outcome itself, and resolve refuses them until its lease ends.

Both list every scope unless -org or -project keeps one. With -operation ID
it lists that operation's effects, in the scope -org and -project name (by
default org-local/project-local; see 'zeoctl help scope').
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, listingScope)
			unknown := fs.Bool("unknown", false, "list every effect that needs reconciliation, in every operation")
			inFlight := fs.Bool("in-flight", false, "list every effect in flight under a live controller, in every operation")
			operation := fs.String("operation", "", "the operation `id` whose effects to list")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				n := 0
				for _, b := range []bool{*unknown, *inFlight, *operation != ""} {
					if b {
						n++
					}
				}
				if n != 1 {
					return usagef("give one of -unknown, -in-flight, or -operation ID")
				}
				l, err := f.open(ctx, false)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				var effects []ledger.Effect
				switch {
				case *unknown:
					effects, err = l.ListUnknown(ctx)
					effects = f.keep(effects)
				case *inFlight:
					effects, err = l.ListInFlight(ctx)
					effects = f.keep(effects)
				default:
					var v ledger.OperationView
					v, err = l.Operation(ctx, f.scope(), *operation)
					effects = v.Effects
				}
				if err != nil {
					return scopedHint(err, "-operation")
				}
				if f.json {
					if effects == nil {
						effects = []ledger.Effect{}
					}
					return printJSON(e.stdout, effects)
				}
				if len(effects) == 0 {
					switch {
					case *unknown:
						fmt.Fprintln(e.stdout, "no effect needs reconciliation")
					case *inFlight:
						fmt.Fprintln(e.stdout, "no effect is in flight under a live controller")
					default:
						fmt.Fprintln(e.stdout, "the operation has no effects")
					}
					return nil
				}
				printEffects(e.stdout, effects)
				if *unknown {
					fmt.Fprintln(e.stdout, "\nSettle each, once the service says what happened, with:")
					for _, ef := range effects {
						fmt.Fprintf(e.stdout, "  %s\n", resolveCommandLine(f.path, ef.Scope, ef.OperationID, ef.LogicalEffectID))
					}
				}
				return nil
			}
		},
	}
}

// keep returns the effects of the scope the flags name, or all of them
// when no -org or -project was given.
func (f *ledgerFlags) keep(effects []ledger.Effect) []ledger.Effect {
	if !f.filtered() {
		return effects
	}
	scope := f.scope()
	var out []ledger.Effect
	for _, ef := range effects {
		if ef.Scope == scope {
			out = append(out, ef)
		}
	}
	return out
}

// resolveCommandLine is the exact 'zeoctl ledger resolve' command that
// settles one effect, for an operator to complete with the outcome.
func resolveCommandLine(ledgerPath string, scope ledger.Scope, operationID, effectID string) string {
	args := []string{"zeoctl", "ledger", "resolve", "-ledger", displayLedger(ledgerPath)}
	args = append(args, "-org", scope.OrganizationID, "-project", scope.ProjectID, "-operation", operationID, "-effect", effectID)
	return shellJoin(args) + " (-confirmed RECEIPT | -not-consumed REASON)"
}

// shellJoin joins args into a command line a POSIX shell reads back as
// args: each argument that needs it in single quotes.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func ledgerLeasesCommand() *command {
	return &command{
		name:      "ledger leases",
		usageLine: "ledger leases -ledger PATH [-json]",
		short:     "list the controllers registered in the ledger and their leases",
		long: `Ledger leases prints every controller that registered in the ledger: its id,
whether its lease is live (by the store's clock), when it expires, its time to
live and renewals. The attempts of a controller whose lease is live are never
taken over; once it expired or was released, any other controller's Recover
(or takeover loop) fences them off. On a bolt file, only the process that holds
the file can have a live lease.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, noScope)
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				l, err := f.open(ctx, false)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				leases, err := l.Leases(ctx)
				if err != nil {
					return err
				}
				if f.json {
					if leases == nil {
						leases = []ledger.Lease{}
					}
					return printJSON(e.stdout, leases)
				}
				if len(leases) == 0 {
					fmt.Fprintln(e.stdout, "no controller has registered in this ledger")
					return nil
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CONTROLLER\tLIVE\tEXPIRES\tTTL\tRENEWALS\tRELEASED")
				for _, ls := range leases {
					fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%d\t%t\n", ls.ControllerID, ls.Live, ls.Expires.UTC().Format(time.RFC3339), ls.TTL, ls.Renewals, ls.Released)
				}
				return tw.Flush()
			}
		},
	}
}

// printEffects writes one line per effect.
func printEffects(w io.Writer, effects []ledger.Effect) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ORGANIZATION/PROJECT\tOPERATION\tEFFECT\tSTATE\tAUTHORIZATION\tRECEIPT/REASON\tGENERATION")
	for _, ef := range effects {
		settled := ef.ReceiptID
		if ef.Reason != "" {
			settled = string(ef.Reason)
		}
		if settled == "" {
			settled = "-"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%s\t%s\t%d\n", ef.Scope.OrganizationID, ef.Scope.ProjectID, ef.OperationID,
			ef.LogicalEffectID, ef.State, ef.AuthorizationID, settled, ef.Generation)
	}
	tw.Flush()
}

// scopedHint adds what to check to the errors of a scoped read; what
// names the command's own argument that names the record ("-operation",
// "the artifact REF").
func scopedHint(err error, what string) error {
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		return fmt.Errorf("%w (check %s, -org and -project: records are found only in their own scope; see 'zeoctl help scope')", err, what)
	case errors.Is(err, ledger.ErrOutOfScope):
		return fmt.Errorf("%w (it belongs to another organization or project; nothing outside the scope is given out)", err)
	}
	return err
}

func ledgerResolveCommand() *command {
	return &command{
		name:      "ledger resolve",
		usageLine: "ledger resolve -ledger PATH [-org ID] [-project ID] -operation ID -effect ID (-confirmed RECEIPT | -not-consumed REASON) [-json]",
		short:     "settle an effect whose dispatch is uncertain",
		long: `Ledger resolve records the outcome of an effect that needs reconciliation,
once you have found out from the service what happened:

  -confirmed RECEIPT      it was consumed; RECEIPT is the service's receipt
  -not-consumed REASON    it was not; REASON is refused, cancelled or
                          waiting_approval

The next attempt of the operation then proceeds: a confirmed effect is
redelivered with its receipt, a not-consumed one is answered with its reason.
Resolving a settled effect to the same outcome is accepted again; to another
outcome it is refused. The operation is looked up in the scope -org and
-project name, by default org-local/project-local (see 'zeoctl help scope');
'zeoctl ledger effects -unknown' prints the exact command for each effect.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, oneScope)
			operation := fs.String("operation", "", "the operation `id` (required)")
			effect := fs.String("effect", "", "the logical effect `id` (required)")
			confirmed := fs.String("confirmed", "", "the service's `receipt`: the effect was consumed")
			notConsumed := fs.String("not-consumed", "", "the `reason` it was not consumed: refused, cancelled or waiting_approval")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				switch {
				case *operation == "":
					return usagef("-operation is required: the operation whose effect to settle ('zeoctl ledger effects -unknown' lists them)")
				case *effect == "":
					return usagef("-effect is required: the logical effect to settle ('zeoctl ledger effects -operation %s' lists them)", *operation)
				}
				var res ledger.Resolution
				switch {
				case (*confirmed == "") == (*notConsumed == ""):
					return usagef("give exactly one of -confirmed RECEIPT and -not-consumed REASON")
				case *confirmed != "":
					res = ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: *confirmed}
				default:
					r := ledger.NotConsumedReason(*notConsumed)
					if r != ledger.ReasonRefused && r != ledger.ReasonCancelled && r != ledger.ReasonWaitingApproval {
						return usagef("-not-consumed must be refused, cancelled or waiting_approval, not %q", *notConsumed)
					}
					res = ledger.Resolution{State: ledger.EffectNotConsumed, Reason: r}
				}
				l, err := f.open(ctx, true)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				v, err := l.Operation(ctx, f.scope(), *operation)
				if err != nil {
					return scopedHint(err, "-operation")
				}
				i := -1
				for j, ef := range v.Effects {
					if ef.LogicalEffectID == *effect {
						i = j
					}
				}
				if i < 0 {
					return fmt.Errorf("operation %s has no effect %q; 'zeoctl ledger effects -operation %s' lists its effects", *operation, *effect, *operation)
				}
				out, err := l.Resolve(ctx, f.scope(), *operation, *effect, v.Effects[i].RequestDigest, res)
				if errors.Is(err, ledger.ErrInvalidTransition) {
					return fmt.Errorf("%w: the effect is already %s; an effect is settled once", err, v.Effects[i].State)
				}
				if err != nil {
					return err
				}
				if f.json {
					return printJSON(e.stdout, out)
				}
				printEffects(e.stdout, []ledger.Effect{out})
				return nil
			}
		},
	}
}

func artifactGetCommand() *command {
	return &command{
		name:      "artifact get",
		usageLine: "artifact get -ledger PATH [-org ID] [-project ID] [-o FILE] [-json] REF",
		short:     "print an operation's accepted artifact",
		long: `Artifact get writes the bytes of artifact REF (as an accepted result's
artifact_refs name it) to stdout, or to -o FILE. The artifact is given out
only within the organization and project of the operation that produced it
(-org and -project, by default org-local/project-local; see 'zeoctl help
scope'): a digest or a ref alone grants nothing.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, oneScope)
			out := fs.String("o", "", "write the artifact to this `file` instead of stdout")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if len(args) != 1 {
					return usagef("want exactly one artifact REF")
				}
				l, err := f.open(ctx, false)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				a, err := l.Artifact(ctx, f.scope(), args[0])
				if err != nil {
					return scopedHint(err, "the artifact REF")
				}
				if f.json {
					return printJSON(e.stdout, map[string]any{"ref": a.Ref, "organization_id": a.Scope.OrganizationID,
						"project_id": a.Scope.ProjectID, "operation_id": a.OperationID, "digest": a.Digest, "bytes": string(a.Bytes)})
				}
				if *out != "" {
					return os.WriteFile(*out, a.Bytes, 0o644)
				}
				_, err = e.stdout.Write(a.Bytes)
				return err
			}
		},
	}
}

func ledgerOperationsCommand() *command {
	return &command{
		name:      "ledger operations",
		usageLine: "ledger operations -ledger PATH [-org ID] [-project ID] [-state open|completed|cancelled] [-operation ID] [-json]",
		short:     "list the ledger's operations, or show one with its attempts' evidence",
		long: `Ledger operations lists the operations the ledger holds, ordered by
organization, project and operation id: each with its state, capability,
current fencing generation, effect budget used and accepted result: every
scope, unless -org or -project keeps one (see 'zeoctl help scope'); -state
keeps one state.

With -operation ID it shows that operation of the scope -org and -project
name (by default org-local/project-local) in full:
its attempts and the evidence each left (the Runtime's verdict and why, the
host's pid, exit status and its own result line, the IPC exchanges), its
bootstrap ids and who redeemed them, its effects and its result.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f ledgerFlags
			f.register(fs, listingScope)
			state := fs.String("state", "", "keep operations in this `state`: open, completed or cancelled")
			operation := fs.String("operation", "", "show this operation `id` in full")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				switch ledger.OperationState(*state) {
				case "", ledger.OperationOpen, ledger.OperationCompleted, ledger.OperationCancelled:
				default:
					return usagef("-state must be open, completed or cancelled, not %q", *state)
				}
				l, err := f.open(ctx, false)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				if *operation != "" {
					return showOperation(ctx, e, l, f.scope(), *operation, f.json)
				}
				var ops []ledger.Operation
				var scope ledger.Scope
				if f.filtered() {
					scope = f.scope()
				}
				q := ledger.OperationQuery{Scope: scope, State: ledger.OperationState(*state), Limit: ledger.MaxListLimit}
				for {
					page, err := l.ListOperations(ctx, q)
					if err != nil {
						return err
					}
					ops = append(ops, page...)
					if len(page) < q.Limit {
						break
					}
					last := page[len(page)-1]
					q.After = ledger.OperationRef{Scope: last.Scope, OperationID: last.OperationID}
				}
				if f.json {
					if ops == nil {
						ops = []ledger.Operation{}
					}
					return printJSON(e.stdout, ops)
				}
				if len(ops) == 0 {
					fmt.Fprintln(e.stdout, "no operations")
					return nil
				}
				tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ORGANIZATION/PROJECT\tOPERATION\tSTATE\tCAPABILITY\tGENERATION\tEFFECTS\tDEADLINE")
				for _, op := range ops {
					fmt.Fprintf(tw, "%s/%s\t%s\t%s\t%s\t%d\t%d/%d\t%s\n", op.Scope.OrganizationID, op.Scope.ProjectID,
						op.OperationID, op.State, op.CapabilityID, op.CurrentGeneration, op.EffectsUsed, op.EffectBudget,
						op.Deadline.UTC().Format(time.RFC3339))
				}
				return tw.Flush()
			}
		},
	}
}

// showOperation prints one operation with its attempts' evidence.
func showOperation(ctx context.Context, e *env, l ledger.Ledger, scope ledger.Scope, id string, asJSON bool) error {
	v, err := l.Operation(ctx, scope, id)
	if err != nil {
		return scopedHint(err, "-operation")
	}
	evs, err := l.Evidence(ctx, scope, id)
	if err != nil {
		return err
	}
	if asJSON {
		if evs == nil {
			evs = []ledger.AttemptEvidence{}
		}
		return printJSON(e.stdout, map[string]any{"operation": v.Operation, "attempts": v.Attempts,
			"bootstraps": v.Bootstraps, "effects": v.Effects, "result": v.Result, "evidence": evs})
	}
	w := e.stdout
	op := v.Operation
	fmt.Fprintf(w, "operation %s/%s %s: %s\n", op.Scope.OrganizationID, op.Scope.ProjectID, op.OperationID, op.State)
	fmt.Fprintf(w, "  capability %s, request %s\n", op.CapabilityID, op.RequestDigest)
	fmt.Fprintf(w, "  deadline %s, effect budget %d (%d used)\n", op.Deadline.UTC().Format(time.RFC3339), op.EffectBudget, op.EffectsUsed)
	if op.CancelReason != "" {
		fmt.Fprintf(w, "  cancelled: %s\n", op.CancelReason)
	}
	byGen := map[int64]ledger.AttemptEvidence{}
	for _, ev := range evs {
		byGen[ev.Generation] = ev
	}
	for _, a := range v.Attempts {
		fmt.Fprintf(w, "attempt %s (generation %d)", a.AttemptID, a.Generation)
		if a.Admitted {
			fmt.Fprint(w, ", admitted")
		}
		fmt.Fprintln(w)
		ev, ok := byGen[a.Generation]
		if !ok {
			fmt.Fprintln(w, "  no evidence recorded (its controller stopped while it ran, or it is running)")
			continue
		}
		fmt.Fprintf(w, "  verdict    %s", ev.State)
		if ev.Reason != "" {
			fmt.Fprintf(w, ": %s", ev.Reason)
		}
		fmt.Fprintln(w)
		if ev.Launched {
			fmt.Fprintf(w, "  host       pid %d, exit status %d", ev.PID, ev.ExitCode)
			if ev.Signal != "" {
				fmt.Fprintf(w, " (%s)", ev.Signal)
			}
			fmt.Fprintf(w, ", %s to %s\n", ev.StartedAt.UTC().Format(time.RFC3339Nano), ev.EndedAt.UTC().Format(time.RFC3339Nano))
		}
		if len(ev.HostResult) > 0 {
			fmt.Fprintf(w, "  host said  %s\n", strings.TrimSpace(string(ev.HostResult)))
		}
		for _, x := range ev.Session.Exchanges {
			fmt.Fprintf(w, "  ipc        %d %s -> %s\n", x.Sequence, x.Method, x.State)
		}
		if ev.Session.Error != "" {
			fmt.Fprintf(w, "  session    %s\n", ev.Session.Error)
		}
	}
	for _, b := range v.Bootstraps {
		if b.Redeemed {
			fmt.Fprintf(w, "bootstrap %s (generation %d): redeemed by pid %d, session %s\n", b.BootstrapID, b.Generation, b.RedeemedPID, b.RedeemedSessionID)
		} else {
			fmt.Fprintf(w, "bootstrap %s (generation %d): not redeemed\n", b.BootstrapID, b.Generation)
		}
	}
	if len(v.Effects) > 0 {
		printEffects(w, v.Effects)
	}
	if v.Result != nil {
		fmt.Fprintf(w, "result %s, artifact %s, from generation %d\n", v.Result.DataDigest, strings.Join(v.Result.ArtifactRefs, ", "), v.Result.Generation)
	}
	return nil
}

func ledgerUpgradeCommand() *command {
	return &command{
		name:      "ledger upgrade",
		usageLine: "ledger upgrade -ledger PATH",
		short:     "upgrade a bolt ledger file to this build's format, and check it",
		long: `Ledger upgrade opens a bolt ledger file read-write, which upgrades a file of
an earlier format (3 to 7) in place to this build's format 8, adding a
checksum to every record; then it checks the whole file: every record's
checksum, every artifact against its digest, and the ledger's invariants.
The other ledger commands open the file read-only and do not upgrade it.
The file must not be held by a running controller.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			path := fs.String("ledger", "", "the bolt ledger `file` (required)")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				if *path == "" || isDSN(*path) {
					return usagef("-ledger PATH is required, and must be a bolt ledger file")
				}
				if err := checkLedgerFile(*path, true); err != nil {
					return err
				}
				l, err := openLedger(ctx, *path)
				if err != nil {
					return err
				}
				defer closeLedger(l, &err)
				if err := l.(*bolt.Ledger).Check(ctx); err != nil {
					return fmt.Errorf("checking the ledger: %w", err)
				}
				fmt.Fprintf(e.stdout, "%s: a format 8 bolt ledger; every record checked\n", *path)
				return nil
			}
		},
	}
}
