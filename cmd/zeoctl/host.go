package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// pythonHostArgs run upstream's host module with a provider environment's
// interpreter.
var pythonHostArgs = []string{"-m", "zeo_core.adapters.runtime_host"}

// hostFlags choose the host process and the provider binding, for every
// command that starts a host.
type hostFlags struct {
	python    string
	hostExe   string
	simulated bool
	env       listFlag
	envRoot   string
	binding   string
	grace     time.Duration
	// uncontained turns the launcher's containment off (every layer);
	// read are further paths a contained host may read.
	uncontained bool
	read        listFlag
	// user is -user: the host's uid[:gid] or user name; "" runs it as
	// zeoctl's own user.
	user string
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func (h *hostFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&h.python, "python", "", "the provider environment's `interpreter` (absolute path); zeoctl runs it with -m zeo_core.adapters.runtime_host")
	fs.StringVar(&h.hostExe, "host", "", "the provider environment's zeo-capability `script` (absolute path), instead of -python")
	fs.BoolVar(&h.simulated, "simulated", false, "run zeoctl's built-in simulated host instead of a provider (no Python; never a real provider)")
	fs.Var(&h.env, "env", "`KEY=VALUE` for the host's environment, which is otherwise empty (repeatable)")
	fs.StringVar(&h.envRoot, "env-root", "", "verify the binding's environment_digest against this `directory` tree (the provider's virtual environment) before launching")
	fs.StringVar(&h.binding, "binding", "", "the provider binding `file` (JSON); with -simulated the default is the simulated provider's (testdata/examples/binding.json)")
	fs.DurationVar(&h.grace, "grace", 0, "time between SIGTERM and SIGKILL when the host overruns (0: the launcher's default)")
	fs.Var(&h.read, "read", "a further `path` the contained host may read (repeatable): the interpreter, its environment and the system directories are readable anyway")
	fs.StringVar(&h.user, "user", "", "run the host as this `user` (a name, or UID[:GID]) instead of as zeoctl's own user; needs root, and the user must be able to execute the host and enter its directories")
	fs.BoolVar(&h.uncontained, "uncontained", false, "run the host without containment (no Landlock, namespaces, limits, seccomp); by default it is contained, as zeoctl prints")
}

// check refuses an ambiguous or missing host choice, and a real provider
// without its binding.
func (h *hostFlags) check() error {
	if err := h.checkChoice(); err != nil {
		return err
	}
	if !h.simulated && h.binding == "" {
		return usagef("-binding FILE is required with a real provider: the provider binding (see testdata/examples/binding.json for its shape)")
	}
	return nil
}

// checkChoice refuses an ambiguous or missing host choice.
func (h *hostFlags) checkChoice() error {
	n := 0
	for _, set := range []bool{h.python != "", h.hostExe != "", h.simulated} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return usagef("choose the host: -python PATH (the provider environment's interpreter), -host PATH (its zeo-capability script) or -simulated (zeoctl's simulated host)")
	case n > 1:
		return usagef("-python, -host and -simulated are alternatives; give one")
	}
	for _, kv := range h.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("-env %q: want KEY=VALUE", kv)
		}
	}
	return nil
}

// describeHost names the host for progress lines.
func (h *hostFlags) describeHost() string {
	switch {
	case h.python != "":
		return h.python + " " + strings.Join(pythonHostArgs, " ")
	case h.hostExe != "":
		return h.hostExe
	}
	return "the simulated host"
}

// loadBinding reads and validates the binding the flags name.
func (h *hostFlags) loadBinding() (manifest.ProviderBinding, error) {
	if h.binding == "" {
		return hostsim.DemoBinding(), nil
	}
	return readBinding(h.binding)
}

// readBinding reads a provider binding file and applies the inventory
// validation the host applies, so that a bad file is refused here with the
// reason instead of by the host with a bare protocol_error.
func readBinding(path string) (manifest.ProviderBinding, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return manifest.ProviderBinding{}, fmt.Errorf("reading the provider binding: %w", err)
	}
	b, err := manifest.DecodeBinding(raw)
	if errors.Is(err, canon.ErrTooLarge) {
		// Said here once, with what to do; manifest's own text says the
		// same size again.
		return manifest.ProviderBinding{}, fmt.Errorf("provider binding %s is too large: %d bytes, and a binding travels whole in the host's launch context, which holds at most %d (1 MiB); split its capabilities across several providers",
			path, len(raw), launch.MaxContextBytes)
	}
	if err != nil {
		return manifest.ProviderBinding{}, fmt.Errorf("provider binding %s: %w", path, err)
	}
	if err := manifest.ValidateBinding(b); err != nil {
		return manifest.ProviderBinding{}, fmt.Errorf("provider binding %s is not valid, and the host would refuse it: %w", path, err)
	}
	return b, nil
}

// launcher builds the launcher for the chosen host, running in a fresh
// temporary directory that cleanup removes.
func (h *hostFlags) launcher(e *env) (l *launch.Launcher, cleanup func(), err error) {
	cfg, cleanup, err := h.launchConfig(e)
	if err != nil {
		return nil, nil, err
	}
	if l, err = announce(e, cfg); err != nil {
		cleanup()
		return nil, nil, err
	}
	return l, cleanup, nil
}

