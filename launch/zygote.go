package launch

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// zygoteSource is the fork server, a Python program of ours (standard
// library only), written to a private file when a server starts.
//
//go:embed zygote.py
var zygoteSource []byte

// fallbackPreload is what a server preloads when ZygoteConfig.Preload is
// nil and the host's own imports cannot be discovered: the upstream
// host's third-party dependencies.
func fallbackPreload() []string { return []string{"pydantic", "pydantic.main", "jsonschema"} }

// zygoteRestartBackoff is the least time between two attempts to start a
// server after one failed; invocations meanwhile launch cold.
const zygoteRestartBackoff = time.Second

// maxControlMessage bounds one control message to the server (a fork
// request carries the argument vector and the environment); a larger one
// is launched cold.
const maxControlMessage = 128 << 10

// ZygoteConfig configures a Zygote (see Launcher.StartZygote). The zero
// value of each field other than Provider means its default.
type ZygoteConfig struct {
	// Provider is the provider binding whose environment the zygote
	// serves. The launcher's Verifier checks its environment_digest before
	// the server starts, and an invocation whose binding names another
	// digest (which the Verifier accepted) or another factory package
	// gets a fresh server. Its factory's top-level package is provider
	// code: the server refuses to fork while any module of it is loaded.
	// Required.
	Provider manifest.ProviderBinding
	// Preload lists the trusted modules the server imports before it
	// forks: the host's dependencies, never the host module itself (the
	// module after -m in Config.Args) and never provider code; an empty
	// non-nil slice preloads nothing.
	//
	// Nil means the host's own import closure, discovered by the server
	// when it starts: it reads (never runs) the source of the host module
	// and of every module of the host's package that it imports at its
	// top level, and imports what they import from outside the host
	// package, the provider's package and Forbid, in the host's order; see
	// doc/design.md, “Warm launch”. If the host's source cannot be read,
	// or what it imports leaves the server unable to fork (a thread, a
	// forbidden module), the server preloads pydantic, pydantic.main and
	// jsonschema (the upstream host's third-party dependencies) instead,
	// and the Launcher's logger warns, saying why.
	Preload []string
	// Forbid lists further modules (each with its submodules) that must
	// not be loaded in the server when it forks, besides the host module
	// and the provider's package, which are always forbidden. Nil means
	// none.
	Forbid []string
	// Switches lists modules that hold process-wide switches of the host
	// (for example its managed-execution latch): the server records their
	// module-level scalar values after the preload, and refuses to fork
	// once any of them changed, or once such a module is loaded that was
	// not then. Nil means zeo_core.core.managed_execution; an empty
	// non-nil slice means none.
	Switches []string
	// MaxForks is how many hosts one server forks before a fresh server
	// replaces it. Zero means DefaultZygoteMaxForks.
	MaxForks int
	// MaxAge is how long one server serves before a fresh server replaces
	// it. Zero means DefaultZygoteMaxAge.
	MaxAge time.Duration
	// Spare keeps one child forked ahead of its invocation, so that an
	// invocation does not wait for the fork; a new spare is forked when a
	// host of the server ends, never while the one that took the spare
	// starts.
	Spare bool
	// PreTouch makes the spare copy its writable memory pages
	// (MADV_POPULATE_WRITE) while it waits, so that the host does not pay
	// those copy-on-write faults. It costs the memory of a full private
	// copy per spare; see BENCHMARKS.md for whether it pays. Only with
	// Spare.
	PreTouch bool
	// StartTimeout bounds a server's start. Zero means
	// DefaultZygoteStartTimeout.
	StartTimeout time.Duration
	// ReplyTimeout bounds how long a server may take to answer a fork
	// request, and to report a child's exit after the child's pidfd shows
	// it exited; a server that takes longer is taken for hung and killed.
	// Zero means DefaultZygoteReplyTimeout.
	ReplyTimeout time.Duration
	// ProviderWarm, when set, makes the zygote provider-warm: its server
	// also activates Provider's generation once, for one tenant (see
	// ProviderWarm). Preload, Forbid, Switches and PreTouch must then be
	// unset. Nil means today's warm launch, which never loads provider
	// code in the server.
	ProviderWarm *ProviderWarm
}

// ZygoteStats counts what a Zygote did.
type ZygoteStats struct {
	// Starts counts the servers started; Forks the hosts they forked
	// (Spares of them were handed to a spare child); Cold the invocations
	// launched cold instead (the server refused, was lost before forking,
	// or could not be started).
	Starts, Forks, Spares, Cold int
	// ServerPID is the current server's process id, 0 when there is none.
	ServerPID int
	// Preloaded lists the modules the current server imported before it
	// forked (its preload, at most the first 256; their own imports are
	// not listed), nil when there is no server. Discovered says that they are the host's
	// discovered import closure (ZygoteConfig.Preload nil and the
	// discovery succeeded).
	Preloaded  []string
	Discovered bool
	// ProviderWarm is what the current provider-warm server reported, nil
	// when there is none or the zygote is not provider-warm.
	ProviderWarm *ProviderWarmStats
}

