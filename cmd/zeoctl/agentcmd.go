package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/agent/mcpserver"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// facadeFlags are the flags of the agent facade's commands: the ledger
// that holds the catalogue, the project the answers are for, and, for the
// commands that run capabilities, the host and the run's bounds.
type facadeFlags struct {
	ledgerFlags
	runs     bool
	host     hostFlags
	effects  string
	grants   grantFlags
	deadline time.Duration
	budget   int64
	wait     time.Duration
	// store is the ledger facade opened, for reading what a run's error
	// is about.
	store catalogue.Store
}

func (f *facadeFlags) register(fs *flag.FlagSet, runs bool) {
	f.runs = runs
	f.ledgerFlags.register(fs, oneScope)
	if !runs {
		return
	}
	f.host.register(fs)
	registerEffects(fs, &f.effects)
	f.grants.register(fs)
	fs.DurationVar(&f.deadline, "deadline", time.Minute, "a new operation's deadline, from its creation, for every attempt")
	fs.Int64Var(&f.budget, "budget", 0, "a new operation's total effect budget: distinct logical effects across all attempts")
	fs.DurationVar(&f.wait, "wait", 0, "how long a run waits for a resource reservation another run holds before it is refused")
}

// facade opens the ledger and the catalogue and returns the facade, and
// the function that releases them.
func (f *facadeFlags) facade(ctx context.Context, e *env) (_ *agent.Facade, closeAll func(*error), err error) {
	cfg := supervise.Config{SeatID: "seat-zeoctl", RuntimeBindingID: "runtime-zeoctl", Workspace: "workspace-zeoctl",
		TracerProvider: e.telemetry.tracerProvider(), MeterProvider: e.telemetry.meterProvider()}
	var cleanup func()
	if f.runs {
		if err := f.host.checkChoice(); err != nil {
			return nil, nil, err
		}
		if f.host.binding != "" {
			return nil, nil, usagef("-binding is not used here: runs use the binding the catalogue admitted ('zeoctl catalogue admit')")
		}
		if f.budget < 0 || f.deadline <= 0 || f.wait < 0 {
			return nil, nil, usagef("-budget and -wait must be at least 0 and -deadline positive")
		}
		d, err := dispatcherFor(e, f.effects)
		if err != nil {
			return nil, nil, err
		}
		// Every admitted provider runs on this one interpreter: ask its
		// version once, so that a provider made for another one is refused
		// before launch. One that cannot be asked leaves it to the host.
		inst, _, perr := f.host.installation(ctx, "")
		if perr != nil {
			e.progress("note: could not ask the interpreter its version (%v); the host will check it", perr)
		}
		cfg.HostPythonVersion, cfg.SkipPythonVersionCheck = inst.Python, inst.Python == ""
		var ln *launch.Launcher
		if ln, cleanup, err = f.host.launcher(e); err != nil {
			return nil, nil, err
		}
		cfg.Launcher, cfg.Dispatcher, cfg.Grants, cfg.OperationTimeout = ln, d, f.grants.grants(), f.deadline
	}
	l, cat, err := openCatalogue(ctx, f.path, false, nil)
	if err != nil {
		if cleanup != nil {
			cleanup()
		}
		return nil, nil, err
	}
	closeAll = func(err *error) {
		closeLedger(l, err)
		if cleanup != nil {
			cleanup()
		}
	}
	cfg.Ledger = l
	f.store = l
	fc, err := agent.New(agent.Config{Catalogue: cat, Supervisor: cfg, EffectBudget: f.budget, ReservationWait: f.wait})
	if err != nil {
		closeAll(&err)
		return nil, nil, err
	}
	closeLedgerEtc := closeAll
	closeAll = func(err *error) {
		// The Supervisor first: its lease is released only once nothing
		// of it can still write, then the ledger.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if cerr := fc.Close(cctx); cerr != nil && *err == nil {
			*err = cerr
		}
		closeLedgerEtc(err)
	}
	return fc, closeAll, nil
}

