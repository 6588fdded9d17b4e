package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// The package's numbers: the fixed bounds of the host's side of a launch,
// then the defaults of Config and ZygoteConfig, used when the field is zero.
const (
	// MaxContextBytes is the largest context document the host reads. The
	// bounds of the frame limit and the RPC timeout a context names are
	// ipc's (ipc.MinMessageBytes..ipc.MaxMessageBytes, default
	// ipc.MaxMessageBytes; 1 ms..ipc.MaxRPCTimeout, default
	// ipc.DefaultRPCTimeout), since the Session enforces what the context
	// announces.
	MaxContextBytes = 1 << 20
	// MaxResultBytes is the largest stdout the host may write: its one
	// HostResult line, trailing newline included (doc/protocol.md, “Output
	// discipline”). Longer output is ErrResultTooLarge; the launcher reads at most MaxResultBytes+1 bytes
	// of stdout so that it can tell the two apart, and discards the rest.
	MaxResultBytes = 1 << 20
	// EgressPort is the port of the egress proxy inside a host's own
	// network namespace (Linux): a host allowed the network
	// (network_allowed) sees it as http://127.0.0.1:3128 in HTTP_PROXY,
	// HTTPS_PROXY and ALL_PROXY (and their lower-case forms), and nothing
	// else in its namespace leads out (doc/design.md, “Containment”).
	EgressPort = 3128

	// Defaults of Config.

	// DefaultGrace is the time between SIGTERM and SIGKILL to the host's
	// process group when Config.Grace is zero.
	DefaultGrace = 2 * time.Second
	// DefaultWaitDelay bounds, when Config.WaitDelay is zero, how long the
	// launcher waits after the host exits for its stdout and stderr to reach
	// EOF and for its IPC session to end (a descendant that escaped the
	// process group may still hold them).
	DefaultWaitDelay = 500 * time.Millisecond
	// DefaultStderrTailBytes is how much of the end of stderr is kept for
	// diagnostics when Config.StderrTailBytes is zero.
	DefaultStderrTailBytes = 8 << 10
	// DefaultDiscoveryTimeout bounds a discovery command whose context has
	// no deadline.
	DefaultDiscoveryTimeout = 30 * time.Second

	// Defaults of ZygoteConfig.

	// DefaultZygoteMaxForks is how many hosts one server forks, when
	// ZygoteConfig.MaxForks is zero, before a fresh server replaces it.
	DefaultZygoteMaxForks = 1000
	// DefaultZygoteMaxAge is how long one server serves, when
	// ZygoteConfig.MaxAge is zero, before a fresh server replaces it.
	DefaultZygoteMaxAge = 10 * time.Minute
	// DefaultZygoteStartTimeout bounds a server's start (the interpreter's
	// start and the preload) when ZygoteConfig.StartTimeout is zero.
	DefaultZygoteStartTimeout = time.Minute
	// DefaultZygoteReplyTimeout bounds, when ZygoteConfig.ReplyTimeout is
	// zero, how long a server may take to answer a fork request and to
	// report a child's exit once the child has exited.
	DefaultZygoteReplyTimeout = 5 * time.Second
)

