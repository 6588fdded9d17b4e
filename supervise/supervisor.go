package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Defaults of Config.
const (
	// DefaultOperationTimeout is the deadline of a new operation whose
	// Call names none, counted from its creation.
	DefaultOperationTimeout = 5 * time.Minute
	// DefaultCancelGrace is how long, after Cancel, a running host has to
	// end by itself (it is answered cancelled at its next request) before
	// its process group is stopped: SIGTERM, then SIGKILL after the
	// launcher's grace.
	DefaultCancelGrace = 2 * time.Second
)

// Config configures a Supervisor. New validates and copies it.
type Config struct {
	// Ledger is the durable truth. Required.
	Ledger ledger.Ledger
	// Launcher starts the hosts. Required.
	Launcher *launch.Launcher
	// Zygote, when set, starts the hosts warm: forked from its server
	// instead of started cold (see launch.Zygote), with the same
	// guarantees. It must have been started from Launcher
	// (Launcher.StartZygote); the Supervisor never closes it. Nil means
	// every host starts cold.
	Zygote *launch.Zygote
	// Provider is the exact provider every host is bound to, with its
	// entire inventory. Required and valid (manifest.ValidateBinding).
	Provider manifest.ProviderBinding
	// HostPythonVersion is the version of the interpreter the Launcher
	// runs (platform.python_version(), e.g. "3.14.0"); New refuses a
	// Provider whose python_version differs, which the host would refuse
	// after bootstrap with a bare protocol_error. Required unless
	// SkipPythonVersionCheck is set.
	HostPythonVersion string
	// SkipPythonVersionCheck, when true, leaves the python_version check to
	// the host: a mismatch is then found only after launch, as a
	// protocol_error. It is for an embedder that cannot ask the
	// interpreter; it and HostPythonVersion exclude each other. False (the
	// zero value) means HostPythonVersion is required.
	SkipPythonVersionCheck bool
	// Authority decides admissions and new effects; nil means AllowAll.
	Authority Authority
	// Dispatcher consumes authorized effects; nil means NoEffects.
	Dispatcher Dispatcher
	// Reserver takes, re-checks and releases each attempt's resource
	// reservations; nil means none are taken.
	Reserver Reserver
	// Grants are what capabilities may use besides the effect port.
	Grants Grants
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
	// Observer, when set, receives every Event of every operation. It is
	// called synchronously from the goroutines running Invoke; it must not
	// block, and must be safe for concurrent use.
	Observer func(Event)
	// Logger receives debug records per step and warnings. Nil means none.
	Logger *slog.Logger
}

