package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// Defaults of Config's zero fields.
const (
	// DefaultMaxWorkers is how many instances of one type@version may run
	// at once when neither the spec nor the Config names a number.
	DefaultMaxWorkers = 1
	// DefaultMemoryLimitPages bounds each instance's linear memory: 4096
	// pages of 64 KiB, 256 MiB. A Go module needs a few MiB to start.
	DefaultMemoryLimitPages = 4096
	// DefaultExecuteTimeout is the deadline of a call whose context has
	// none.
	DefaultExecuteTimeout = 10 * time.Minute
	// DefaultMaxResponseBytes bounds what one call may write to stdout,
	// the process backend's bound.
	DefaultMaxResponseBytes = 4 << 20
	// DefaultStderrTailBytes is how much of the end of a call's stderr is
	// kept for its error.
	DefaultStderrTailBytes = 4 << 10
	// DefaultMaxModuleBytes bounds the module file that Start reads,
	// hashes and compiles.
	DefaultMaxModuleBytes = 128 << 20
)

// MaxMemoryLimitPages is the largest Config.MemoryLimitPages: 65536 pages,
// the 4 GiB that a 32-bit WebAssembly memory can address.
const MaxMemoryLimitPages = 65536

// Config tunes a Backend. Its zero value means every default; New copies it.
type Config struct {
	// DefaultMaxWorkers is the concurrency bound of a spec whose MaxWorkers
	// is 0. Zero means DefaultMaxWorkers.
	DefaultMaxWorkers int

	// MemoryLimitPages bounds the linear memory of every instance, in
	// 64 KiB pages: a memory.grow past it fails inside the module. Zero
	// means DefaultMemoryLimitPages; at most MaxMemoryLimitPages.
	MemoryLimitPages uint32

	// ExecuteTimeout is the deadline of a call whose context has none.
	// Zero means DefaultExecuteTimeout.
	ExecuteTimeout time.Duration

	// MaxResponseBytes bounds what one call may write to stdout; a module
	// that writes more is stopped (ErrOutputTooLarge). Zero means
	// DefaultMaxResponseBytes.
	MaxResponseBytes int

	// StderrTailBytes is how much of the end of a call's stderr is kept
	// for CallError.Stderr; the rest is dropped as it is written. Zero
	// means DefaultStderrTailBytes.
	StderrTailBytes int

	// MaxModuleBytes bounds the size of a module file. Zero means
	// DefaultMaxModuleBytes.
	MaxModuleBytes int64

	// CompilationCacheDir is an absolute directory where compiled modules
	// are kept across Backends and restarts (wazero's file cache, keyed by
	// the module's content and wazero's version), created if missing.
	// Empty means compiled code lives in memory only and a new Backend
	// compiles again.
	CompilationCacheDir string

	// Logger receives compilation events; nil discards them.
	Logger *slog.Logger
}

// Stats are a Backend's counters since New. They are what an operator (or
// a test) can observe of the concurrency bound and of the compilation
// cache.
type Stats struct {
	// Running is how many module instances are executing now.
	Running int
	// PeakRunning is the most that ever executed at once.
	PeakRunning int
	// Calls counts the module instances started.
	Calls int64
	// Compiles counts the modules compiled, or loaded from
	// Config.CompilationCacheDir, by Start. A Start whose module was
	// already compiled by this Backend, or whose module was refused before
	// compiling, does not count.
	Compiles int64
}

// Backend runs capability runtimes of kind "wasm": WASI preview 1 modules
// speaking ProtocolJSONV1, one fresh module instance per call, in an
// embedded wazero runtime that belongs to this Backend alone. It is safe for
// concurrent use. See the package documentation for what it promises and
// doc/capabilityruntime.md, “The wasm backend”.
type Backend struct {
	cfg   Config
	log   *slog.Logger
	rt    wazero.Runtime
	cache wazero.CompilationCache
	// values is the only context value an instance sees: the memory
	// allocator (memory.go).
	values context.Context
	mem    *memoryPool // the allocator's pool of freed memories

	// closeCtx is cancelled by Close: every instance's context derives
	// from it, so every call in flight is stopped.
	closeCtx  context.Context
	closeAll  context.CancelFunc
	calls     sync.WaitGroup // in-flight calls of every instance
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex               // guards the fields below
	closed   bool                     // set by Close; Start and calls refuse afterwards
	modules  map[string]*compiled     // by sha256 of the module bytes
	runtimes map[string]*runtimeGroup // live runtimes by type@version
	stats    Stats                    // counters, see Stats
}