// Config configures a Launcher. New copies it; later changes to the caller's
// value have no effect.
type Config struct {
	// Interpreter is the absolute path of the program to execute: the
	// provider environment's python (with Args "-m",
	// "zeo_core.adapters.runtime_host") or its zeo-capability console script
	// (with no Args). It is never looked up in PATH. Required.
	Interpreter string
	// Args are the arguments placed before the host's own command line.
	// Nil means none.
	Args []string
	// Env is the host's entire environment, "KEY=value" entries. Nothing of
	// the launching process's environment is inherited: nil or empty means
	// an empty environment. Keys must be unique and non-empty.
	Env []string
	// Dir is the host's working directory: absolute and existing. Required.
	Dir string
	// Grace is the time between SIGTERM and SIGKILL to the host's process
	// group once the deadline passes or the context is cancelled. It is
	// also the least time a host is given to run: SIGTERM comes at the
	// attempt deadline or one Grace after start, whichever is later, so a
	// host started at its deadline still reports timed_out itself. Zero
	// means DefaultGrace.
	Grace time.Duration
	// WaitDelay bounds the wait, after the host exits, for its output
	// streams and IPC session to end. Zero means DefaultWaitDelay.
	WaitDelay time.Duration
	// StderrTailBytes is how many trailing stderr bytes are kept for
	// diagnostics. Zero means DefaultStderrTailBytes; negative keeps none.
	StderrTailBytes int
	// Verifier checks the provider environment before every launch.
	// Required: pass environment.Trust{} (package launch/environment) explicitly to skip the check.
	Verifier EnvironmentVerifier
	// LeaveParentFDs turns off the sweep that marks every descriptor ≥ 3
	// of this process close-on-exec before each start (as runc does before
	// starting its init). The host still gets exactly FDs 0–4, because the
	// child closes the others itself before the exec (see the package
	// doc); the sweep is a second line, for a descriptor placed past the
	// range the child closes. Set it only when the embedding program
	// relies on its descriptors being inherited by other children it
	// starts with raw fork/exec.
	LeaveParentFDs bool
	// User, when set, runs the host as another user: the child sets its
	// groups to none (no supplementary groups), then its gid and uid to
	// User's, before the host program starts. The host then cannot read
	// this process's memory, environment or descriptors through /proc,
	// and a frame's credentials prove its sender (see the package doc,
	// “What the credential check proves”). Starting a host as another
	// user needs the privilege to change credentials (CAP_SETUID and
	// CAP_SETGID, in practice root); Interpreter and Dir must be usable by
	// that user, which New checks on Linux (see contain.UserAccessError). Nil runs
	// the host as this process's user.
	User *contain.User
	// AllowRootHost lets the host run as root (uid 0) or with group 0:
	// New refuses a Config that would start one (User naming uid or gid
	// 0, or no User while this process runs as root) unless it is set. A
	// root host can read and signal anything, including this process,
	// and can forge the credentials of any process on the socket.
	AllowRootHost bool
	// LeaveDumpable keeps this process dumpable. Unless it is set, New
	// marks the whole process (every goroutine and thread, for the rest
	// of its life) non-dumpable with prctl(PR_SET_DUMPABLE, 0), so that a
	// host running as the same user cannot read its memory, environment
	// or descriptors through /proc or attach to it with ptrace. That also
	// turns off core dumps of this process and stops same-user debuggers
	// (gdb, dlv attach) from attaching; set LeaveDumpable to keep them, at
	// the cost of that protection. Linux only; elsewhere it has no effect.
	LeaveDumpable bool
	// Containment is what confines every host this Launcher starts (on
	// Linux): its filesystem, network, scopes, resources and system
	// calls. The zero value is every layer on; see contain.Config and
	// doc/design.md, “Containment”. A program relying on the default
	// must call contain.Init first in main.
	Containment contain.Config
	// Logger receives one debug record per launch and warnings for forced
	// kills. Nil means no logging.
	Logger *slog.Logger
}

// Launcher starts ZEO runtime hosts. It holds only its frozen Config, so a
// Launcher is safe for concurrent use by several goroutines, each running
// its own invocations.
type Launcher struct {
	cfg     Config
	log     *slog.Logger
	contain *container     // nil: no containment
	cg      *cgroup.Parent // nil: no cgroup layer
}