func searchCommand() *command {
	return &command{
		name:      "search",
		usageLine: "search -ledger PATH [-org ID] [-project ID] [-limit N] [-cursor C] [-json] [WORD...]",
		short:     "search the capabilities a project may run",
		long: `Search prints one page of the capabilities the project may run whose id,
title, description or tags contain every WORD (in any case); with no WORD,
all of them. They are ordered by relevance (a word in the id ranks above one
in the title, tags, then description), then by id; the same catalogue and
words always give the same pages. Capabilities outside the project's
audience do not exist for it: they are never listed nor counted.

A page holds at most 100 (-limit, default 20). When more follow, search
prints the cursor of the next page: pass it as -cursor with the same words.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f facadeFlags
			f.register(fs, false)
			limit := fs.Int("limit", 0, fmt.Sprintf("the page size, 1..%d (default %d)", agent.MaxPageSize, agent.DefaultPageSize))
			cursor := fs.String("cursor", "", "the cursor printed by the previous page")
			return func(ctx context.Context, e *env, args []string) (err error) {
				fc, closeAll, err := f.facade(ctx, e)
				if err != nil {
					return err
				}
				defer closeAll(&err)
				page, err := fc.Search(ctx, f.scope(), agent.SearchRequest{Query: strings.Join(args, " "), Cursor: *cursor, Limit: *limit})
				if err != nil {
					return err
				}
				if f.json {
					return printJSON(e.stdout, page)
				}
				if len(page.Capabilities) == 0 {
					fmt.Fprintln(e.stdout, "no capability matches")
				}
				for _, c := range page.Capabilities {
					line := c.CapabilityID
					if c.Title != "" {
						line += "  " + c.Title
					}
					if c.Deprecated {
						line += "  (deprecated)"
					}
					fmt.Fprintln(e.stdout, line)
					if c.Description != "" {
						fmt.Fprintf(e.stdout, "    %s\n", c.Description)
					}
					if len(c.Tags) > 0 {
						fmt.Fprintf(e.stdout, "    tags: %s\n", strings.Join(c.Tags, ", "))
					}
				}
				if page.NextCursor != "" {
					fmt.Fprintf(e.stdout, "\nmore: add -cursor %s\n", page.NextCursor)
				}
				return nil
			}
		},
	}
}

func describeCapabilityCommand() *command {
	return &command{
		name:      "describe-capability",
		usageLine: "describe-capability -ledger PATH [-org ID] [-project ID] [-json] ID",
		short:     "print a capability's manifest and request schema, as a project sees it",
		long: `Describe-capability prints the manifest of a capability the project may run
(as its host projects it) and the JSON Schema its arguments must satisfy.
A capability outside the project's audience is answered exactly as one that
does not exist.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f facadeFlags
			f.register(fs, false)
			return func(ctx context.Context, e *env, args []string) (err error) {
				if len(args) != 1 {
					return usagef("want one capability ID")
				}
				fc, closeAll, err := f.facade(ctx, e)
				if err != nil {
					return err
				}
				defer closeAll(&err)
				d, err := fc.Describe(ctx, f.scope(), args[0])
				if err != nil {
					return err
				}
				if f.json {
					return printJSON(e.stdout, d)
				}
				return printDescription(e.stdout, d)
			}
		},
	}
}

