//go:build unix

package process

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxWorkers is the pool size when neither the spec nor the
	// Config names one.
	DefaultMaxWorkers = 1
	// DefaultStartTimeout bounds a worker's start: ready file and
	// Initialize.
	DefaultStartTimeout = 30 * time.Second
	// DefaultShutdownGrace bounds each polite phase of stopping a worker.
	DefaultShutdownGrace = 10 * time.Second
	// DefaultExecuteTimeout is the deadline of a call whose context has
	// none.
	DefaultExecuteTimeout = 10 * time.Minute
	// DefaultMaxResponseBytes bounds one response: a gRPC message, or a
	// one-shot process's stdout. It is gRPC's default receive limit.
	DefaultMaxResponseBytes = 4 << 20
)

// EnvAllowlist returns the names of the variables of the backend's own
// environment that a runtime process inherits, when they are set. Nothing
// else of the backend's environment reaches it: the runtime's environment
// is these plus the NEURON_CAPABILITY_RUNTIME_* variables of its protocol.
// The list is fixed; each call returns a new slice.
func EnvAllowlist() []string {
	return []string{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"}
}

// Config tunes a Backend. Its zero value means every default.
type Config struct {
	// DefaultMaxWorkers is the pool size of a spec whose MaxWorkers is 0.
	// Zero means DefaultMaxWorkers.
	DefaultMaxWorkers int

	// StartTimeout bounds the start of one gRPC worker (its ready file,
	// then Initialize), within the deadline of the call that needed it.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration

	// ShutdownGrace bounds each polite phase of stopping a worker: first
	// the Shutdown call and the exit that should follow, then SIGTERM to
	// its process group and the exit that should follow. A worker still
	// alive after both is killed with SIGKILL. Zero means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration

	// ExecuteTimeout is the deadline of a call whose context has none.
	// Zero means DefaultExecuteTimeout.
	ExecuteTimeout time.Duration

	// MaxResponseBytes bounds one response. Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int

	// TempDir is where each worker's private directory (its socket and
	// ready file) is made. Empty means os.TempDir(). The socket path must
	// fit a Unix socket address (about 100 bytes).
	TempDir string

	// Logger receives worker lifecycle events; nil discards them.
	Logger *slog.Logger

	// Cgroup configures the cgroup layer: by default, where this process
	// has a usable delegated cgroup v2, each runtime process runs in a
	// cgroup of its own, killed as a whole when the process exits.
	Cgroup Cgroup
}

// Backend runs capability runtimes of kind "process": native executables
// that speak ProtocolV1 (a pool of long-lived gRPC workers per
// type@version) or ProtocolJSONV1 (one process per call). It is safe for
// concurrent use. See doc/capabilityruntime.md, “The process backend”.
type Backend struct {
	cfg     Config
	log     *slog.Logger
	baseEnv []string       // the allowlisted part of the environment, fixed at New
	cg      *cgroup.Parent // nil: no cgroup layer

	mu     sync.Mutex       // guards pools, closed and oneShot
	pools  map[string]*pool // live pools by type@version
	closed bool
	// closing is closed by Close; one-shot calls and worker starts watch
	// it.
	closing chan struct{}
	calls   sync.WaitGroup // in-flight one-shot calls
}

// New returns a Backend with the given configuration, or an error naming the
// fields that are invalid. The allowlisted environment is read now: later
// changes to this process's environment do not reach runtimes.
func New(cfg Config) (*Backend, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.DefaultMaxWorkers < 0 {
		bad("DefaultMaxWorkers is negative")
	}
	if cfg.StartTimeout < 0 {
		bad("StartTimeout is negative")
	}
	if cfg.ShutdownGrace < 0 {
		bad("ShutdownGrace is negative")
	}
	if cfg.ExecuteTimeout < 0 {
		bad("ExecuteTimeout is negative")
	}
	if cfg.MaxResponseBytes < 0 {
		bad("MaxResponseBytes is negative")
	}
	if cfg.TempDir != "" && !filepath.IsAbs(cfg.TempDir) {
		bad("TempDir %q is not absolute", cfg.TempDir)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("process: invalid Config: %w", errors.Join(errs...))
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cg, err := openCgroup(cfg.Cgroup, log)
	if err != nil {
		return nil, fmt.Errorf("process: invalid Config: %w", err)
	}
	if cfg.DefaultMaxWorkers == 0 {
		cfg.DefaultMaxWorkers = DefaultMaxWorkers
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.ExecuteTimeout == 0 {
		cfg.ExecuteTimeout = DefaultExecuteTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.TempDir == "" {
		cfg.TempDir = os.TempDir()
	}
	var env []string
	for _, k := range EnvAllowlist() {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &Backend{cfg: cfg, log: log, baseEnv: env, cg: cg, pools: make(map[string]*pool), closing: make(chan struct{})}, nil
}

// BackendName returns "process".
func (b *Backend) BackendName() string { return capabilityruntime.RuntimeKindProcess }

// launchSpec is a validated BackendSpec.
type launchSpec struct {
	typ, version string
	protocol     string
	entrypoint   string // absolute
	rootDir      string
	maxWorkers   int
}

func (s launchSpec) name() string { return s.typ + "@" + s.version }

// Start returns an instance of spec. Under ProtocolV1 (the default when
// spec.Protocol is empty) every Start of the same type@version shares one
// worker pool, counted by holders: the pool stops when the last of its
// instances is closed, and a later Start gets a fresh one. A Start whose spec
// differs from the live pool's (entrypoint, root, protocol or effective
// MaxWorkers) is refused with ErrSpecConflict rather than silently given the
// first spec's pool. Under ProtocolJSONV1 each instance runs one process per
// call. No worker is started until the first call needs one.
//
// spec.Entrypoint must name an executable regular file; a relative one is
// taken under spec.RootDir (see ResolvedCapabilityRuntime.EntrypointPath).
// spec.Config is not read by this backend.
func (b *Backend) Start(ctx context.Context, spec capabilityruntime.BackendSpec) (capabilityruntime.BackendInstance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ls, err := b.validate(spec)
	if err != nil {
		return nil, err
	}
	if ls.protocol == capabilityruntime.ProtocolJSONV1 {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.closed {
			return nil, ErrClosed
		}
		return &oneShot{b: b, spec: ls, closing: make(chan struct{})}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	p := b.pools[ls.name()]
	if p == nil {
		p = newPool(b, ls)
		b.pools[ls.name()] = p
	} else if p.spec != ls {
		return nil, fmt.Errorf("%w: %s is running %s (root %q, %d workers), asked for %s (root %q, %d workers)",
			ErrSpecConflict, ls.name(), p.spec.entrypoint, p.spec.rootDir, p.spec.maxWorkers, ls.entrypoint, ls.rootDir, ls.maxWorkers)
	}
	p.holders++
	return &poolInstance{p: p}, nil
}

func (b *Backend) validate(spec capabilityruntime.BackendSpec) (launchSpec, error) {
	fail := func(format string, args ...any) (launchSpec, error) {
		return launchSpec{}, fmt.Errorf("%w: %s@%s: %s", ErrInvalidSpec, spec.Type, spec.Version, fmt.Sprintf(format, args...))
	}
	if spec.Type == "" || spec.Version == "" {
		return fail("type and version are required")
	}
	protocol := spec.Protocol
	if protocol == "" {
		protocol = capabilityruntime.DefaultProtocol(capabilityruntime.RuntimeKindProcess)
	}
	if protocol != capabilityruntime.ProtocolV1 && protocol != capabilityruntime.ProtocolJSONV1 {
		return fail("unsupported protocol %q (supported: %s, %s)", protocol, capabilityruntime.ProtocolV1, capabilityruntime.ProtocolJSONV1)
	}
	if spec.MaxWorkers < 0 {
		return fail("MaxWorkers is negative")
	}
	if spec.RootDir != "" && !filepath.IsAbs(spec.RootDir) {
		return fail("RootDir %q is not absolute", spec.RootDir)
	}
	entry := spec.Entrypoint
	switch {
	case entry == "":
		return fail("no entrypoint")
	case !filepath.IsAbs(entry) && spec.RootDir == "":
		return fail("entrypoint %q is relative and there is no RootDir", entry)
	case !filepath.IsAbs(entry):
		r := capabilityruntime.ResolvedCapabilityRuntime{RootDir: spec.RootDir, Runtime: capabilityruntime.RuntimeInfo{Entrypoint: entry}}
		if entry = r.EntrypointPath(); entry == "" {
			return fail("entrypoint %q climbs out of RootDir", spec.Entrypoint)
		}
	}
	fi, err := os.Stat(entry)
	if err != nil {
		return fail("entrypoint: %v", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fail("entrypoint %s is not an executable file (mode %v)", entry, fi.Mode())
	}
	max := spec.MaxWorkers
	if max == 0 {
		max = b.cfg.DefaultMaxWorkers
	}
	return launchSpec{
		typ: spec.Type, version: spec.Version, protocol: protocol,
		entrypoint: filepath.Clean(entry), rootDir: spec.RootDir, maxWorkers: max,
	}, nil
}

// env is the environment of a runtime process: the allowlisted variables and
// the protocol's own, sorted by name.
func (b *Backend) env(s launchSpec, socket, ready string) []string {
	env := slices.Clone(b.baseEnv)
	env = append(env,
		capabilityruntime.EnvProtocol+"="+s.protocol,
		capabilityruntime.EnvType+"="+s.typ,
		capabilityruntime.EnvVersion+"="+s.version,
	)
	if socket != "" {
		env = append(env, capabilityruntime.EnvSocket+"="+socket, capabilityruntime.EnvReady+"="+ready)
	}
	slices.Sort(env)
	return env
}

// release drops one holder of p and stops p when it was the last.
func (b *Backend) release(ctx context.Context, p *pool) error {
	b.mu.Lock()
	p.holders--
	last := p.holders == 0
	if last && b.pools[p.spec.name()] == p {
		delete(b.pools, p.spec.name())
	}
	b.mu.Unlock()
	if !last {
		return nil
	}
	return p.shutdown(ctx)
}

// Close stops every pool, whatever its holders, and every one-shot process in
// flight, and waits for them, bounded by ctx: workers get the polite phases
// of Config.ShutdownGrace while ctx allows, then SIGKILL. Calls on the
// backend's instances fail with ErrClosed afterwards. It returns the
// failures of the stops, joined; it is safe to call more than once.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
	}
	pools := make([]*pool, 0, len(b.pools))
	for _, p := range b.pools {
		pools = append(pools, p)
	}
	clear(b.pools)
	b.mu.Unlock()

	errs := make([]error, len(pools))
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() { errs[i] = p.shutdown(ctx) })
	}
	wg.Wait()
	b.calls.Wait() // one-shot calls end promptly: closing kills their groups
	return errors.Join(errs...)
}