// Supervisor runs capability operations end to end on durable truth. It is
// safe for concurrent use: many Invoke calls may run at once, on the same
// operation or on different ones (a newer attempt of an operation fences
// the older one off).
type Supervisor struct {
	cfg       Config
	log       *slog.Logger
	validator *manifest.Validator
	encoder   *launch.ContextEncoder                 // the provider's part of every LaunchContext, encoded once
	manifests map[string]manifest.CapabilityManifest // by canonical id; read-only

	mu      sync.Mutex // guards running
	running map[opKey]map[*run]struct{}
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
	c.Grants = Grants{
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
	s := &Supervisor{cfg: c, log: c.Logger, validator: &manifest.Validator{},
		manifests: map[string]manifest.CapabilityManifest{}, running: map[opKey]map[*run]struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.Ledger == nil {
		add("Ledger is nil")
	}
	if c.Launcher == nil {
		add("Launcher is nil")
	}
	if c.Zygote != nil && c.Zygote.Launcher() != c.Launcher {
		add("Zygote was started from another Launcher")
	}
	if err := s.validator.ValidateBinding(c.Provider); err != nil {
		add("Provider: %w", err)
	} else if err := CheckDocument("provider binding", c.Provider); err != nil {
		add("Provider: %w", err)
	} else if s.encoder, err = launch.NewContextEncoder(c.Provider); err != nil {
		add("Provider: %w", err)
	}
	switch {
	case c.HostPythonVersion == "" && !c.SkipPythonVersionCheck:
		add("HostPythonVersion is empty: set it to the version of the Launcher's interpreter (python -c 'import platform; print(platform.python_version())'), or set SkipPythonVersionCheck to leave the check to the host, which refuses a mismatch only after launch (protocol_error)")
	case c.HostPythonVersion != "" && c.SkipPythonVersionCheck:
		add("HostPythonVersion %q and SkipPythonVersionCheck are both set: give one", c.HostPythonVersion)
	case c.HostPythonVersion != "" && c.HostPythonVersion != c.Provider.PythonVersion:
		add("Provider names python_version %q but the host interpreter is %q; the host would refuse every attempt after bootstrap (protocol_error): use the binding made for this interpreter",
			c.Provider.PythonVersion, c.HostPythonVersion)
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
	if c.OperationTimeout < 0 || c.CancelGrace < 0 || c.OutcomeTimeout < 0 {
		add("OperationTimeout, CancelGrace and OutcomeTimeout must not be negative")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	for _, m := range c.Provider.Manifests {
		s.manifests[m.ID.String()] = m
	}
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
func (s *Supervisor) Invoke(ctx context.Context, c Call) (*Outcome, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	o := &Outcome{Scope: c.Scope, OperationID: c.OperationID}
	m, ok := s.manifests[c.CapabilityID]
	if !ok {
		o.State, o.Reason = launch.StateRefused, fmt.Sprintf("capability %q is not in the provider's inventory", c.CapabilityID)
		return o.result(&PreflightError{Check: "capability", Detail: o.Reason})
	}
	if err := CheckRequirements(m, s.cfg.Grants); err != nil {
		o.State, o.Reason = launch.StateUnavailable, "the capability's requirements cannot be met here"
		return o.result(err)
	}
	if err := CheckDocument("arguments", c.Arguments); err != nil {
		o.State, o.Reason = launch.StateInvalidRequest, "the arguments cannot be sent to the host"
		return o.result(&PreflightError{Check: "document", Detail: "arguments", Err: err})
	}
	prep, err := s.validator.PrepareRequest(m, c.Arguments)
	if err != nil {
		o.State, o.Reason = launch.StateInvalidRequest, "the arguments do not satisfy the capability's request schema"
		return o.result(&PreflightError{Check: "arguments", Detail: o.Reason, Err: err})
	}
	for try := 1; ; try++ {
		view, recorded, err := s.operation(ctx, c, prep.RequestDigest)
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
		res, again, err := s.attempt(ctx, c, m, prep, view, recorded, o)
		if !again {
			return res, err
		}
		if try == maxLaunches {
			return nil, fmt.Errorf("supervise: operation %q: %d launches in a row lost their fencing generation to concurrent attempts: %w",
				c.OperationID, maxLaunches, err)
		}
	}
}

// maxLaunches bounds the launches one Invoke prepares when concurrent
// Invoke calls of the same operation keep taking the generation each one
// prepared its launch for.
const maxLaunches = 4

// operation returns the recorded operation for c (recorded), or the one
// its first attempt's launch will create, not yet recorded. A recorded
// operation must match c's capability, request and manifest; its deadline
// and budget apply unless c names others.
func (s *Supervisor) operation(ctx context.Context, c Call, digest canon.Digest) (view ledger.OperationView, recorded bool, err error) {
	for try := 0; ; try++ {
		view, err := s.cfg.Ledger.Operation(ctx, c.Scope, c.OperationID)
		if err == nil {
			op := view.Operation
			switch {
			case op.CapabilityID != c.CapabilityID, op.RequestDigest != digest, op.ManifestDigest != s.cfg.Provider.ManifestDigest:
				return view, true, fmt.Errorf("%w: operation %q is recorded for capability %s with request digest %s and manifest digest %s; this call has %s, %s, %s",
					ErrOperationMismatch, c.OperationID, op.CapabilityID, op.RequestDigest, op.ManifestDigest, c.CapabilityID, digest, s.cfg.Provider.ManifestDigest)
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
			ManifestDigest: s.cfg.Provider.ManifestDigest, EffectBudget: c.EffectBudget, Deadline: dl,
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
		o.State, o.Reconnected, o.Result = launch.StateSucceeded, true, view.Result
	case op.State == ledger.OperationCancelled:
		o.State, o.Reason = launch.StateCancelled, "the operation was cancelled: "+op.CancelReason
	case !op.Deadline.IsZero() && !time.Now().Before(op.Deadline):
		o.State, o.Reason = launch.StateTimedOut, fmt.Sprintf("the operation's deadline %s has passed", op.Deadline.Format(time.RFC3339Nano))
	default:
		return false, nil, nil
	}
	s.emit(Event{Kind: EventOutcome, Scope: o.Scope, OperationID: o.OperationID, Outcome: o})
	res, err := o.result(nil)
	return true, res, err
}

// attempt runs one new attempt of the operation view shows (recorded, or
// to be created by the launch): it prepares the attempt's fence (the
// operation's next generation), binding, context and bootstrap id, starts
// the host while LaunchAttempt records all of it, serves the host with a
// Handler, judges what the host left behind and records the evidence.
//
// again reports that the launch was refused because its generation or the
// operation's spec was taken by a concurrent Invoke: nothing was recorded,
// the host was stopped before it could bootstrap, and the caller prepares
// another attempt from a fresh read.
func (s *Supervisor) attempt(ctx context.Context, c Call, m manifest.CapabilityManifest, prep manifest.Prepared,
	view ledger.OperationView, recorded bool, o *Outcome) (res *Outcome, again bool, err error) {
	started := time.Now()
	op := view.Operation
	attemptID, err := newID("attempt")
	if err != nil {
		return nil, false, err
	}
	bootstrapID, err := newID("bootstrap")
	if err != nil {
		return nil, false, err
	}
	fence := ledger.Fence{Scope: c.Scope, OperationID: c.OperationID, AttemptID: attemptID, Generation: op.CurrentGeneration + 1}
	binding := ipc.AttemptBinding{
		OrganizationID: c.Scope.OrganizationID, ProjectID: c.Scope.ProjectID,
		SeatID: or(c.SeatID, s.cfg.SeatID), RuntimeBindingID: or(c.RuntimeBindingID, s.cfg.RuntimeBindingID),
		PacketID: or(c.PacketID, c.OperationID), OperationID: c.OperationID, AttemptID: fence.AttemptID,
		FencingGeneration: fence.Generation, CapabilityID: c.CapabilityID,
		RequestDigest: prep.RequestDigest, ManifestDigest: s.cfg.Provider.ManifestDigest,
	}
	lc, err := BuildContext(ContextSpec{
		Provider: s.cfg.Provider, Manifest: m, Binding: binding, Operation: view, BootstrapID: bootstrapID,
		Workspace: s.cfg.Workspace, Grants: s.cfg.Grants, RPCTimeout: s.cfg.RPCTimeout, MaxMessageBytes: s.cfg.MaxMessageBytes,
	})
	if err != nil {
		return nil, false, err
	}
	enc, err := s.encoder.Encode(lc)
	if err != nil {
		return nil, false, fmt.Errorf("supervise: operation %q: %w", c.OperationID, err)
	}
	// The host receives the caller's arguments, not prep.Arguments: it
	// runs the provider's own validation and must arrive at prep's digest
	// from them. pydantic's output does not always survive pydantic again
	// (see doc/pydantic.md), and a prepared large integral float would be
	// written as an integer token the host's strict parser refuses.
	req, err := launch.EncodeRequest(c.CapabilityID, c.Arguments)
	if err != nil {
		return nil, false, err
	}
	record := ledger.AttemptLaunch{Operation: specOf(op), AttemptID: fence.AttemptID, Generation: fence.Generation,
		BootstrapID: bootstrapID, LaunchDigest: enc.LaunchDigest}
	// A reservation is fenced with its attempt, so with a Reserver the
	// launch is recorded before the host starts (its fsync is then on the
	// critical path) and the reservations are taken before anything runs.
	launched := false
	if s.cfg.Reserver != nil {
		if _, err := s.cfg.Ledger.LaunchAttempt(ctx, record); err != nil {
			return s.launchRefused(ctx, c, o, err)
		}
		launched = true
		if done, res, err := s.reserve(ctx, c, m, prep.Arguments, fence, binding, o, started); done {
			return res, false, err
		}
		defer s.release(ctx, fence)
	}

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	r := &run{cancelled: make(chan struct{}), stop: stop}
	key := opKey{c.Scope, c.OperationID}
	s.register(key, r)
	defer s.unregister(key, r)

	h, err := NewHandler(HandlerConfig{
		Ledger: s.cfg.Ledger, Fence: fence, Binding: binding, BootstrapID: bootstrapID, Manifest: &m,
		Validator: s.validator, Authority: s.cfg.Authority, Dispatcher: s.cfg.Dispatcher, Cancelled: r.cancelled,
		Reserver: s.cfg.Reserver, Provider: &s.cfg.Provider,
		OutcomeTimeout: s.cfg.OutcomeTimeout, Observer: s.cfg.Observer, Logger: s.cfg.Logger,
	})
	if err != nil {
		return nil, false, err
	}
	// The launch (the operation when new, the attempt and its fence, the
	// bootstrap id with the launch digest) is recorded in one write while
	// the host starts, so that its fsync costs the invocation no wait. The
	// host can do nothing with its context before that write is durable:
	// it acts only after bootstrap, and the Handler answers bootstrap only
	// once the write has landed (see the package documentation, “Invoke”).
	h.issue = &issue{done: make(chan struct{})}
	go func() {
		defer close(h.issue.done)
		if !launched {
			if _, err := s.cfg.Ledger.LaunchAttempt(ctx, record); err != nil {
				h.issue.err = err
				stop() // nothing is recorded for this host: stop it now
				return
			}
		}
		if !recorded {
			op := op
			s.emit(Event{Kind: EventOperation, Scope: c.Scope, OperationID: c.OperationID, Operation: &op})
		}
		s.emit(Event{Kind: EventAttempt, Scope: c.Scope, OperationID: c.OperationID, AttemptID: fence.AttemptID, Generation: fence.Generation})
		s.emit(Event{Kind: EventLaunch, Scope: c.Scope, OperationID: c.OperationID, AttemptID: fence.AttemptID,
			Generation: fence.Generation, BootstrapID: bootstrapID, LaunchDigest: enc.LaunchDigest, Budget: lc.TotalDispatchBudget})
	}()
	invoke := s.cfg.Launcher.Invoke
	if s.cfg.Zygote != nil {
		invoke = s.cfg.Zygote.Invoke
	}
	lo, lerr := invoke(lctx, launch.Invocation{Encoded: &enc, Request: req, Handler: h})
	<-h.issue.done
	r.once.Do(func() {}) // a Cancel from now on finds nothing to stop
	if r.timer != nil {
		r.timer.Stop()
	}
	if err := h.issue.err; err != nil {
		return s.launchRefused(ctx, c, o, err)
	}
	o.AttemptID, o.Generation = fence.AttemptID, fence.Generation
	o.Decisions = h.Decisions()
	if lo == nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("supervise: operation %q: %w", c.OperationID, context.Cause(ctx))
		}
		o.State, o.Reason = launch.StateUnavailable, "the host could not be started: "+lerr.Error()
		s.record(ctx, fence, o, evidence(o, binding, bootstrapID, enc.LaunchDigest, nil, h, started))
		res, err := o.result(lerr)
		return res, false, err
	}
	o.Launched, o.Launch = true, lo
	cancelled := false
	select {
	case <-r.cancelled:
		cancelled = true
	default:
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.OutcomeTimeout)
	defer cancel()
	after, verr := s.cfg.Ledger.Operation(wctx, c.Scope, c.OperationID)
	cause := s.judge(o, lo, lerr, after, verr, cancelled, h)
	s.record(ctx, fence, o, evidence(o, binding, bootstrapID, enc.LaunchDigest, lo, h, started))
	s.emit(Event{Kind: EventOutcome, Scope: c.Scope, OperationID: c.OperationID, AttemptID: o.AttemptID, Generation: o.Generation, Outcome: o})
	res, err = o.result(cause)
	return res, false, err
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
	case errors.Is(err, ledger.ErrCancelled), errors.Is(err, ledger.ErrResultAlreadyAccepted):
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

// launchState maps a reply state to the outcome state it ends an attempt
// with.
func launchState(st ipc.ReplyState) launch.State {
	switch st {
	case ipc.StateCancelled:
		return launch.StateCancelled
	case ipc.StateWaitingApproval:
		return launch.StateWaitingApproval
	case ipc.StateNeedsReconciliation:
		return launch.StateNeedsReconciliation
	}
	return launch.StateRefused
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
}
