package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// hostModeArg, as the first argument, turns zeoctl into the simulated host
// (see `zeoctl help host`). It is internal: zeoctl passes it to itself.
const hostModeArg = "__host"

// Exit codes (see the package documentation, “Exit status”).
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitOutcome = 3
)

func main() {
	// First, before anything can write to stdout: a contained host starts
	// as zeoctl re-executed, which becomes the host here (contain.Init);
	// the host mode owns the process's descriptors.
	contain.Init()
	hostproc.MainIf(hostModeArg)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command reads from and writes to.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	telemetry      *telemetry // -telemetry's providers (see withTelemetry); nil: none
}

// progress writes one progress line on stderr.
func (e *env) progress(format string, a ...any) {
	fmt.Fprintf(e.stderr, "zeoctl: "+format+"\n", a...)
}

// runFunc runs a command with its parsed flags and its remaining arguments.
type runFunc func(ctx context.Context, e *env, args []string) error

// command is one subcommand.
type command struct {
	// name is the command's words after "zeoctl", e.g. "capabilities list".
	name string
	// usageLine shows the syntax, without "zeoctl ".
	usageLine string
	// short is a lowercase phrase, no final period.
	short string
	// long is the help text; it opens with a sentence naming the command.
	long string
	// flags registers the command's flags and returns the function that
	// runs it; nil means no flags and a run that refuses arguments.
	flags func(fs *flag.FlagSet) runFunc
}

// commands is the command table, in the order `zeoctl help` lists them.
func commands() []*command {
	return []*command{
		withTelemetry(demoCommand(), false),
		withTelemetry(invokeCommand(), false),
		describeCommand(),
		doctorCommand(),
		capabilitiesListCommand(),
		capabilitiesDescribeCommand(),
		ledgerOperationsCommand(),
		ledgerEffectsCommand(),
		ledgerLeasesCommand(),
		ledgerResolveCommand(),
		ledgerUpgradeCommand(),
		artifactGetCommand(),
		catalogueAdmitCommand(),
		catalogueListCommand(),
		catalogueGenerationsCommand(),
		consentCommand(true),
		consentCommand(false),
		searchCommand(),
		describeCapabilityCommand(),
		withTelemetry(runCommand(), false),
		withTelemetry(mcpCommand(), true),
	}
}

// usageError is a mistake in the command line: exit 2 with the usage line.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// noArgs refuses arguments left after the flags.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// outcomeError is a command that ran to the end and whose result is not a
// success (the outcome has been printed): exit 3.
type outcomeError struct{ err error }

func (e *outcomeError) Error() string { return e.err.Error() }
func (e *outcomeError) Unwrap() error { return e.err }

// run is zeoctl without the process: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdin: os.Stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		mainUsage(stderr)
		return exitUsage
	}
	switch {
	case isHelp(args[0]):
		return help(e, args[1:])
	case args[0] == hostModeArg:
		// Reached only through run in tests: main handles it first.
		fmt.Fprintln(stderr, "zeoctl: the host mode must be the process's first argument")
		return exitUsage
	}
	cmd, rest := lookup(args)
	if cmd == nil {
		if prefix, group, rest := lookupGroup(args); len(group) > 0 {
			if len(rest) > 0 && isHelp(rest[0]) {
				groupHelp(stdout, prefix)
				return exitOK
			}
			fmt.Fprintf(stderr, "zeoctl %s: expected one of: %s\n", prefix, strings.Join(group, ", "))
			fmt.Fprintf(stderr, "Run 'zeoctl help %s' for details.\n", prefix)
			return exitUsage
		}
		fmt.Fprintf(stderr, "zeoctl: unknown command %q\nRun 'zeoctl help' for the list of commands.\n", strings.Join(args, " "))
		return exitUsage
	}
	fs := flag.NewFlagSet("zeoctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fn := func(ctx context.Context, e *env, args []string) error { return noArgs(args) }
	if cmd.flags != nil {
		fn = cmd.flags(fs)
	}
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			commandHelp(stdout, cmd)
			return exitOK
		}
		return usage(e, cmd, err.Error())
	}
	err := fn(ctx, e, fs.Args())
	var ue *usageError
	var oe *outcomeError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return usage(e, cmd, ue.msg)
	case errors.As(err, &oe):
		fmt.Fprintf(stderr, "zeoctl: %s: %v\n", cmd.name, err)
		return exitOutcome
	}
	fmt.Fprintf(stderr, "zeoctl: %s: %v\n", cmd.name, err)
	return exitFailed
}