// compiled is one module compiled once for every runtime that runs the same
// bytes; it is closed when the last runtime using it is.
type compiled struct {
	done chan struct{} // closed once mod or err is set
	mod  wazero.CompiledModule
	err  error
	refs int // runtime groups holding it; guarded by Backend.mu
}

// runtimeGroup is every instance of one type@version: they share the
// compiled module and the MaxWorkers bound.
type runtimeGroup struct {
	spec    launchSpec
	mod     *compiled
	slots   chan struct{} // one token per running instance, cap MaxWorkers
	holders int           // live instances; guarded by Backend.mu
	// base is the part of every call's module configuration that does not
	// change between calls (name, arguments, environment, clocks,
	// randomness), built once: each wazero With… copies the whole
	// configuration, and building it all per call was a measurable part of
	// a call to a small module (BENCHMARKS.md, the C guest).
	base wazero.ModuleConfig
}

// New returns a Backend with the given configuration, or an error wrapping
// ErrInvalidConfig naming the fields that are invalid, or ErrCompile when
// the compilation cache directory cannot be used. The Backend owns an
// embedded runtime: Close it.
func New(cfg Config) (*Backend, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if cfg.DefaultMaxWorkers < 0 {
		bad("DefaultMaxWorkers is negative")
	}
	if cfg.MemoryLimitPages > MaxMemoryLimitPages {
		bad("MemoryLimitPages %d is above %d (4 GiB)", cfg.MemoryLimitPages, MaxMemoryLimitPages)
	}
	if cfg.ExecuteTimeout < 0 {
		bad("ExecuteTimeout is negative")
	}
	if cfg.MaxResponseBytes < 0 {
		bad("MaxResponseBytes is negative")
	}
	if cfg.StderrTailBytes < 0 {
		bad("StderrTailBytes is negative")
	}
	if cfg.MaxModuleBytes < 0 {
		bad("MaxModuleBytes is negative")
	}
	if cfg.CompilationCacheDir != "" && !filepath.IsAbs(cfg.CompilationCacheDir) {
		bad("CompilationCacheDir %q is not absolute", cfg.CompilationCacheDir)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	if cfg.DefaultMaxWorkers == 0 {
		cfg.DefaultMaxWorkers = DefaultMaxWorkers
	}
	if cfg.MemoryLimitPages == 0 {
		cfg.MemoryLimitPages = DefaultMemoryLimitPages
	}
	if cfg.ExecuteTimeout == 0 {
		cfg.ExecuteTimeout = DefaultExecuteTimeout
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.StderrTailBytes == 0 {
		cfg.StderrTailBytes = DefaultStderrTailBytes
	}
	if cfg.MaxModuleBytes == 0 {
		cfg.MaxModuleBytes = DefaultMaxModuleBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	var cache wazero.CompilationCache
	if cfg.CompilationCacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CompilationCacheDir)
		if err != nil {
			return nil, fmt.Errorf("%w: compilation cache directory %s: %w", ErrCompile, cfg.CompilationCacheDir, err)
		}
		cache = c
	} else {
		cache = wazero.NewCompilationCache()
	}
	// The runtime is this Backend's own: closing it closes nothing that
	// another Backend uses, and no wazero state is process-global.
	rcfg := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithMemoryLimitPages(cfg.MemoryLimitPages).
		WithCloseOnContextDone(true)
	bg := context.Background()
	rt := wazero.NewRuntimeWithConfig(bg, rcfg)
	if _, err := wasi_snapshot_preview1.Instantiate(bg, rt); err != nil {
		rt.Close(bg)
		cache.Close(bg)
		return nil, fmt.Errorf("wasm: instantiating WASI preview 1: %w", err)
	}
	closeCtx, closeAll := context.WithCancel(bg)
	mem := newMemoryPool()
	return &Backend{
		cfg: cfg, log: log, rt: rt, cache: cache, values: allocatorValues(mem), mem: mem,
		closeCtx: closeCtx, closeAll: closeAll,
		modules: make(map[string]*compiled), runtimes: make(map[string]*runtimeGroup),
	}, nil
}

// BackendName returns "wasm".
func (b *Backend) BackendName() string { return capabilityruntime.RuntimeKindWasm }

// Stats returns the Backend's counters now.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// launchSpec is a validated BackendSpec and the module it names.
type launchSpec struct {
	typ, version string
	module       string // absolute path
	rootDir      string
	maxWorkers   int
	digest       string // lower-case hex sha256 of the module's bytes
}

func (s launchSpec) name() string { return s.typ + "@" + s.version }

// Start returns an instance of spec. Every Start of the same type@version
// shares one compiled module and one MaxWorkers bound, counted by holders;
// a Start whose spec differs from the live runtime's (module, root,
// effective MaxWorkers, or the module's bytes) is refused with
// ErrSpecConflict.
//
// spec.RootDir must be an installed runtime directory: its runtime.json
// must be valid, name spec's type and version and runtime kind "wasm", and
// have a wasm32-wasi platform entry whose artifact is the entrypoint and
// whose sha256 is given. The module is read once, at most
// Config.MaxModuleBytes, and its sha256 checked against that entry before
// anything is compiled (a mismatch is a *ChecksumError); the bytes that
// were checked are the bytes compiled. A module this Backend already
// compiled is not compiled again; one compiled by any Backend with the
// same Config.CompilationCacheDir is loaded from there. ctx bounds waiting
// for another Start's compilation of the same module; a compilation itself
// runs to its end. spec.Config is not read by this backend.
func (b *Backend) Start(ctx context.Context, spec capabilityruntime.BackendSpec) (capabilityruntime.BackendInstance, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ls, code, err := b.validate(spec)
	if err != nil {
		return nil, err
	}
	c, err := b.compile(ctx, ls, code)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		b.releaseLocked(c)
		return nil, ErrClosed
	}
	g := b.runtimes[ls.name()]
	switch {
	case g == nil:
		g = &runtimeGroup{spec: ls, mod: c, slots: make(chan struct{}, ls.maxWorkers), base: baseModuleConfig(ls)}
		b.runtimes[ls.name()] = g
	case g.spec != ls:
		b.releaseLocked(c)
		return nil, fmt.Errorf("%w: %s is running %s (root %q, %d workers, sha256 %s), asked for %s (root %q, %d workers, sha256 %s)",
			ErrSpecConflict, ls.name(), g.spec.module, g.spec.rootDir, g.spec.maxWorkers, g.spec.digest,
			ls.module, ls.rootDir, ls.maxWorkers, ls.digest)
	default:
		b.releaseLocked(c) // the group holds its own reference
	}
	g.holders++
	ctxInst, cancel := context.WithCancel(b.closeCtx)
	return &instance{b: b, g: g, ctx: ctxInst, cancel: cancel}, nil
}

