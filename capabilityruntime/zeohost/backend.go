package zeohost

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Kind is the runtime kind a Registry dispatches to this backend
// (Backend.BackendName). It is this module's extension of the contract: no
// runtime.json declares it (capabilityruntime.SupportedRuntimeKinds does
// not list it, and Manifest.Validate refuses it), because a ZEO provider is
// not a capability runtime package; see doc/capabilityruntime.md, “The
// zeohost backend”.
const Kind = "zeohost"

// Protocol is the protocol this backend speaks with its hosts: the ZEO
// runtime host protocol, version 1 (doc/protocol.md). The name is this
// module's extension of the contract, which knows only ProtocolV1 and
// ProtocolJSONV1; an empty BackendSpec.Protocol means it.
const Protocol = "zeo/runtime-host-v1"

// DefaultCloseGrace is Config.CloseGrace when it is zero.
const DefaultCloseGrace = 10 * time.Second

// Config configures a Backend. New validates and copies it. It is the
// embedder's: what it names (the ledger, the Authority, the Dispatcher,
// the grants, the launcher's containment) is never taken from a
// BackendSpec.
type Config struct {
	// Supervisor configures the one Supervisor every instance of the
	// Backend runs through (doc/design.md, “One Supervisor per
	// controller”): Ledger, Authority, Dispatcher, Reserver, Grants,
	// HostPythonVersion, SeatID, RuntimeBindingID, Workspace, the
	// timeouts, the controller lease and Warm are used as given. Launcher,
	// Zygote, Environments, Provider and Providers must be unset: the
	// Backend starts each provider binding from the environment its
	// BackendSpec names (Launch), and each Execute names its binding.
	Supervisor supervise.Config
	// Launch is the template of every provider environment's launcher:
	// Args (e.g. "-m", "zeo_core.adapters.runtime_host" for a python
	// interpreter), Env, Verifier, Grace, Containment, User and the rest
	// are used as given; Interpreter must be empty, as each BackendSpec's
	// Entrypoint gives it. An empty Dir means each BackendSpec's RootDir.
	Launch launch.Config
	// CloseGrace is how long an instance's Close waits, once its context
	// has ended and the calls in flight were cancelled (their hosts
	// stopped, as at a deadline), for those calls to record their outcome
	// and return. Zero means DefaultCloseGrace.
	CloseGrace time.Duration
}

// Backend runs ZEO capability providers as capability runtimes of kind
// Kind, through one Supervisor. It is safe for concurrent use. The caller
// closes it (Close, or Registry.CloseBackends) after its instances.
type Backend struct {
	cfg Config
	sup *supervise.Supervisor

	mu     sync.Mutex // guards envs, closed
	envs   map[bindingKey]*environment
	closed bool
}

// environment is one admitted binding's provider environment, shared by
// every live instance of the binding.
type environment struct {
	launch   launch.Config // the template with Interpreter and Dir set
	launcher *launch.Launcher
	holders  int
}

