package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// Defaults of Config (and handler.Config.OutcomeTimeout), used when the
// field is zero.
const (
	// DefaultOperationTimeout is the deadline of a new operation whose
	// Call names none, counted from its creation.
	DefaultOperationTimeout = 5 * time.Minute
	// DefaultCancelGrace is how long, after Cancel, a running host has to
	// end by itself (it is answered cancelled at its next request) before
	// its process group is stopped: SIGTERM, then SIGKILL after the
	// launcher's grace.
	DefaultCancelGrace = 2 * time.Second
	// DefaultOutcomeTimeout bounds one ledger write that records an
	// effect's outcome, when Config.OutcomeTimeout or
	// handler.Config.OutcomeTimeout is zero.
	DefaultOutcomeTimeout = handler.DefaultOutcomeTimeout
	// DefaultLeaseTTL is the controller lease's time to live when
	// Config.LeaseTTL is zero. The lease is renewed every third of it.
	DefaultLeaseTTL = 15 * time.Second
	// DefaultStarterIdle is how long a starter (a launcher, and its fork
	// server when warm) is kept without invocations before it is closed,
	// when Config.StarterIdle is zero.
	DefaultStarterIdle = 5 * time.Minute
)

// Config configures a Supervisor. New validates and copies it.
type Config struct {
	// Ledger is the durable truth. Required.
	Ledger ledger.Ledger
	// Launcher starts the hosts of every provider environment when
	// Environments is nil; then it is required.
	Launcher *launch.Launcher
	// Environments, when set, gives the launch.Config of each binding's
	// provider environment: the Supervisor makes one starter (a Launcher,
	// and a fork server when Warm is set) per distinct environment on first
	// use, and closes it when it has been idle for StarterIdle, or at
	// Close. Launcher and Zygote must then be nil.
	Environments Environments
	// Zygote, when set, starts every host warm from this one fork server,
	// which must have been started from Launcher (Launcher.StartZygote);
	// the Supervisor never closes it. It excludes Warm and Environments.
	Zygote *launch.Zygote
	// Warm, when set, makes each starter start hosts warm: a fork server
	// (Launcher.StartZygote with this config, its Provider set to the
	// binding) is started for the environment on first use and closed with
	// the starter. A fork server that cannot start is logged with why, and
	// that environment launches cold. Nil means cold launches.
	Warm *launch.ZygoteConfig
	// ProviderWarm, when set, makes starters launch hosts provider-warm: a
	// fork server per provider binding and tenant, which activated that
	// generation once (see ProviderWarm). It excludes Zygote. Nil means
	// none.
	ProviderWarm *ProviderWarm
	// StarterIdle is how long a starter without invocations is kept; zero
	// means DefaultStarterIdle.
	StarterIdle time.Duration
	// Provider, unless it is the zero value, is the binding of every Call
	// that names none (neither Call.Binding nor Call.Provider): a
	// Supervisor of one provider. It must be valid
	// (manifest.ValidateBinding).
	Provider manifest.ProviderBinding
	// Providers resolves the admitted providers Calls name by
	// Call.Provider and Call.Generation, e.g. a catalogue.Catalogue. Nil
	// means Calls must carry their binding (Call.Binding) or use Provider.
	Providers Providers
	// HostPythonVersion is the version of the interpreter the hosts run
	// (platform.python_version(), e.g. "3.14.0"); a binding whose
	// python_version differs, which the host would refuse after bootstrap
	// with a bare protocol_error, is refused before launch. Required unless
	// SkipPythonVersionCheck is set.
	HostPythonVersion string
	// SkipPythonVersionCheck, when true, leaves the python_version check to
	// the host: a mismatch is then found only after launch, as a
	// protocol_error. It is for an embedder that cannot ask the
	// interpreter; it and HostPythonVersion exclude each other. False (the
	// zero value) means HostPythonVersion is required.
	SkipPythonVersionCheck bool
	// Authority decides admissions and new effects; nil means AllowAll.
	Authority port.Authority
	// Dispatcher consumes authorized effects; nil means NoEffects.
	Dispatcher port.Dispatcher
	// Reserver takes, re-checks and releases each attempt's resource
	// reservations; nil means none are taken.
	Reserver port.Reserver
	// Grants are what capabilities may use besides the effect port.
	Grants port.Grants
	// SeatID and RuntimeBindingID fill the AttemptBinding when a Call
	// leaves them empty. Required identifiers.
	SeatID           string
	RuntimeBindingID string
	// Workspace is the provider's work directory, as the host receives it.
	// Required identifier.
	Workspace string
	// RPCTimeout and MaxMessageBytes bound each exchange; zero means the
	// protocol defaults (5 s, 1 MiB).
	RPCTimeout      time.Duration
	MaxMessageBytes int
	// OperationTimeout is the deadline of a new operation whose Call names
	// none. Zero means DefaultOperationTimeout.
	OperationTimeout time.Duration
	// CancelGrace is the time a host has after Cancel before its process
	// group is stopped. Zero means DefaultCancelGrace.
	CancelGrace time.Duration
	// OutcomeTimeout bounds each ledger write that records an outcome; zero
	// means DefaultOutcomeTimeout.
	OutcomeTimeout time.Duration
	// ControllerID is the id this Supervisor registers its controller
	// lease under, and every attempt it launches records (see
	// ledger.Lease). It must be unique to the process: empty means one is
	// made from the host name, the process id and random bytes.
	ControllerID string
	// LeaseTTL is the controller lease's time to live; it is renewed every
	// third of it, and once a renewal has not landed for LeaseTTL the
	// controller answers none of its hosts allowed (fail-stop). Zero means
	// DefaultLeaseTTL.
	LeaseTTL time.Duration
	// TakeoverInterval, when positive, runs Recover that often in the
	// background: the attempts of controllers whose lease expired are
	// fenced off and their effects listed for reconciliation. Zero means
	// only explicit Recover calls.
	TakeoverInterval time.Duration
	// Observer, when set, receives every Event of every operation. It is
	// called synchronously from the goroutines running Invoke; it must not
	// block, and must be safe for concurrent use.
	Observer func(Event)
	// Logger receives debug records per step and warnings. Nil means none.
	// Their attributes are named as the spans' (doc/design.md,
	// “Telemetry”).
	Logger *slog.Logger
	// TracerProvider, when set, receives a span per Invoke (zeo.invoke),
	// attempt, IPC method, ledger write and dispatch, with the ids as
	// attributes and never an argument (doc/design.md, “Telemetry”). Nil
	// means no spans; the global provider is never read.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, receives the zeo.runtime.* metrics:
	// invocations and their durations, effects, budget used, ledger write
	// latency, warm and cold starts, lease renewals and takeovers
	// (doc/design.md, “Telemetry”). Nil means no metrics; the global
	// provider is never read.
	MeterProvider metric.MeterProvider
}