// validate checks spec, reads its manifest and module, and verifies the
// module's checksum. It returns the module's bytes.
func (b *Backend) validate(spec capabilityruntime.BackendSpec) (launchSpec, []byte, error) {
	fail := func(format string, args ...any) (launchSpec, []byte, error) {
		return launchSpec{}, nil, fmt.Errorf("%w: %s@%s: %w", ErrInvalidSpec, spec.Type, spec.Version, fmt.Errorf(format, args...))
	}
	if spec.Type == "" || spec.Version == "" {
		return fail("type and version are required")
	}
	if p := spec.Protocol; p != "" && p != capabilityruntime.ProtocolJSONV1 {
		return fail("unsupported protocol %q (a wasm runtime speaks %s)", p, capabilityruntime.ProtocolJSONV1)
	}
	if spec.MaxWorkers < 0 {
		return fail("MaxWorkers is negative")
	}
	if spec.RootDir == "" || !filepath.IsAbs(spec.RootDir) {
		return fail("RootDir %q is not an absolute path; the wasm backend reads the installed %s there", spec.RootDir, capabilityruntime.ManifestFile)
	}
	entry := spec.Entrypoint
	if entry == "" {
		return fail("no entrypoint")
	}
	if !filepath.IsAbs(entry) {
		r := capabilityruntime.ResolvedCapabilityRuntime{RootDir: spec.RootDir, Runtime: capabilityruntime.RuntimeInfo{Entrypoint: entry}}
		if entry = r.EntrypointPath(); entry == "" {
			return fail("entrypoint %q climbs out of RootDir", spec.Entrypoint)
		}
	}
	entry = filepath.Clean(entry)

	manifestPath := filepath.Join(spec.RootDir, capabilityruntime.ManifestFile)
	raw, err := readBounded(manifestPath, 1<<20)
	if err != nil {
		return fail("manifest: %w", err)
	}
	var m capabilityruntime.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fail("manifest %s: %w", manifestPath, err)
	}
	if err := m.Validate(); err != nil {
		return fail("manifest %s: %w", manifestPath, err)
	}
	if n, _ := capabilityruntime.NormalizeType(spec.Type); m.Metadata.Name != n || m.Metadata.Version != spec.Version {
		return fail("manifest %s is for %s@%s", manifestPath, m.Metadata.Name, m.Metadata.Version)
	}
	if m.Runtime.Type != capabilityruntime.RuntimeKindWasm {
		return fail("manifest %s declares runtime.type %q, not %q", manifestPath, m.Runtime.Type, capabilityruntime.RuntimeKindWasm)
	}
	plat, ok := m.Platforms[capabilityruntime.PlatformWasm]
	if !ok {
		return fail("manifest %s has no platforms.%s entry", manifestPath, capabilityruntime.PlatformWasm)
	}
	if filepath.Join(spec.RootDir, filepath.FromSlash(plat.Artifact)) != entry {
		return fail("platforms.%s.artifact %q is not the entrypoint %s", capabilityruntime.PlatformWasm, plat.Artifact, entry)
	}
	if plat.SHA256 == "" {
		return fail("platforms.%s has no sha256; the wasm backend runs only modules it can verify", capabilityruntime.PlatformWasm)
	}
	want := strings.ToLower(strings.TrimPrefix(plat.SHA256, "sha256:"))

	code, err := readBounded(entry, b.cfg.MaxModuleBytes)
	if err != nil {
		return fail("module: %w", err)
	}
	sum := sha256.Sum256(code)
	ls := launchSpec{
		typ: spec.Type, version: spec.Version, module: entry, rootDir: spec.RootDir,
		maxWorkers: spec.MaxWorkers, digest: hex.EncodeToString(sum[:]),
	}
	if ls.maxWorkers == 0 {
		ls.maxWorkers = b.cfg.DefaultMaxWorkers
	}
	if ls.digest != want {
		return launchSpec{}, nil, &ChecksumError{Runtime: ls.name(), Module: entry, Want: want, Got: ls.digest}
	}
	return ls, code, nil
}