// New validates cfg and returns a Launcher. Errors wrap ErrInvalidConfig.
//
// Unless cfg.LeaveDumpable is set, New also marks this process
// non-dumpable (see Config.LeaveDumpable).
func New(cfg Config) (*Launcher, error) {
	if err := checkSupported(); err != nil {
		return nil, err
	}
	c := cfg
	if cfg.User != nil {
		u := *cfg.User
		c.User = &u
	}
	c.Containment = cloneContainment(cfg.Containment)
	c.Args = slices.Clone(cfg.Args)
	c.Env = slices.Clone(cfg.Env)
	if c.Env == nil {
		c.Env = []string{}
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.WaitDelay == 0 {
		c.WaitDelay = DefaultWaitDelay
	}
	if c.StderrTailBytes == 0 {
		c.StderrTailBytes = DefaultStderrTailBytes
	}
	if c.StderrTailBytes < 0 {
		c.StderrTailBytes = 0
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	contain, err := newContainer(&c)
	if err != nil {
		return nil, err
	}
	cg, err := openCgroup(&c)
	if err != nil {
		return nil, err
	}
	if !c.LeaveDumpable {
		if err := setNotDumpable(); err != nil {
			return nil, fmt.Errorf("launch: making this process non-dumpable (set Config.LeaveDumpable to skip it): %w", err)
		}
	}
	l := &Launcher{cfg: c, log: c.Logger, contain: contain, cg: cg}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if cg != nil && len(cg.Dropped()) > 0 {
		l.log.Warn("launch: cgroup limits dropped: their controllers are not enabled", "parent", cg.Dir(), "dropped", cg.Dropped())
	}
	return l, nil
}

func (c *Config) validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if !filepath.IsAbs(c.Interpreter) {
		add("Interpreter %q is not an absolute path", c.Interpreter)
	} else if fi, err := os.Stat(c.Interpreter); err != nil {
		add("Interpreter: %w", err)
	} else if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		add("Interpreter %s is not an executable file", c.Interpreter)
	}
	if err := checkDir(c.Dir); err != nil {
		add("Dir: %w", err)
	}
	seen := make(map[string]bool, len(c.Env))
	for _, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || k == "":
			add("Env entry %q is not KEY=value", kv)
		case strings.ContainsRune(kv, 0):
			add("Env entry for %s contains a NUL byte", k)
		case seen[k]:
			add("Env names %s twice", k)
		}
		seen[k] = true
	}
	for _, a := range c.Args {
		if strings.ContainsRune(a, 0) {
			add("Args entry %q contains a NUL byte", a)
		}
	}
	if c.Grace < 0 {
		add("Grace is negative")
	}
	if c.WaitDelay < 0 {
		add("WaitDelay is negative")
	}
	if c.Verifier == nil {
		add("Verifier is nil (use environment.Trust{} to skip environment verification explicitly)")
	}
	if !c.AllowRootHost {
		switch {
		case c.User != nil && (c.User.UID == 0 || c.User.GID == 0):
			add("User {UID: %d, GID: %d} runs the host as root or group 0; set AllowRootHost to allow it", c.User.UID, c.User.GID)
		case c.User == nil && os.Geteuid() == 0:
			add("this process runs as root, so the host would too; set User to run it as another user, or AllowRootHost to allow a root host")
		}
	}
	if c.User != nil && len(errs) == 0 {
		// Before any process starts: a host that could not exec its
		// interpreter or enter its directory as User fails in the child,
		// with less to say.
		if err := checkUserAccess(*c.User, c.Interpreter, c.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, validateContainment(&c.Containment)...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
}

func checkDir(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q is not an absolute path", dir)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// StopReason says why the launcher signalled the host.
type StopReason string

// The stop reasons.
const (
	// StopNone: the host exited on its own.
	StopNone StopReason = ""
	// StopDeadline: the attempt deadline passed.
	StopDeadline StopReason = "deadline"
	// StopCancelled: the caller's context was cancelled or its own
	// deadline passed.
	StopCancelled StopReason = "cancelled"
)

// Process is what the launcher observed of one host process. It is
// evidence for diagnostics and the ledger; it never decides an outcome by
// itself.
type Process struct {
	// PID is the host's process id (also its process group and session id).
	PID int
	// ExitCode is the exit status, or -1 when a signal ended the process.
	ExitCode int
	// Signal is the signal that ended the process, or nil.
	Signal os.Signal
	// Stopped says whether and why the launcher sent SIGTERM to the group;
	// Killed whether it had to follow with SIGKILL after the grace period.
	Stopped StopReason
	Killed  bool
	// Stdout holds the first MaxResultBytes+1 bytes of stdout;
	// StdoutBytes counts all of it (the rest was read and discarded).
	Stdout      []byte
	StdoutBytes int64
	// StderrTail holds the last Config.StderrTailBytes of stderr;
	// StderrBytes counts all of it. Diagnostics only: the protocol never
	// reads stderr.
	StderrTail  []byte
	StderrBytes int64
	// WaitErr is an error from reaping or from closing the output streams
	// (exec.ErrWaitDelay when a descendant held stdout past WaitDelay).
	WaitErr error
	// Elapsed is the time from start to reap; for a contained host, from
	// the exec its containment init made (see contain.Init).
	Elapsed time.Duration
	// Warm reports that the host was forked from a zygote's server
	// (Zygote.Invoke) rather than started cold.
	Warm bool
}

// spec describes one process to run.
type spec struct {
	args     []string // host arguments after Config.Args
	fd3      []byte   // bytes on FD 3
	stdin    []byte   // bytes on FD 0
	dir      string   // "" means Config.Dir
	deadline time.Time
	// provider is the binding whose environment the host runs in (for a
	// warm launch); nil for discovery.
	provider *manifest.ProviderBinding
	// lc is the context the host serves, which its containment policy is
	// derived from; nil for discovery. workspace is the directory the
	// launcher created for it under Containment.WorkspaceRoot, or "".
	lc        *LaunchContext
	workspace string
	// containRead and containWrite are further paths of the containment
	// policy (a zygote server's).
	containRead, containWrite []string
	// serve, when set, gets the Runtime end of a socketpair whose other end
	// is the child's FD 4, and the child's pid. It runs while the process
	// lives, must return when ctx is cancelled, and owns conn.
	serve func(ctx context.Context, conn net.Conn, pid int) error
}

// stopSequence waits for the host's exit, and when ctx ends first sends
// SIGTERM through signal and then, after the grace period, SIGKILL. It
// returns the value received from exited.
func (l *Launcher) stopSequence(ctx context.Context, deadlineCtx bool, pid int, signal func(syscall.Signal), exited <-chan error, p *Process) error {
	select {
	case err := <-exited:
		return err
	case <-ctx.Done():
	}
	p.Stopped = StopCancelled
	if deadlineCtx {
		p.Stopped = StopDeadline
	}
	signal(syscall.SIGTERM)
	t := time.NewTimer(l.cfg.Grace)
	defer t.Stop()
	select {
	case err := <-exited:
		return err
	case <-t.C:
	}
	p.Killed = true
	l.log.Warn("launch: host outlived its grace period; killing its process group", "pid", pid, "grace", l.cfg.Grace)
	signal(syscall.SIGKILL)
	return <-exited
}

// supervision returns the context that bounds a host started at start:
// ctx, and the attempt deadline, but never less than one grace period
// after start, so that a host launched at (or just before) its deadline
// can still report timed_out itself instead of being killed during
// startup. deadlineCtx reports that the attempt deadline, not ctx's own,
// is the nearer one.
func (l *Launcher) supervision(ctx context.Context, deadline, start time.Time) (sctx context.Context, deadlineCtx bool, cancel context.CancelFunc) {
	if deadline.IsZero() {
		return ctx, false, func() {}
	}
	if floor := start.Add(l.cfg.Grace); deadline.Before(floor) {
		deadline = floor
	}
	if d, ok := ctx.Deadline(); !ok || deadline.Before(d) {
		deadlineCtx = true
	}
	sctx, cancel = context.WithDeadline(ctx, deadline)
	return sctx, deadlineCtx, cancel
}

// hostRun is what one run of a host leaves (Launcher.run, Zygote.run):
// the process as the launcher observed it, and the error its IPC session
// (the spec's serve function) ended with, nil when it ended cleanly or
// nothing was served. A run that returns an error started no host.
type hostRun struct {
	p        *Process
	serveErr error
}

// serving runs a spec's serve function for one process.
type serving struct {
	done chan struct{}
	err  error
	stop context.CancelFunc
}

// startServing runs s.serve (if set) on conn for the process pid until it
// returns or ctx ends.
func startServing(ctx context.Context, s spec, conn net.Conn, pid int) *serving {
	sv := &serving{done: make(chan struct{})}
	var sctx context.Context
	sctx, sv.stop = context.WithCancel(ctx)
	if s.serve == nil {
		close(sv.done)
		return sv
	}
	go func() {
		defer close(sv.done)
		sv.err = s.serve(sctx, conn, pid)
	}()
	return sv
}

// finish gives the session, once the host has exited, waitDelay to
// notice that the host closed its socket (it does so before exiting),
// then stops it, and returns its error.
func (sv *serving) finish(waitDelay time.Duration) error {
	t := time.NewTimer(waitDelay)
	select {
	case <-sv.done:
	case <-t.C:
		sv.stop()
		<-sv.done
	}
	t.Stop()
	sv.stop()
	return sv.err
}

// argv returns the full argument vector for host arguments args.
func (l *Launcher) argv(args []string) []string {
	out := make([]string, 0, 1+len(l.cfg.Args)+len(args))
	out = append(out, l.cfg.Interpreter)
	out = append(out, l.cfg.Args...)
	return append(out, args...)
}

// command builds the exec.Cmd shared by every platform and every process
// the launcher starts (a host, or a zygote's server): argv exactly, the
// configured environment and nothing else, dir ("" means Config.Dir).
func (l *Launcher) command(argv []string, dir string, stdin *os.File, stdout, stderr io.Writer, extra []*os.File) *exec.Cmd {
	if dir == "" {
		dir = l.cfg.Dir
	}
	return &exec.Cmd{
		Path:       l.cfg.Interpreter,
		Args:       argv,
		Env:        slices.Clip(l.cfg.Env), // never nil: nil would inherit ours
		Dir:        dir,
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     stderr,
		ExtraFiles: extra,
		WaitDelay:  l.cfg.WaitDelay,
	}
}