// announce makes the launcher of cfg and says which containment is in
// force, with a warning for a root host.
func announce(e *env, cfg launch.Config) (*launch.Launcher, error) {
	l, err := launch.New(cfg)
	var ue *contain.UserAccessError
	if errors.As(err, &ue) {
		// Said once, in zeoctl's words: the launcher's names the Config
		// fields.
		what := "the host's program"
		if ue.Field == "Dir" {
			what = "the host's working directory"
		}
		return nil, fmt.Errorf("-user %d:%d cannot %s %s (%v, owner %d:%d), which running %s needs: give that user the permission, or choose another -user",
			ue.User.UID, ue.User.GID, ue.Need, ue.Path, ue.Mode, ue.Owner, ue.Group, what)
	}
	if err != nil {
		if errors.Is(err, launch.ErrContainmentUnavailable) {
			err = fmt.Errorf("%w (pass -uncontained to run the host without containment)", err)
		}
		return nil, err
	}
	e.progress("%s", l.ContainmentSummary())
	switch {
	case cfg.User == nil && os.Geteuid() == 0:
		e.progress("warning: zeoctl runs as root, so the host runs as root too (contained, it still holds root's file access wherever its Landlock rules reach); -user runs it as another user")
	case cfg.User != nil && cfg.User.UID == 0:
		e.progress("warning: -user names uid 0: the host runs as root")
	}
	return l, nil
}

// launchConfig is the launch.Config the flags describe, with a fresh
// working directory that cleanup removes.
func (h *hostFlags) launchConfig(e *env) (cfg launch.Config, cleanup func(), err error) {
	// zeoctl runs hosts as the operator who runs it, or as -user: whoever
	// runs zeoctl as root without -user, or names uid 0, has chosen a
	// root host, and is warned (announce).
	cfg = launch.Config{Env: h.env, Grace: h.grace, Verifier: environment.Trust{}, AllowRootHost: true}
	if h.user != "" {
		if cfg.User, err = lookupUser(h.user); err != nil {
			return launch.Config{}, nil, err
		}
	}
	if h.uncontained {
		cfg.Containment.Off = contain.AllLayers
	}
	for _, p := range h.read {
		abs, err := filepath.Abs(p)
		if err != nil {
			return launch.Config{}, nil, err
		}
		cfg.Containment.ReadPaths = append(cfg.Containment.ReadPaths, abs)
	}
	switch {
	case h.python != "":
		cfg.Interpreter, cfg.Args = h.python, pythonHostArgs
	case h.hostExe != "":
		cfg.Interpreter = h.hostExe
	default:
		self, err := os.Executable()
		if err != nil {
			return launch.Config{}, nil, fmt.Errorf("finding zeoctl's own executable to run as the simulated host: %w", err)
		}
		cfg.Interpreter, cfg.Args = self, []string{hostModeArg}
	}
	// The launcher never looks a program up; a relative path given on the
	// command line means one relative to here.
	if abs, err := filepath.Abs(cfg.Interpreter); err == nil {
		cfg.Interpreter = abs
	}
	if h.envRoot != "" {
		root, err := filepath.Abs(h.envRoot)
		if err != nil {
			return launch.Config{}, nil, err
		}
		cfg.Verifier = environment.TreeVerifier{Root: root}
	} else if !h.simulated {
		e.progress("note: the binding's environment_digest is not verified (pass -env-root DIR to verify it)")
	}
	dir, err := os.MkdirTemp("", "zeoctl-host-")
	if err != nil {
		return launch.Config{}, nil, err
	}
	if u := cfg.User; u != nil {
		// The host's working directory is its own.
		if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
			os.RemoveAll(dir)
			return launch.Config{}, nil, fmt.Errorf("giving the host's working directory to -user %s: %w", h.user, err)
		}
	}
	cfg.Dir = dir
	return cfg, func() { os.RemoveAll(dir) }, nil
}

// lookupUser reads -user: a user name (its uid and primary gid), or
// UID[:GID] (GID defaulting to UID).
func lookupUser(s string) (*contain.User, error) {
	uidText, gidText, hasGID := strings.Cut(s, ":")
	if uid, err := strconv.ParseUint(uidText, 10, 32); err == nil {
		gid := uid
		if hasGID {
			if gid, err = strconv.ParseUint(gidText, 10, 32); err != nil {
				return nil, usagef("-user %q: want a user name or UID[:GID], with numbers", s)
			}
		}
		return &contain.User{UID: uint32(uid), GID: uint32(gid)}, nil
	}
	if hasGID {
		return nil, usagef("-user %q: want a user name or UID[:GID], with numbers", s)
	}
	u, err := user.Lookup(s)
	if err != nil {
		return nil, usagef("-user %q: %v", s, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("-user %q: uid %q and gid %q are not numbers", s, u.Uid, u.Gid)
	}
	return &contain.User{UID: uint32(uid), GID: uint32(gid)}, nil
}

// discoveryHint adds to a failed discovery the end of the host's stderr
// and, unless it is doctor's own, a pointer to doctor.
func discoveryHint(err error, doctor bool) error {
	var de *discovery.Error
	if !errors.As(err, &de) {
		return err
	}
	var hints []string
	if de.Process != nil && len(de.Process.StderrTail) > 0 {
		hints = append(hints, "the host's stderr ends with: "+lastLines(string(de.Process.StderrTail), 5))
	}
	if !doctor {
		hints = append(hints, "run 'zeoctl doctor' with the same flags to see which check fails")
	}
	if len(hints) == 0 {
		return err
	}
	return fmt.Errorf("%w\n\t%s", err, strings.Join(hints, "\n\t"))
}

// lastLines returns the last n lines of s, joined with " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// withTimeout bounds ctx by d when d is positive.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}