// readBounded reads a regular file of at most max bytes.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (mode %v)", path, fi.Mode())
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if n > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return buf.Bytes(), nil
}

// compile returns the compiled module of code, compiling it once per
// Backend: concurrent Starts of the same bytes wait for the first. The
// caller holds one reference on the result.
func (b *Backend) compile(ctx context.Context, ls launchSpec, code []byte) (*compiled, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	c := b.modules[ls.digest]
	if c != nil {
		c.refs++
		b.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			b.release(c)
			return nil, context.Cause(ctx)
		}
		if c.err != nil {
			b.release(c)
			return nil, c.err
		}
		return c, nil
	}
	c = &compiled{done: make(chan struct{}), refs: 1}
	b.modules[ls.digest] = c
	b.stats.Compiles++
	b.mu.Unlock()

	began := time.Now()
	mod, err := b.rt.CompileModule(context.Background(), mergeDataSegments(code))
	if err == nil {
		if err = checkImports(mod); err != nil {
			_ = mod.Close(context.Background())
		}
	}
	b.mu.Lock()
	if err != nil {
		c.err = fmt.Errorf("%w: %s: module %s: %w", ErrCompile, ls.name(), ls.module, err)
		delete(b.modules, ls.digest) // a later Start tries again
	} else {
		c.mod = mod
		b.log.Debug("wasm: module compiled", "runtime", ls.name(), "sha256", ls.digest, "took", time.Since(began))
	}
	close(c.done)
	b.mu.Unlock()
	if c.err != nil {
		b.release(c)
		return nil, c.err
	}
	return c, nil
}