// New validates cfg and returns a Backend with its Supervisor. Errors wrap
// ErrInvalidConfig, or supervise.ErrInvalidConfig for the Supervisor's
// own settings.
func New(cfg Config) (*Backend, error) {
	var errs []error
	s := cfg.Supervisor
	if s.Launcher != nil || s.Zygote != nil || s.Environments != nil {
		errs = append(errs, errors.New("Supervisor.Launcher, Zygote and Environments must be unset: the Backend launches each binding from its BackendSpec's environment (Config.Launch)"))
	}
	if s.Providers != nil || !reflect.ValueOf(s.Provider).IsZero() {
		errs = append(errs, errors.New("Supervisor.Provider and Providers must be unset: each instance admits the binding its BackendSpec carries"))
	}
	if cfg.Launch.Interpreter != "" {
		errs = append(errs, errors.New("Launch.Interpreter must be empty: each BackendSpec's Entrypoint is its provider environment's interpreter"))
	}
	if cfg.CloseGrace < 0 {
		errs = append(errs, errors.New("CloseGrace is negative"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	if cfg.CloseGrace == 0 {
		cfg.CloseGrace = DefaultCloseGrace
	}
	b := &Backend{cfg: cfg, envs: map[bindingKey]*environment{}}
	s.Environments = b.environment
	sup, err := supervise.New(s)
	if err != nil {
		return nil, fmt.Errorf("zeohost: %w", err)
	}
	b.sup = sup
	return b, nil
}

// BackendName returns Kind.
func (b *Backend) BackendName() string { return Kind }

// Supervisor returns the Backend's Supervisor, for what the contract has no
// words for: Cancel, Resolve (an effect needing reconciliation), Recover,
// Artifact. The Backend owns it; do not Close it.
func (b *Backend) Supervisor() *supervise.Supervisor { return b.sup }

// environment is the Supervisor's Environments port: the launch config of
// a binding some live instance admitted.
func (b *Backend) environment(pb manifest.ProviderBinding) (launch.Config, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.envs[keyOf(pb)]; e != nil {
		return e.launch, nil
	}
	return launch.Config{}, fmt.Errorf("zeohost: provider %s %s generation %d has no live instance: Start one", pb.Distribution, pb.Version, pb.Generation)
}

// Start admits the provider binding spec.Config carries (see the package
// documentation, “Starting”): it checks the spec, the binding (as the
// Supervisor and the host would) and the provider environment, runs the
// host's doctor on the binding, and returns an instance that runs it. ctx
// bounds the doctor.
func (b *Backend) Start(ctx context.Context, spec capabilityruntime.BackendSpec) (capabilityruntime.BackendInstance, error) {
	is, err := parseSpec(spec, b.cfg.Launch.Dir)
	if err != nil {
		return nil, err
	}
	if err := manifest.ValidateBinding(is.binding); err != nil {
		return nil, fmt.Errorf("%w %s@%s: Config %q: %w", ErrInvalidSpec, spec.Type, spec.Version, ConfigBinding, err)
	}
	if v := b.cfg.Supervisor.HostPythonVersion; v != "" && v != is.binding.PythonVersion {
		return nil, fmt.Errorf("%w %s@%s: the binding names python_version %q but the hosts' interpreter is %q: use the binding made for this interpreter",
			ErrInvalidSpec, spec.Type, spec.Version, is.binding.PythonVersion, v)
	}
	lc := b.cfg.Launch
	lc.Interpreter, lc.Dir = is.interpreter, is.dir
	if lc.Logger == nil {
		lc.Logger = b.cfg.Supervisor.Logger
	}
	k := keyOf(is.binding)
	env, err := b.hold(k, lc)
	if err != nil {
		return nil, err
	}
	if _, err := discovery.Doctor(ctx, env.launcher, is.binding); err != nil {
		b.release(k)
		return nil, fmt.Errorf("%w: %s@%s (%s %s): %w", ErrDoctor, spec.Type, spec.Version, is.binding.Distribution, is.binding.Version, err)
	}
	return newInstance(b, is, k, env), nil
}

// hold counts one instance of the binding k in, making its environment's
// launcher on first use.
func (b *Backend) hold(k bindingKey, lc launch.Config) (*environment, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrClosed
	}
	if e := b.envs[k]; e != nil {
		if e.launch.Interpreter != lc.Interpreter || e.launch.Dir != lc.Dir {
			return nil, fmt.Errorf("%w: %s %s is live with interpreter %s in %s, this spec names %s in %s",
				ErrSpecConflict, k.distribution, k.version, e.launch.Interpreter, e.launch.Dir, lc.Interpreter, lc.Dir)
		}
		e.holders++
		return e, nil
	}
	l, err := launch.New(lc)
	if err != nil {
		return nil, fmt.Errorf("%w: the provider environment of %s %s cannot launch: %w", ErrInvalidSpec, k.distribution, k.version, err)
	}
	e := &environment{launch: lc, launcher: l, holders: 1}
	b.envs[k] = e
	return e, nil
}

// release counts one instance of k out; the last one forgets its
// environment (the Supervisor closes its starter once idle).
func (b *Backend) release(k bindingKey) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.envs[k]; e != nil {
		if e.holders--; e.holders == 0 {
			delete(b.envs, k)
		}
	}
}

// Close closes the Supervisor (supervise.Supervisor.Close): the calls in
// flight drain within ctx's bound and are then cancelled, every starter is
// closed, and the controller's lease is released only when no write can
// still land (otherwise the error wraps supervise.ErrDrainTimeout). New
// Starts and every instance's Execute then fail with ErrClosed. The ledger
// stays open: it is the embedder's. Close may be called more than once.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if err := b.sup.Close(ctx); err != nil {
		return fmt.Errorf("zeohost: closing the supervisor: %w", err)
	}
	return nil
}

func (b *Backend) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}
