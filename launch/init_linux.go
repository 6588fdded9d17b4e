package launch

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// initEnv is the one environment variable of a containment init: the
// descriptor number of its policy. The status pipe's write end is the
// next descriptor.
const initEnv = "ZEO_LAUNCH_CONTAIN_INIT"

// initExitCode is the init's exit status when it refuses to start the
// host.
const initExitCode = 125

// Init must be the first statement of main (or TestMain) in every program
// that launches contained hosts without setting Containment.InitPath
// (doc/design.md, “Containment”). A contained host is started as this very
// program re-executed, and Init is where it takes over: when the process
// was started as a containment init, Init applies the launch's policy to
// itself — resource limits, no_new_privs, the Landlock ruleset and scopes,
// the seccomp filter; the namespaces are already in place — and then
// replaces itself with the host's interpreter. It never returns then: if
// it cannot apply the whole policy it reports why to the launcher and
// exits with status 125 without running the host.
//
// In any other process Init returns at once, having recorded that this
// program calls it; New refuses to contain hosts without that record
// (ErrContainmentUnavailable), since re-executing a program that does not
// call Init would run its main instead.
//
// Nothing before Init in main may have side effects: package init
// functions run in the containment init too, before Init.
func Init() {
	initCalled.Store(true)
	v, ok := os.LookupEnv(initEnv)
	if !ok {
		return
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		fmt.Fprintf(os.Stderr, "launch: containment init: bad %s=%q\n", initEnv, v)
		os.Exit(initExitCode)
	}
	// The status pipe's write end closes when the exec succeeds.
	status := os.NewFile(uintptr(fd+1), "zeo-launch-status")
	unix.CloseOnExec(fd + 1)
	err = runInit(fd)
	// Only failures get here.
	fmt.Fprintf(status, "%v", err)
	os.Exit(initExitCode)
}

// runInit applies the policy on descriptor fd and execs the host; it
// returns only on failure. Everything runs on one locked OS thread: the
// Landlock domain, no_new_privs and the seccomp filter are applied to that
// thread, which then execs (the other threads end with the exec).
func runInit(fd int) error {
	runtime.LockOSThread() // never unlocked: the thread becomes the host
	f := os.NewFile(uintptr(fd), "zeo-launch-policy")
	b, err := io.ReadAll(io.LimitReader(f, MaxContextBytes))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	var p policy
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decoding the policy: %w", err)
	}
	for _, lim := range p.Limits {
		r := syscall.Rlimit{Cur: lim.Value, Max: lim.Value}
		// syscall.Setrlimit, not unix's: it also stops the exec from
		// restoring the soft open-files limit the Go runtime raised.
		if err := syscall.Setrlimit(lim.Resource, &r); err != nil {
			return fmt.Errorf("setrlimit(%d, %d): %w", lim.Resource, lim.Value, err)
		}
	}
	if u := p.User; u != nil {
		// As a cold start does: no supplementary groups, then the gid,
		// then the uid (all threads).
		if err := syscall.Setgroups([]int{}); err != nil {
			return fmt.Errorf("setgroups([]): %w", err)
		}
		if err := syscall.Setgid(int(u.GID)); err != nil {
			return fmt.Errorf("setgid(%d): %w", u.GID, err)
		}
		if err := syscall.Setuid(int(u.UID)); err != nil {
			return fmt.Errorf("setuid(%d): %w", u.UID, err)
		}
	}
	if p.NoNewPrivs {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
		}
	}
	if p.FS || p.Scope {
		if err := restrictLandlock(p); err != nil {
			return err
		}
	}
	if p.Seccomp {
		if err := installSeccomp(); err != nil {
			return err
		}
	}
	err = syscall.Exec(p.Path, p.Argv, p.Env)
	return fmt.Errorf("exec %s: %w", p.Path, err)
}

// landlockConfigs are go-landlock's configurations by ABI version.
var landlockConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// maxLandlockABI is the newest Landlock ABI this package builds rulesets
// for.
const maxLandlockABI = 11

// restrictLandlock enforces p's Landlock ruleset on this thread: the
// filesystem rights of ABI p.ABI (all of them handled, so that only the
// rules' paths are reachable) and its IPC scopes. The network rights are
// not handled: the network layer is the namespace.
func restrictLandlock(p policy) error {
	if p.ABI < 1 || p.ABI >= len(landlockConfigs) {
		return fmt.Errorf("Landlock ABI %d is not one this launcher builds rulesets for", p.ABI)
	}
	full := landlockConfigs[p.ABI]
	var cfg landlock.Config
	var rules []landlock.Rule
	if p.FS {
		cfg.HandledAccessFS = full.HandledAccessFS
		rules = append(rules, pathRules(p.Read, false)...)
		rules = append(rules, pathRules(p.Write, true)...)
	}
	if p.Scope {
		cfg.Scoped = full.Scoped
	}
	// BestEffort only fits the rules' rights to the configuration, which
	// is already exactly the kernel's ABI: nothing asked is dropped.
	rfd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if rfd < 0 {
		return fmt.Errorf("building the Landlock ruleset: nothing to enforce on ABI %d", p.ABI)
	}
	defer unix.Close(rfd)
	if err := ll.LandlockRestrictSelf(rfd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// pathRules returns one rule per existing path (a directory's rights or a
// file's); missing paths are skipped.
func pathRules(paths []string, write bool) []landlock.Rule {
	var out []landlock.Rule
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		switch {
		case fi.IsDir() && write:
			out = append(out, landlock.RWDirs(path).WithRefer())
		case fi.IsDir():
			out = append(out, landlock.RODirs(path))
		case write:
			out = append(out, landlock.RWFiles(path).WithIoctlDev())
		default:
			out = append(out, landlock.ROFiles(path))
		}
	}
	return out
}