// release drops one reference on c and closes its code after the last.
func (b *Backend) release(c *compiled) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.releaseLocked(c)
}

func (b *Backend) releaseLocked(c *compiled) {
	c.refs--
	if c.refs > 0 {
		return
	}
	for d, m := range b.modules {
		if m == c {
			delete(b.modules, d)
		}
	}
	if c.mod != nil {
		// Closing compiled code only frees it; it cannot fail in a way
		// that leaves anything behind.
		_ = c.mod.Close(context.Background())
	}
}

// dropHolder is called by an instance's first Close: the group goes away
// with its last holder, and with it the group's reference on the module.
func (b *Backend) dropHolder(g *runtimeGroup) {
	b.mu.Lock()
	defer b.mu.Unlock()
	g.holders--
	if g.holders > 0 {
		return
	}
	if b.runtimes[g.spec.name()] == g {
		delete(b.runtimes, g.spec.name())
	}
	if !b.closed { // Close frees every module at once
		b.releaseLocked(g.mod)
	}
}

// Close stops every call in flight on every instance (they fail with
// ErrClosed), waits for them, and frees the embedded runtime and the
// in-memory compiled code; the compilation cache directory stays. Later
// Starts and calls fail with ErrClosed. It is safe to call more than once;
// every call returns the first one's result. Calls end promptly once
// stopped (a module is stopped at its next function entry or loop
// iteration, and a sleep is cut short), so ctx bounds only freeing the
// runtime.
func (b *Backend) Close(ctx context.Context) error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.closeAll()
		b.calls.Wait()
		b.mu.Lock()
		clear(b.modules)
		clear(b.runtimes)
		b.mu.Unlock()
		b.closeErr = errors.Join(b.rt.Close(ctx), b.cache.Close(ctx))
		b.mem.close()
		if b.closeErr != nil {
			b.closeErr = fmt.Errorf("wasm: closing the runtime: %w", b.closeErr)
		}
	})
	return b.closeErr
}

// begin admits one call, or answers false once the Backend is closed.
func (b *Backend) begin() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.calls.Add(1)
	return true
}

func (b *Backend) running(delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Running += delta
	if delta > 0 {
		b.stats.Calls++
		b.stats.PeakRunning = max(b.stats.PeakRunning, b.stats.Running)
	}
}

// checkImports refuses a module that imports anything but WASI preview 1
// functions: nothing else is provided, and instantiating it would fail at
// every call instead of once, here.
func checkImports(mod wazero.CompiledModule) error {
	for _, f := range mod.ImportedFunctions() {
		if m, n, _ := f.Import(); m != wasi_snapshot_preview1.ModuleName {
			return fmt.Errorf("it imports %s.%s; only %s functions are provided", m, n, wasi_snapshot_preview1.ModuleName)
		}
	}
	for _, m := range mod.ImportedMemories() {
		mn, n, _ := m.Import()
		return fmt.Errorf("it imports the memory %s.%s; a module must define its own", mn, n)
	}
	return nil
}