// zygoteSpec is a ZygoteConfig checked against the launcher's Config.
type zygoteSpec struct {
	cfg      ZygoteConfig
	opts     []string // interpreter options before -m
	module   string   // the host module
	rest     []string // Config.Args after the module
	preload  []string // with discover, what is preloaded if discovery fails
	discover bool     // preload the host's discovered import closure
	forbid   []string // besides the provider's package
	switches []string
	pw       *providerWarmSpec // nil unless provider-warm
}

// zygoteSpecFor validates cfg for launcher config lc. Errors wrap
// ErrInvalidConfig.
func zygoteSpecFor(lc Config, cfg ZygoteConfig) (zygoteSpec, error) {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	zs := zygoteSpec{cfg: cfg}
	i := slices.Index(lc.Args, "-m")
	if i < 0 || i+1 >= len(lc.Args) {
		add("a warm launch runs the host as `python -m MODULE`: Config.Args must hold -m MODULE, and Args %q do not", lc.Args)
	} else {
		zs.opts, zs.module, zs.rest = slices.Clone(lc.Args[:i]), lc.Args[i+1], slices.Clone(lc.Args[i+2:])
	}
	if err := manifest.ValidateBinding(cfg.Provider); err != nil {
		add("Provider: %w", err)
	}
	provider := providerPackage(cfg.Provider)
	zs.preload = cfg.Preload
	if zs.preload == nil {
		zs.preload, zs.discover = fallbackPreload(), true
	}
	zs.switches = cfg.Switches
	if zs.switches == nil {
		zs.switches = []string{"zeo_core.core.managed_execution"}
	}
	zs.forbid = append([]string{zs.module}, cfg.Forbid...)
	for _, list := range []struct {
		name  string
		names []string
	}{{"Preload", zs.preload}, {"Forbid", cfg.Forbid}, {"Switches", zs.switches}} {
		for _, n := range list.names {
			if !isModuleName(n) {
				add("%s entry %q is not a dotted module name", list.name, n)
			}
		}
	}
	for _, n := range zs.preload {
		if moduleIn(n, zs.forbid) || moduleIn(n, []string{provider}) {
			add("Preload entry %s is host or provider code (the host module %s and the provider package %s are never preloaded)", n, zs.module, provider)
		}
	}
	if cfg.MaxForks < 0 || cfg.MaxAge < 0 || cfg.StartTimeout < 0 || cfg.ReplyTimeout < 0 {
		add("MaxForks, MaxAge, StartTimeout and ReplyTimeout must not be negative")
	}
	if cfg.PreTouch && !cfg.Spare {
		add("PreTouch needs Spare")
	}
	if cfg.ProviderWarm != nil {
		if cfg.Preload != nil || cfg.Forbid != nil || cfg.Switches != nil || cfg.PreTouch {
			add("ProviderWarm excludes Preload, Forbid, Switches and PreTouch (the server loads the host and the provider itself)")
		}
		var pwErrs []error
		zs.pw, pwErrs = checkProviderWarm(*cfg.ProviderWarm, cfg.Provider)
		errs = append(errs, pwErrs...)
		zs.discover = false
	}
	if zs.cfg.MaxForks == 0 {
		zs.cfg.MaxForks = DefaultZygoteMaxForks
	}
	if zs.cfg.MaxAge == 0 {
		zs.cfg.MaxAge = DefaultZygoteMaxAge
	}
	if zs.cfg.StartTimeout == 0 {
		zs.cfg.StartTimeout = DefaultZygoteStartTimeout
	}
	if zs.cfg.ReplyTimeout == 0 {
		zs.cfg.ReplyTimeout = DefaultZygoteReplyTimeout
	}
	zs.cfg.Preload, zs.cfg.Forbid, zs.cfg.Switches, zs.cfg.ProviderWarm = nil, nil, nil, nil // zs holds them
	if len(errs) > 0 {
		return zygoteSpec{}, fmt.Errorf("%w: zygote: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return zs, nil
}

// providerPackage is the top-level package of b's factory: provider code,
// never loaded in a server.
func providerPackage(b manifest.ProviderBinding) string {
	factory, _, _ := strings.Cut(b.Factory, ":")
	pkg, _, _ := strings.Cut(factory, ".")
	return pkg
}

// isModuleName reports whether s is a dotted name of identifiers (ASCII
// letters, digits and underscores, or any non-ASCII letter Python may
// accept; the interpreter judges those).
func isModuleName(s string) bool {
	if s == "" {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || part[0] >= '0' && part[0] <= '9' {
			return false
		}
		for _, r := range part {
			if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f) {
				return false
			}
		}
	}
	return true
}

// moduleIn reports whether module name is one of prefixes or inside one.
func moduleIn(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if name == p || strings.HasPrefix(name, p+".") {
			return true
		}
	}
	return false
}
