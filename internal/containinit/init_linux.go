// Package containinit is the containment init of runtimeipc's launcher
// (doc/design.md, “Containment”): the code that runs in a host's process
// after the launcher started it and before the host's interpreter, which
// applies the launch's policy to the process and then execs the
// interpreter. It lives apart from package launch, and imports almost
// nothing, so that a program made only of it (cmd/zeo-launch-init)
// starts in a millisecond; contain.Init calls it in the embedder's own
// program.
package containinit

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

// Env is the one environment variable of a containment init: the
// descriptor number of its policy. The status pipe's write end is the
// next descriptor, and, when the policy has an EgressPort, the socket
// the egress listener is handed over on the one after.
const Env = "ZEO_LAUNCH_CONTAIN_INIT"

// ExitCode is the init's exit status when it refuses to start the host.
const ExitCode = 125

// maxPolicyBytes bounds the policy read.
const maxPolicyBytes = 1 << 20

// Policy is what the containment init applies to itself before it execs
// the host. It travels on a sealed memfd, as JSON.
type Policy struct {
	Path  string   `json:"path"`
	Argv  []string `json:"argv"`
	Env   []string `json:"env"`
	Read  []string `json:"read"`
	Write []string `json:"write"`
	// ABI is the Landlock ABI the ruleset is built for; FS and Scope say
	// which Landlock parts are handled.
	ABI        int     `json:"abi"`
	FS         bool    `json:"fs"`
	Scope      bool    `json:"scope"`
	NoNewPrivs bool    `json:"no_new_privs"`
	Seccomp    bool    `json:"seccomp"`
	Limits     []Limit `json:"limits"`
	// User, when set, is the uid and gid the init switches to, with no
	// supplementary groups.
	User *User `json:"user"`
	// EgressPort, when not zero, is the port of the egress listener the
	// init binds on EgressListenAddr in the host's network namespace and
	// hands to the launcher before anything else (egressListener).
	EgressPort int `json:"egress_port,omitempty"`
	// SharedLoopback, for a zygote's server whose children may be
	// allowed the network, brings the loopback interface of the
	// namespace up (each child's egress listener is bound on it) and
	// takes CAP_NET_ADMIN and CAP_NET_RAW out of the bounding set, so
	// that no process of the namespace can change it, sniff it or open
	// raw sockets in it, even one that is root there (sharedLoopback).
	SharedLoopback bool `json:"shared_loopback,omitempty"`
}

// Limit is one rlimit, set as both soft and hard limit.
type Limit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// User is a uid and a gid.
type User struct {
	UID, GID uint32
}

// Main, when this process was started as a containment init (Env is
// set), applies its policy and execs the host; it never returns then: if
// it cannot apply the whole policy it writes why on the status pipe and
// exits with ExitCode, without running the host. Otherwise it returns at
// once.
func Main() {
	called.Store(true)
	v, ok := os.LookupEnv(Env)
	if !ok {
		return
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		fmt.Fprintf(os.Stderr, "launch: containment init: bad %s=%q\n", Env, v)
		os.Exit(ExitCode)
	}
	// The status pipe's write end closes when the exec succeeds.
	status := os.NewFile(uintptr(fd+1), "zeo-launch-status")
	unix.CloseOnExec(fd + 1)
	err = run(fd)
	// Only failures get here.
	fmt.Fprintf(status, "%v", err)
	os.Exit(ExitCode)
}

// run applies the policy on descriptor fd and execs the host; it
// returns only on failure. Everything runs on one locked OS thread: the
// Landlock domain, no_new_privs and the seccomp filter are applied to that
// thread, which then execs (the other threads end with the exec).
func run(fd int) error {
	runtime.LockOSThread() // never unlocked: the thread becomes the host
	f := os.NewFile(uintptr(fd), "zeo-launch-policy")
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes))
	f.Close()
	if err != nil {
		return fmt.Errorf("reading the policy: %w", err)
	}
	var p Policy
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("decoding the policy: %w", err)
	}
	switch {
	case p.EgressPort != 0:
		// First, while the init still holds the capability it needs.
		if err := egressListener(fd+2, p.EgressPort); err != nil {
			return err
		}
		if err := dropAmbient(); err != nil {
			return err
		}
	case p.SharedLoopback:
		if err := sharedLoopback(); err != nil {
			return err
		}
		if err := dropAmbient(); err != nil {
			return err
		}
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

// LandlockConfigs are go-landlock's configurations by ABI version.
var LandlockConfigs = []landlock.Config{{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}

// MaxLandlockABI is the newest Landlock ABI this package builds rulesets
// for.
const MaxLandlockABI = 11

// restrictLandlock enforces p's Landlock ruleset on this thread: the
// filesystem rights of ABI p.ABI (all of them handled, so that only the
// rules' paths are reachable) and its IPC scopes. The network rights are
// not handled: the network layer is the namespace.
func restrictLandlock(p Policy) error {
	if p.ABI < 1 || p.ABI >= len(LandlockConfigs) {
		return fmt.Errorf("Landlock ABI %d is not one this launcher builds rulesets for", p.ABI)
	}
	full := LandlockConfigs[p.ABI]
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