func printDescription(w io.Writer, d agent.Description) error {
	m := d.Manifest
	fmt.Fprintf(w, "%s", d.CapabilityID)
	if d.Title != "" {
		fmt.Fprintf(w, "  %s", d.Title)
	}
	fmt.Fprintf(w, "\n  provider       %s (%s) generation %d\n", d.Provider.Distribution, d.Provider.Factory, d.Generation)
	fmt.Fprintf(w, "  description    %s\n", m.Description)
	kinds := make([]string, len(m.Effects.Kinds))
	for i, k := range m.Effects.Kinds {
		kinds[i] = string(k)
	}
	fmt.Fprintf(w, "  effects        %s; concurrency %s\n", strings.Join(kinds, ", "), m.Effects.Concurrency)
	if d.NeedsAccount {
		fmt.Fprintf(w, "  account        needed (credentials %s; services %s)\n", orNone(m.Requirements.Credentials), orNone(m.Requirements.Services))
	}
	if m.Deprecation.Deprecated {
		fmt.Fprintln(w, "  deprecated")
	}
	fmt.Fprintln(w, "  request schema:")
	return printJSONIndented(w, d.RequestSchema, "    ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// printJSONIndented writes v as indented JSON, each line after prefix.
func printJSONIndented(w io.Writer, v any, prefix string) error {
	var b strings.Builder
	if err := printJSON(&b, v); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(strings.TrimSuffix(b.String(), "\n"), "\n") {
		fmt.Fprint(w, prefix+line)
	}
	fmt.Fprintln(w)
	return nil
}

func runCommand() *command {
	return &command{
		name:      "run",
		usageLine: "run (-python PATH | -host PATH | -simulated) -ledger PATH [-org ID] [-project ID] [-args JSON|@FILE] [-operation ID] [-account NAME] [-deadline D] [-budget N] [-wait D] [-effects refuse|accept|uncertain] [-json] ID",
		short:     "run a capability from the catalogue, as a project",
		long: `Run runs the capability ID as the project, through the agent facade: the
catalogue decides whether the project sees it, whether it has consented to
what it needs and with which connection account (-account, when several
could serve), and pins the operation to the provider's current generation;
then the operation runs as 'zeoctl invoke' runs one, on the admitted
binding, and run prints its state and, once succeeded, the artifact.

-operation continues an operation (after waiting_approval, needs_reconciliation,
a busy reservation): the same id runs on the generation it was pinned to,
even if a newer one was admitted since; an accepted result is returned
without running anything. A capability outside the project's audience is
answered exactly as one that does not exist, and nothing is recorded.

Exit status 0 means succeeded; 3 means the operation ended otherwise, and
the printed next step says what to do.
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f facadeFlags
			f.register(fs, true)
			argsFlag := fs.String("args", "{}", "the arguments: a JSON object, or @FILE")
			operation := fs.String("operation", "", "the operation `ID` to continue (default: a new operation)")
			account := fs.String("account", "", "the connection `account` to run with")
			return func(ctx context.Context, e *env, args []string) (err error) {
				if len(args) != 1 {
					return usagef("want one capability ID")
				}
				arguments, err := readArgs(*argsFlag)
				if err != nil {
					return err
				}
				fc, closeAll, err := f.facade(ctx, e)
				if err != nil {
					return err
				}
				defer closeAll(&err)
				res, rerr := fc.Run(ctx, f.scope(), agent.RunRequest{CapabilityID: args[0], Arguments: arguments,
					OperationID: *operation, Account: *account})
				if errors.Is(rerr, supervise.ErrOperationMismatch) {
					return mismatchError(ctx, f.store, f.scope(), *operation, args[0], "", rerr)
				}
				if res.State == "" {
					var ce *catalogue.ConsentError
					if errors.As(rerr, &ce) {
						return fmt.Errorf("%w\nto grant exactly that: %s", rerr, ce.GrantCommand(f.path))
					}
					return rerr
				}
				if where, ok := argumentsProblem(rerr); ok {
					if !strings.Contains(res.Reason, where) {
						res.Reason += ": " + where
					}
					rerr = fmt.Errorf("invalid_request: -args %s ('zeoctl describe-capability %s' prints the request schema)", where, args[0])
				}
				if f.json {
					if err := printJSON(e.stdout, res); err != nil {
						return err
					}
				} else {
					printRunResult(e.stdout, res)
				}
				if rerr != nil {
					return &outcomeError{rerr}
				}
				return nil
			}
		},
	}
}

func printRunResult(w io.Writer, r agent.RunResult) {
	fmt.Fprintf(w, "state      %s\n", r.State)
	fmt.Fprintf(w, "operation  %s (%s)\n", r.OperationID, r.CapabilityID)
	if r.Reconnected {
		fmt.Fprintln(w, "           its result was accepted before; nothing ran")
	}
	for _, row := range [][2]string{{"error code", r.ErrorCode}, {"reason", r.Reason}, {"detail", r.Detail}, {"next", r.Next}} {
		if row[1] != "" {
			fmt.Fprintf(w, "%-10s %s\n", row[0], row[1])
		}
	}
	if r.Artifact != nil {
		fmt.Fprintf(w, "artifact   %s\n%s\n", r.ArtifactRef, r.Artifact)
	}
}

func mcpCommand() *command {
	return &command{
		name:      "mcp",
		usageLine: "mcp (-python PATH | -host PATH | -simulated) -ledger PATH [-org ID] [-project ID] [-deadline D] [-budget N] [-wait D] [-effects refuse|accept|uncertain]",
		short:     "serve the catalogue to agents over MCP on stdin and stdout",
		long: `Mcp serves the agent facade as a Model Context Protocol server on stdin and
stdout (newline-delimited JSON-RPC), for one project, until stdin closes or
zeoctl is stopped. Configure an MCP client to start it as a command.

It has exactly three tools, whatever the catalogue holds: search (free text
over ids, titles, descriptions and tags, in pages of at most 100 with a
cursor), describe (a capability's manifest and request schema) and run (a
capability id and its arguments, as data; the state, and the artifact once
succeeded). Capability ids are always arguments, never tool names.
Everything is answered as the project sees the catalogue: a capability
outside its audience does not exist, not even in an error's wording.

With a ledger file (bolt), the server holds the file's lock while it runs:
any other zeoctl command on the same file fails (after a 2 s wait) until
the server exits. For an MCP server beside other readers, or several
servers for one catalogue, use a PostgreSQL ledger (-ledger postgres://…),
which many processes open at once. Diagnostics go to stderr.

Each line of stdin is one JSON-RPC message: a line that is not one (not
JSON, a batch, a wrong id or jsonrpc member) is answered by a JSON-RPC
error and the server reads on. When stdin closes, every request read
before is answered, then the server exits.

Flags take one dash or two; MCP clients that parse their own flags (the
Inspector reads -e) need two: --simulated --ledger PATH --org ID ...
`,
		flags: func(fs *flag.FlagSet) runFunc {
			var f facadeFlags
			f.register(fs, true)
			return func(ctx context.Context, e *env, args []string) (err error) {
				if err := noArgs(args); err != nil {
					return err
				}
				fc, closeAll, err := f.facade(ctx, e)
				if err != nil {
					return err
				}
				defer closeAll(&err)
				logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
				srv, err := mcpserver.New(fc, f.scope(), mcpserver.Options{Name: "zeoctl", Version: "v1", Logger: logger, Ledger: f.path})
				if err != nil {
					return err
				}
				sc := f.scope()
				e.progress("serving MCP for %s/%s on stdin and stdout", sc.OrganizationID, sc.ProjectID)
				// A transport of our own: the SDK's stdio transport ends the
				// session on the first malformed line.
				err = srv.Run(ctx, &mcpserver.LineTransport{Reader: e.stdin, Writer: e.stdout, Logger: logger})
				if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
		},
	}
}