// Supervisor runs capability operations end to end on durable truth. It is
// safe for concurrent use: many Invoke calls may run at once, on the same
// operation or on different ones (a newer attempt of an operation fences
// the older one off).
type Supervisor struct {
	cfg       Config
	log       *slog.Logger
	validator *manifest.Validator
	def       *provider // Config.Provider, checked; nil when not set
	providers providerCache
	starters  starters

	ctl        *controller
	tel        *telemetry.T   // nil when Config names no provider
	takeoverWG sync.WaitGroup // the takeover loop

	mu      sync.Mutex // guards running, flights, closing
	running map[opKey]map[*run]struct{}
	flights map[opKey]*flight
	closing bool
	calls   sync.WaitGroup // Invoke calls in flight
}

type opKey struct {
	scope ledger.Scope
	id    string
}

// run is one Invoke in flight, as Cancel reaches it.
type run struct {
	cancelled chan struct{}
	once      sync.Once
	stop      context.CancelFunc // stops the launch: SIGTERM, SIGKILL after grace
	timer     *time.Timer        // guarded by once
}

// New validates cfg and returns a Supervisor. Errors wrap ErrInvalidConfig
// and list every problem.
func New(cfg Config) (*Supervisor, error) {
	c := cfg
	c.Grants = port.Grants{
		Credentials:    slices.Clone(cfg.Grants.Credentials),
		Binaries:       slices.Clone(cfg.Grants.Binaries),
		NetworkHosts:   slices.Clone(cfg.Grants.NetworkHosts),
		NetworkAllowed: cfg.Grants.NetworkAllowed,
	}
	if c.OperationTimeout == 0 {
		c.OperationTimeout = DefaultOperationTimeout
	}
	if c.CancelGrace == 0 {
		c.CancelGrace = DefaultCancelGrace
	}
	if c.OutcomeTimeout == 0 {
		c.OutcomeTimeout = DefaultOutcomeTimeout
	}
	if c.StarterIdle == 0 {
		c.StarterIdle = DefaultStarterIdle
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Warm != nil {
		w := *cfg.Warm
		c.Warm = &w
	}
	s := &Supervisor{cfg: c, log: c.Logger, validator: &manifest.Validator{},
		running: map[opKey]map[*run]struct{}{}, flights: map[opKey]*flight{}}
	s.providers = providerCache{idle: c.StarterIdle, m: map[bindingKey]*provider{}}
	s.starters = starters{s: s, m: map[string]*starter{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	var err error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Ledger == nil {
		add("Ledger is nil")
	}
	switch {
	case c.Environments != nil && (c.Launcher != nil || c.Zygote != nil):
		add("Environments excludes Launcher and Zygote: give one way to start hosts")
	case c.Environments == nil && c.Launcher == nil:
		add("Launcher is nil and Environments is not set: give one way to start hosts")
	case c.Zygote != nil && c.Zygote.Launcher() != c.Launcher:
		add("Zygote was started from another Launcher")
	case c.Zygote != nil && c.Warm != nil:
		add("Zygote and Warm are both set: give one")
	case c.Zygote != nil && c.ProviderWarm != nil:
		add("Zygote and ProviderWarm are both set: provider-warm servers are the Supervisor's own")
	}
	if c.ProviderWarm != nil {
		pw := *c.ProviderWarm
		pw.Hosts = slices.Clone(pw.Hosts)
		for _, bad := range pw.validate() {
			add("%s", bad)
		}
		c.ProviderWarm = &pw
	}
	if c.Zygote != nil {
		s.starters.fixed = &starter{launcher: c.Launcher, zygote: c.Zygote, fixed: true}
	}
	if c.ControllerID == "" {
		id, err := newControllerID()
		if err != nil {
			return nil, err
		}
		c.ControllerID = id
	} else if !ipc.ValidIdentifier(c.ControllerID) {
		add("ControllerID must be 1..%d code points", ipc.MaxIdentifierRunes)
	}
	if err := ledger.ValidateTTL(c.LeaseTTL); err != nil {
		add("LeaseTTL: %w", err)
	}
	if c.TakeoverInterval < 0 {
		add("TakeoverInterval must not be negative")
	}
	s.ctl = &controller{s: s, id: c.ControllerID, ttl: c.LeaseTTL}
	if s.tel, err = telemetry.New(c.TracerProvider, c.MeterProvider, errorClasses); err != nil {
		add("MeterProvider: %w", err)
	}
	c.Ledger = telemetry.Observe(c.Ledger, s.tel)
	switch {
	case c.HostPythonVersion == "" && !c.SkipPythonVersionCheck:
		add("HostPythonVersion is empty: set it to the version of the hosts' interpreter (python -c 'import platform; print(platform.python_version())'), or set SkipPythonVersionCheck to leave the check to the host, which refuses a mismatch only after launch (protocol_error)")
	case c.HostPythonVersion != "" && c.SkipPythonVersionCheck:
		add("HostPythonVersion %q and SkipPythonVersionCheck are both set: give one", c.HostPythonVersion)
	}
	if !reflect.ValueOf(c.Provider).IsZero() {
		if p, err := s.checkBinding(c.Provider); err != nil {
			add("Provider: %w", err)
		} else {
			s.def = p
		}
	}
	for _, f := range []struct{ name, v string }{{"SeatID", c.SeatID}, {"RuntimeBindingID", c.RuntimeBindingID}, {"Workspace", c.Workspace}} {
		if !ipc.ValidIdentifier(f.v) {
			add("%s must be 1..%d code points", f.name, ipc.MaxIdentifierRunes)
		}
	}
	if c.RPCTimeout < 0 || c.RPCTimeout > ipc.MaxRPCTimeout || (c.RPCTimeout > 0 && c.RPCTimeout < time.Millisecond) {
		add("RPCTimeout %v is outside [1ms, %v]", c.RPCTimeout, ipc.MaxRPCTimeout)
	}
	if c.MaxMessageBytes != 0 && (c.MaxMessageBytes < ipc.MinMessageBytes || c.MaxMessageBytes > ipc.MaxMessageBytes) {
		add("MaxMessageBytes %d is outside [%d, %d]", c.MaxMessageBytes, ipc.MinMessageBytes, ipc.MaxMessageBytes)
	}
	if c.OperationTimeout < 0 || c.CancelGrace < 0 || c.OutcomeTimeout < 0 || c.StarterIdle < 0 {
		add("OperationTimeout, CancelGrace, OutcomeTimeout and StarterIdle must not be negative")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	s.cfg = c
	return s, nil
}

// Call is one capability operation to run or continue.
type Call struct {
	// Scope is the organization and project the operation belongs to.
	Scope ledger.Scope
	// OperationID is the durable identity of the operation: calling Invoke
	// again with the same id continues it (a new attempt), or returns its
	// accepted result without launching.
	OperationID string
	// CapabilityID is the exact canonical id, e.g. "example.echo@1.0.0".
	CapabilityID string
	// Binding, when set, is the exact provider binding to run. Otherwise
	// Provider and Generation name an admitted provider, resolved through
	// Config.Providers (Generation zero: the generation the operation is
	// pinned to, or the current one); with neither, Config.Provider runs.
	// An operation runs on one binding: a continuing call must resolve to
	// the binding it was recorded with (else ErrOperationMismatch).
	Binding    *manifest.ProviderBinding
	Provider   cataloguestore.ProviderKey
	Generation int64
	// Arguments are the request's arguments, sent to the host as given.
	// The request digest binds them as the provider's validation leaves
	// them: normalized and with the request schema's defaults materialized
	// (manifest.PrepareRequest).
	Arguments map[string]any
	// SeatID, RuntimeBindingID and PacketID complete the AttemptBinding;
	// empty SeatID and RuntimeBindingID take Config's, an empty PacketID
	// the operation id.
	SeatID, RuntimeBindingID, PacketID string
	// Deadline is the operation's deadline, for every attempt. Zero means
	// Config.OperationTimeout from creation. For an existing operation it
	// must be zero or the recorded deadline.
	Deadline time.Time
	// EffectBudget is the total number of distinct logical effects the
	// operation may authorize, across all attempts. For an existing
	// operation it must be zero or the recorded budget.
	EffectBudget int64
	// ReservationWait is how long the attempt may wait for a resource
	// reservation another attempt holds (Config.Reserver) before it is
	// answered refused without launching. Zero means no wait.
	ReservationWait time.Duration
}

func (c Call) validate() error {
	var errs []error
	if err := c.Scope.Validate(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ name, v string }{{"OperationID", c.OperationID}, {"CapabilityID", c.CapabilityID}} {
		if !ipc.ValidIdentifier(f.v) {
			errs = append(errs, fmt.Errorf("%s must be 1..%d code points", f.name, ipc.MaxIdentifierRunes))
		}
	}
	for _, f := range []struct{ name, v string }{{"SeatID", c.SeatID}, {"RuntimeBindingID", c.RuntimeBindingID}, {"PacketID", c.PacketID}} {
		if f.v != "" && !ipc.ValidIdentifier(f.v) {
			errs = append(errs, fmt.Errorf("%s must be empty or 1..%d code points", f.name, ipc.MaxIdentifierRunes))
		}
	}
	if c.EffectBudget < 0 {
		errs = append(errs, fmt.Errorf("EffectBudget %d is negative", c.EffectBudget))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidCall, errors.Join(errs...))
}

func (s *Supervisor) emit(ev Event) {
	if s.cfg.Observer != nil {
		if ev.Time.IsZero() {
			ev.Time = time.Now()
		}
		s.cfg.Observer(ev)
	}
}

// Invoke runs one capability operation: it continues the recorded
// operation or creates it, returns an accepted result without launching,
// or prepares a new attempt (a new fence, its LaunchContext and bootstrap
// id), launches the host while the ledger records the launch, serves the
// host with a Handler, judges what it left behind against the session and
// the ledger and records the attempt's outcome (see the package
// documentation, “Invoke”).
//
// The error is nil exactly when the Outcome's State is succeeded. Every
// other definite outcome is returned with an *OutcomeError wrapping the
// state's sentinel (ErrRefused, ErrWaitingApproval, ...). Failures before
// any outcome (an invalid Call, a ledger that cannot be reached, ctx done
// before launch) return a nil Outcome and an error that wraps the cause.
//
// ctx bounds the call; when it ends, the host is stopped as at its
// deadline, and the outcome is still recorded.
func (s *Supervisor) Invoke(ctx context.Context, c Call) (res *Outcome, err error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	ctx, tc := s.tel.Invoke(ctx, c.Scope, c.OperationID, c.CapabilityID, s.ctl.id)
	defer func() { tc.End(res.ended(), err) }()
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.calls.Done()
	p, err := s.resolve(ctx, c)
	if err != nil {
		var pe *PreflightError
		if errors.As(err, &pe) {
			o := &Outcome{Scope: c.Scope, OperationID: c.OperationID, State: launch.StateUnavailable, Reason: pe.Detail}
			return o.result(err)
		}
		return nil, err
	}
	o := &Outcome{Scope: c.Scope, OperationID: c.OperationID}
	m, prep, done := s.preflight(p, c, o)
	if done != nil {
		return o.result(done)
	}
	for {
		f, leader := s.join(c, prep.RequestDigest)
		if leader {
			res, err := s.invoke(ctx, c, p, m, prep, o)
			s.land(c, f, res, err, ctx.Err() != nil)
			return res, err
		}
		res, again, err := s.follow(ctx, f, prep.RequestDigest, o)
		if !again {
			return res, err
		}
	}
}

// invoke runs the attempts of one Invoke that leads its operation's
// flight in this process.
func (s *Supervisor) invoke(ctx context.Context, c Call, p *provider, m manifest.CapabilityManifest, prep manifest.Prepared, o *Outcome) (*Outcome, error) {
	for try := 1; ; try++ {
		view, recorded, err := s.operation(ctx, c, p, prep.RequestDigest)
		if err != nil {
			return nil, err
		}
		if recorded {
			op := view.Operation
			s.emit(Event{Kind: EventOperation, Scope: c.Scope, OperationID: c.OperationID, Operation: &op})
			if done, res, err := s.settled(view, o); done {
				return res, err
			}
		}
		if recorded {
			if res, err, busy := s.elsewhere(ctx, view, o); busy {
				return res, err
			}
		}
		a := &attempt{s: s, c: c, p: p, m: m, prep: prep, view: view, recorded: recorded, o: o}
		actx, sp := s.tel.Attempt(ctx)
		res, again, err := a.run(actx)
		sp.EndAttempt(a.fence.AttemptID, a.fence.Generation, string(a.o.State), err)
		if !again {
			return res, err
		}
		if try == maxLaunches {
			return nil, fmt.Errorf("supervise: operation %q: %d launches in a row lost their fencing generation to concurrent attempts: %w",
				c.OperationID, maxLaunches, err)
		}
	}
}

// elsewhere answers running, without launching, when the operation's
// current attempt is owned by another controller whose lease is live and
// has recorded no outcome: launching would fence off a live attempt.
func (s *Supervisor) elsewhere(ctx context.Context, view ledger.OperationView, o *Outcome) (*Outcome, error, bool) {
	op := view.Operation
	if op.CurrentAttemptID == "" || op.CurrentControllerID == "" || op.CurrentControllerID == s.ctl.id {
		return nil, nil, false
	}
	launched := false
	for _, b := range view.Bootstraps {
		launched = launched || (b.AttemptID == op.CurrentAttemptID && b.Generation == op.CurrentGeneration)
	}
	if !launched {
		// An attempt never launched (the empty attempt of a takeover):
		// nothing runs under it, whoever owns it.
		return nil, nil, false
	}
	evs, err := s.cfg.Ledger.Evidence(ctx, op.Scope, op.OperationID)
	if err != nil {
		return nil, fmt.Errorf("supervise: operation %q: reading its evidence: %w", op.OperationID, err), true
	}
	for _, e := range evs {
		if e.AttemptID == op.CurrentAttemptID {
			return nil, nil, false // that attempt ended
		}
	}
	leases, err := s.cfg.Ledger.Leases(ctx)
	if err != nil {
		return nil, fmt.Errorf("supervise: operation %q: reading controller leases: %w", op.OperationID, err), true
	}
	for _, l := range leases {
		if l.ControllerID == op.CurrentControllerID && l.Live {
			o.State = launch.StateRunning
			o.AttemptID, o.Generation = op.CurrentAttemptID, op.CurrentGeneration
			o.Reason = fmt.Sprintf("attempt %q of the operation is running under controller %q (lease live until %s): ask again with the same operation id for its outcome",
				op.CurrentAttemptID, l.ControllerID, l.Expires.UTC().Format(time.RFC3339Nano))
			return o, &OutcomeError{Outcome: o, Err: ErrRunning}, true
		}
	}
	return nil, nil, false
}

// maxLaunches bounds the launches one Invoke prepares when concurrent
// Invoke calls of the same operation keep taking the generation each one
// prepared its launch for.
const maxLaunches = 4

// operation returns the recorded operation for c (recorded), or the one
// its first attempt's launch will create, not yet recorded. A recorded
// operation must match c's capability, request and manifest; its deadline
// and budget apply unless c names others.
func (s *Supervisor) operation(ctx context.Context, c Call, p *provider, digest canon.Digest) (view ledger.OperationView, recorded bool, err error) {
	for try := 0; ; try++ {
		view, err := s.cfg.Ledger.Operation(ctx, c.Scope, c.OperationID)
		if err == nil {
			op := view.Operation
			switch {
			case op.State == ledger.OperationCancelled:
				// Cancelled, whatever this call asks: answered so.
			case op.CapabilityID != c.CapabilityID, op.RequestDigest != digest, op.ManifestDigest != p.binding.ManifestDigest:
				return view, true, fmt.Errorf("%w: operation %q is recorded for capability %s with request digest %s and manifest digest %s; this call has %s, %s, %s",
					ErrOperationMismatch, c.OperationID, op.CapabilityID, op.RequestDigest, op.ManifestDigest, c.CapabilityID, digest, p.binding.ManifestDigest)
			case c.EffectBudget != 0 && c.EffectBudget != op.EffectBudget:
				return view, true, fmt.Errorf("%w: operation %q is recorded with effect budget %d, this call names %d", ErrOperationMismatch, c.OperationID, op.EffectBudget, c.EffectBudget)
			case !c.Deadline.IsZero() && !c.Deadline.Equal(op.Deadline):
				return view, true, fmt.Errorf("%w: operation %q is recorded with deadline %s, this call names %s", ErrOperationMismatch, c.OperationID, op.Deadline, c.Deadline)
			}
			return view, true, nil
		}
		if !errors.Is(err, ledger.ErrNotFound) || try > 0 {
			return view, false, fmt.Errorf("supervise: operation %q: %w", c.OperationID, err)
		}
		dl := c.Deadline
		if dl.IsZero() {
			dl = time.Now().Add(s.cfg.OperationTimeout)
		}
		spec := ledger.OperationSpec{
			Scope: c.Scope, OperationID: c.OperationID, CapabilityID: c.CapabilityID, RequestDigest: digest,
			ManifestDigest: p.binding.ManifestDigest, EffectBudget: c.EffectBudget, Deadline: dl,
		}
		if time.Now().Before(dl) {
			// Its first attempt's launch records it (LaunchAttempt).
			return ledger.OperationView{Operation: ledger.Operation{
				Scope: spec.Scope, OperationID: spec.OperationID, CapabilityID: spec.CapabilityID,
				RequestDigest: spec.RequestDigest, ManifestDigest: spec.ManifestDigest, EffectBudget: spec.EffectBudget,
				Deadline: dl.UTC(), State: ledger.OperationOpen,
			}}, false, nil
		}
		// Born past its deadline: recorded as it is, and answered timed_out
		// without launching.
		_, err = s.cfg.Ledger.CreateOperation(ctx, spec)
		if err != nil && !errors.Is(err, ledger.ErrChangedInput) {
			// ErrChangedInput: a concurrent call created it first with
			// another deadline; read it again.
			return ledger.OperationView{}, false, fmt.Errorf("supervise: operation %q: creating: %w", c.OperationID, err)
		}
	}
}

// specOf is the spec op was created with.
func specOf(op ledger.Operation) ledger.OperationSpec {
	return ledger.OperationSpec{Scope: op.Scope, OperationID: op.OperationID, CapabilityID: op.CapabilityID,
		RequestDigest: op.RequestDigest, ManifestDigest: op.ManifestDigest, EffectBudget: op.EffectBudget, Deadline: op.Deadline}
}

// settled fills o from an operation that needs no attempt: completed
// (reconnect to its result), cancelled, or past its deadline.
func (s *Supervisor) settled(view ledger.OperationView, o *Outcome) (bool, *Outcome, error) {
	op := view.Operation
	o.Effects, o.Budget, o.BudgetUsed = view.Effects, op.EffectBudget, op.EffectsUsed
	switch {
	case op.State == ledger.OperationCompleted && view.Result != nil:
		o.State, o.Reconnected, o.Result = stateOfOperation(op.State), true, view.Result
	case op.State == ledger.OperationCancelled:
		o.State, o.Reason = stateOfOperation(op.State), "the operation was cancelled: "+op.CancelReason
	case !op.Deadline.IsZero() && !time.Now().Before(op.Deadline):
		o.State, o.Reason = launch.StateTimedOut, fmt.Sprintf("the operation's deadline %s has passed", op.Deadline.Format(time.RFC3339Nano))
	default:
		return false, nil, nil
	}
	s.emit(Event{Kind: EventOutcome, Scope: o.Scope, OperationID: o.OperationID, Outcome: o})
	res, err := o.result(nil)
	return true, res, err
}

// launchRefused answers an attempt whose launch the ledger did not
// record (err); its host was stopped before it could bootstrap. A
// generation or spec taken by a concurrent Invoke is tried again (again);
// an operation settled since it was read is answered from the ledger;
// anything else is an error.
func (s *Supervisor) launchRefused(ctx context.Context, c Call, o *Outcome, err error) (*Outcome, bool, error) {
	err = fmt.Errorf("supervise: operation %q: recording the launch of an attempt: %w", c.OperationID, err)
	switch {
	case errors.Is(err, ledger.ErrStaleFence), errors.Is(err, ledger.ErrChangedInput):
		return nil, true, err
	case errors.Is(err, ledger.ErrOperationCancelled), errors.Is(err, ledger.ErrResultAlreadyAccepted):
		if view, verr := s.cfg.Ledger.Operation(ctx, c.Scope, c.OperationID); verr == nil {
			if done, res, serr := s.settled(view, o); done {
				return res, false, serr
			}
		}
	}
	return nil, false, err
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (s *Supervisor) register(k opKey, r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.running[k]
	if set == nil {
		set = map[*run]struct{}{}
		s.running[k] = set
	}
	set[r] = struct{}{}
}

func (s *Supervisor) unregister(k opKey, r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running[k], r)
	if len(s.running[k]) == 0 {
		delete(s.running, k)
	}
}

// Cancel cancels the operation durably (ledger.Cancel): from then on the
// ledger answers every request of every attempt cancelled, in this process
// and any other sharing the ledger. An Invoke of the operation running in
// this process is told at once: its host is answered cancelled at its next
// request, and its process group is stopped after Config.CancelGrace
// (SIGTERM, then SIGKILL after the launcher's grace) if it has not ended by
// then. An effect already being dispatched is not interrupted; its outcome
// is recorded. Cancelling an operation whose result was accepted is
// ledger.ErrResultAlreadyAccepted.
func (s *Supervisor) Cancel(ctx context.Context, scope ledger.Scope, operationID, reason string) (ledger.Operation, error) {
	op, err := s.cfg.Ledger.Cancel(ctx, scope, operationID, reason)
	if errors.Is(err, ledger.ErrNotFound) {
		op, err = s.cancelUnknown(ctx, scope, operationID, reason)
	}
	if err != nil {
		return op, fmt.Errorf("supervise: cancelling operation %q: %w", operationID, err)
	}
	s.mu.Lock()
	runs := make([]*run, 0, len(s.running[opKey{scope, operationID}]))
	for r := range s.running[opKey{scope, operationID}] {
		runs = append(runs, r)
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.once.Do(func() {
			close(r.cancelled)
			r.timer = time.AfterFunc(s.cfg.CancelGrace, r.stop)
		})
	}
	return op, nil
}

// CancelledCapability is the capability id an operation is recorded with
// when Cancel reaches it before any Invoke did: the operation exists only
// to say it was cancelled, and every later Invoke of it is answered
// cancelled without launching, whatever it asks for.
const CancelledCapability = "zeo.runtime.cancelled_before_invocation@1.0.0"

// cancelUnknown records an operation never invoked as cancelled.
func (s *Supervisor) cancelUnknown(ctx context.Context, scope ledger.Scope, operationID, reason string) (ledger.Operation, error) {
	empty := canon.Sum([]byte("{}"))
	_, err := s.cfg.Ledger.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: operationID,
		CapabilityID: CancelledCapability, RequestDigest: empty, ManifestDigest: empty})
	if err != nil && !errors.Is(err, ledger.ErrChangedInput) {
		// ErrChangedInput: an Invoke created it meanwhile; cancel that.
		return ledger.Operation{}, err
	}
	return s.cfg.Ledger.Cancel(ctx, scope, operationID, reason)
}

// Resolve settles an effect whose dispatch is uncertain (or that was
// authorized and never settled) after reconciliation with the service:
// res.State is ledger.EffectConfirmed with the receipt, or
// ledger.EffectNotConsumed with a reason. The next attempt of the
// operation then proceeds: a confirmed effect is redelivered with its
// receipt, a not-consumed one is answered with its reason.
func (s *Supervisor) Resolve(ctx context.Context, scope ledger.Scope, operationID, logicalEffectID string, res ledger.Resolution) (ledger.Effect, error) {
	view, err := s.cfg.Ledger.Operation(ctx, scope, operationID)
	if err != nil {
		return ledger.Effect{}, fmt.Errorf("supervise: resolving effect %q of operation %q: %w", logicalEffectID, operationID, err)
	}
	for _, e := range view.Effects {
		if e.LogicalEffectID == logicalEffectID {
			out, err := s.cfg.Ledger.Resolve(ctx, scope, operationID, logicalEffectID, e.RequestDigest, res)
			if err != nil {
				return out, fmt.Errorf("supervise: resolving effect %q of operation %q: %w", logicalEffectID, operationID, err)
			}
			return out, nil
		}
	}
	return ledger.Effect{}, fmt.Errorf("supervise: resolving effect %q of operation %q: %w", logicalEffectID, operationID, ledger.ErrNotFound)
}

// Artifact returns a stored artifact by ref, refused with
// ledger.ErrOutOfScope under any organization or project but the one it
// was stored under. A digest or a ref alone never grants retrieval.
func (s *Supervisor) Artifact(ctx context.Context, scope ledger.Scope, ref string) (ledger.Artifact, error) {
	a, err := s.cfg.Ledger.Artifact(ctx, scope, ref)
	if err != nil {
		return a, fmt.Errorf("supervise: artifact %q: %w", ref, err)
	}
	return a, nil
}

// Recovery is what Recover found and did.
type Recovery struct {
	// Fenced lists, for every open operation whose current attempt had no
	// recorded outcome (its controller stopped while it ran), the fence of
	// that attempt; each is now fenced off by a new, empty attempt, so that
	// an orphaned host still talking is refused on every method.
	Fenced []ledger.Fence
	// Unknown lists every effect that needs reconciliation (unknown, or
	// authorized and never settled), as ledger.ListUnknown returns them.
	// Settle each with Resolve.
	Unknown []ledger.Effect
	// InFlight lists the authorized effects of attempts whose controller
	// is live (ledger.ListInFlight): their dispatch may be under way, and
	// their controller records the outcome; Resolve refuses them.
	InFlight []ledger.Effect
}

// orReason is r, or def when r is empty.
func orReason(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

// errorClasses name the package's errors in a span's error.type, most
// specific first (doc/design.md, “Telemetry”).
var errorClasses = []telemetry.Class{
	{Err: ErrRefused, Name: "refused"}, {Err: ErrWaitingApproval, Name: "waiting_approval"}, {Err: ErrFailed, Name: "failed"},
	{Err: ErrInvalidRequest, Name: "invalid_request"}, {Err: ErrUnavailable, Name: "unavailable"}, {Err: ErrCancelled, Name: "cancelled"},
	{Err: ErrTimedOut, Name: "timed_out"}, {Err: ErrNeedsReconciliation, Name: "needs_reconciliation"}, {Err: ErrProtocol, Name: "protocol_error"},
	{Err: ErrRunning, Name: "running"}, {Err: ErrPreflight, Name: "preflight"}, {Err: ErrOperationMismatch, Name: "operation_mismatch"},
	{Err: ErrLeaseLost, Name: "lease_lost"}, {Err: ErrClosed, Name: "closed"}, {Err: port.ErrNotConsumed, Name: "not_consumed"},
	{Err: ErrInvalidCall, Name: "invalid_call"}, {Err: ErrInvalidConfig, Name: "invalid_config"},
}