// lookup finds the command named by the longest run of leading words of
// args, and returns the arguments after them.
func lookup(args []string) (*command, []string) {
	for n := min(3, len(args)); n >= 1; n-- {
		name := strings.Join(args[:n], " ")
		for _, c := range commands() {
			if c.name == name {
				return c, args[n:]
			}
		}
	}
	return nil, nil
}

// groupOf returns the rest of the names of the commands whose name starts
// with the words of prefix, when prefix is a group of commands
// ("capabilities", "catalogue consent").
func groupOf(prefix string) []string {
	var out []string
	for _, c := range commands() {
		if rest, ok := strings.CutPrefix(c.name, prefix+" "); ok {
			out = append(out, rest)
		}
	}
	return out
}

// lookupGroup finds the group named by the longest run of leading words of
// args, and returns it, its commands and the arguments after it.
func lookupGroup(args []string) (prefix string, group, rest []string) {
	for n := min(2, len(args)); n >= 1; n-- {
		prefix = strings.Join(args[:n], " ")
		if group = groupOf(prefix); len(group) > 0 {
			return prefix, group, args[n:]
		}
	}
	return "", nil, nil
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// groupHelp lists the commands of the group prefix, one a line.
func groupHelp(w io.Writer, prefix string) {
	fmt.Fprintf(w, "zeoctl %s has these commands:\n\n", prefix)
	for _, c := range commands() {
		if strings.HasPrefix(c.name, prefix+" ") {
			fmt.Fprintf(w, "\t%-26s %s\n", c.name, c.short)
		}
	}
	fmt.Fprintf(w, "\nRun 'zeoctl help %s <command>' for details.\n", prefix)
}

func usage(e *env, cmd *command, msg string) int {
	fmt.Fprintf(e.stderr, "zeoctl %s: %s\nusage: zeoctl %s\nRun 'zeoctl help %s' for details.\n", cmd.name, msg, cmd.usageLine, cmd.name)
	return exitUsage
}

func mainUsage(w io.Writer) {
	fmt.Fprint(w, "zeoctl runs ZEO capability providers under a ledger-backed Runtime.\n\nUsage:\n\n\tzeoctl <command> [flags] [arguments]\n\nCommands:\n\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "\t%-26s %s\n", c.name, c.short)
	}
	fmt.Fprint(w, "\nRun 'zeoctl help <command>' for details, 'zeoctl help exit' for the exit status, and\n'zeoctl help scope' for -org and -project.\n")
}

func commandHelp(w io.Writer, cmd *command) {
	fmt.Fprintf(w, "usage: zeoctl %s\n\n%s\n", cmd.usageLine, strings.TrimSpace(cmd.long))
	if cmd.flags == nil {
		return
	}
	fs := flag.NewFlagSet("zeoctl "+cmd.name, flag.ContinueOnError)
	cmd.flags(fs)
	var flags strings.Builder
	fs.SetOutput(&flags)
	fs.PrintDefaults()
	if flags.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", flags.String())
	}
}

// exitHelp is `zeoctl help exit`.
const exitHelp = `Exit status of every zeoctl command:

	0  the command did what was asked
	1  it failed; the message after "zeoctl: <command>:" says what was wrong and what to do
	2  the command line is wrong; the usage line follows the message
	3  invoke or run ran the operation and its outcome is not a success; the
	   outcome is printed, and its state says what to do next (see 'zeoctl
	   help invoke')
`

// hostHelp is `zeoctl help host`.
func hostHelp() string {
	return `zeoctl ` + hostModeArg + ` <host arguments> runs zeoctl as the simulated ZEO runtime host.

This mode is internal: zeoctl starts itself this way when it runs a capability
with -simulated (and in 'zeoctl demo'), so that no build step and no Python
are needed. It is not a stable interface and never a real provider. The
argument must come first; what follows is the host's own command line.

` + hostproc.Usage()
}

func help(e *env, args []string) int {
	if len(args) == 0 {
		mainUsage(e.stdout)
		return exitOK
	}
	switch strings.Join(args, " ") {
	case "exit":
		fmt.Fprint(e.stdout, exitHelp)
		return exitOK
	case "scope":
		fmt.Fprint(e.stdout, scopeHelp)
		return exitOK
	case "host", hostModeArg:
		fmt.Fprint(e.stdout, hostHelp())
		return exitOK
	}
	cmd, rest := lookup(args)
	if cmd == nil || len(rest) > 0 {
		if prefix, group, rest := lookupGroup(args); len(group) > 0 && len(rest) == 0 {
			groupHelp(e.stdout, prefix)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "zeoctl help: unknown help topic %q\nRun 'zeoctl help' for the list of commands.\n", strings.Join(args, " "))
		return exitUsage
	}
	commandHelp(e.stdout, cmd)
	return exitOK
}
