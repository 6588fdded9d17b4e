package supervise

import (
	"context"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/internal/answer"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// attempt is one new attempt of an operation, from its preparation to the
// evidence it leaves. Its steps are its methods, in the order run calls
// them: prepare, admit, launch (which serves the host), judge, record.
type attempt struct {
	s        *Supervisor
	c        Call
	p        *provider
	m        manifest.CapabilityManifest
	prep     manifest.Prepared
	view     ledger.OperationView // the operation as read before the attempt
	recorded bool                 // view is recorded; else the launch creates it
	o        *Outcome

	started     time.Time
	fence       ledger.Fence
	binding     ipc.AttemptBinding
	bootstrapID string
	lc          launch.LaunchContext
	enc         launch.Encoded
	req         []byte
	launch      ledger.AttemptLaunch
	launched    bool // the launch is recorded (before the host starts, with a Reserver)
	h           *answer.Handler
	launchRec   *answer.Pending // the launch write running while the host starts
	r           *run
}

// run runs the attempt. again reports that the launch was refused because
// its generation or the operation's spec was taken by a concurrent
// Invoke: nothing was recorded, the host was stopped before it could
// bootstrap, and the caller prepares another attempt from a fresh read.
func (a *attempt) run(ctx context.Context) (res *Outcome, again bool, err error) {
	a.started = time.Now()
	if err := a.s.own(ctx); err != nil {
		return nil, false, err
	}
	if !a.recorded {
		if err := budgetCheck(a.m, a.view.Operation.EffectBudget, a.o); err != nil {
			res, err := a.o.result(err)
			return res, false, err
		}
	}
	if err := a.prepare(); err != nil {
		return nil, false, err
	}
	if done, err := a.admit(ctx); done {
		res, err := a.o.result(err)
		return res, false, err
	}
	if a.s.cfg.Reserver != nil {
		// A reservation is fenced with its attempt, so with a Reserver the
		// launch is recorded before the host starts (its fsync is then on
		// the critical path) and the reservations are taken before
		// anything runs.
		if _, err := a.s.cfg.Ledger.LaunchAttempt(ctx, a.launch); err != nil {
			return a.s.launchRefused(ctx, a.c, a.o, err)
		}
		a.launched = true
		if done, res, err := a.reserve(ctx); done {
			return res, false, err
		}
		defer a.s.release(ctx, a.fence)
	}
	lo, lerr, err := a.start(ctx)
	if err != nil {
		return nil, false, err
	}
	if err := a.launchRec.Err; err != nil {
		return a.s.launchRefused(ctx, a.c, a.o, err)
	}
	a.o.AttemptID, a.o.Generation = a.fence.AttemptID, a.fence.Generation
	a.o.Decisions = eventsOf(a.h.Decisions())
	if lo == nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("supervise: operation %q: %w", a.c.OperationID, context.Cause(ctx))
		}
		a.o.State, a.o.Reason = launch.StateUnavailable, "the host could not be started: "+lerr.Error()
		a.record(ctx, nil)
		res, err := a.o.result(lerr)
		return res, false, err
	}
	a.o.Launched, a.o.Launch = true, lo
	cause := a.judge(ctx, lo, lerr)
	a.record(ctx, lo)
	a.s.emit(a.event(Event{Kind: EventOutcome, Outcome: a.o}))
	res, err = a.o.result(cause)
	return res, false, err
}

// event fills ev with the attempt's operation and, once prepared, its
// attempt and generation.
func (a *attempt) event(ev Event) Event {
	ev.Scope, ev.OperationID = a.c.Scope, a.c.OperationID
	if ev.Kind != EventOperation {
		ev.AttemptID, ev.Generation = a.fence.AttemptID, a.fence.Generation
	}
	return ev
}

// prepare makes the attempt's fence (the operation's next generation),
// binding, LaunchContext, bootstrap id and request, and what the ledger
// records of the launch.
func (a *attempt) prepare() error {
	s, c, op := a.s, a.c, a.view.Operation
	attemptID, err := newID("attempt")
	if err != nil {
		return err
	}
	if a.bootstrapID, err = newID("bootstrap"); err != nil {
		return err
	}
	a.fence = ledger.Fence{Scope: c.Scope, OperationID: c.OperationID, AttemptID: attemptID, Generation: op.CurrentGeneration + 1}
	a.binding = ipc.AttemptBinding{
		OrganizationID: c.Scope.OrganizationID, ProjectID: c.Scope.ProjectID,
		SeatID: or(c.SeatID, s.cfg.SeatID), RuntimeBindingID: or(c.RuntimeBindingID, s.cfg.RuntimeBindingID),
		PacketID: or(c.PacketID, c.OperationID), OperationID: c.OperationID, AttemptID: a.fence.AttemptID,
		FencingGeneration: a.fence.Generation, CapabilityID: c.CapabilityID,
		RequestDigest: a.prep.RequestDigest, ManifestDigest: a.p.binding.ManifestDigest,
	}
	if a.lc, err = handler.BuildContext(handler.ContextSpec{
		Provider: a.p.binding, Manifest: a.m, Binding: a.binding, Operation: a.view, BootstrapID: a.bootstrapID,
		Workspace: s.cfg.Workspace, Grants: s.cfg.Grants, RPCTimeout: s.cfg.RPCTimeout, MaxMessageBytes: s.cfg.MaxMessageBytes,
	}); err != nil {
		return requirementsRefused(err)
	}
	if a.enc, err = a.p.encoder.Encode(a.lc); err != nil {
		return fmt.Errorf("supervise: operation %q: %w", c.OperationID, err)
	}
	// The host receives the caller's arguments, not prep.Arguments: it
	// runs the provider's own validation and must arrive at prep's digest
	// from them. pydantic's output does not always survive pydantic again
	// (see doc/pydantic.md), and a prepared large integral float would be
	// written as an integer token the host's strict parser refuses.
	if a.req, err = launch.EncodeRequest(c.CapabilityID, c.Arguments); err != nil {
		return err
	}
	a.launch = ledger.AttemptLaunch{Operation: specOf(op), AttemptID: a.fence.AttemptID, Generation: a.fence.Generation,
		BootstrapID: a.bootstrapID, LaunchDigest: a.enc.LaunchDigest, ControllerID: s.ctl.id}
	return nil
}

// admit asks the Authority, before anything is launched or recorded,
// whether the attempt may run: a refusal or a hold costs no host, no
// bootstrap id and no ledger write, however often the call is repeated.
// The Authority is asked again at invoke.admit, immediately before
// invocation. done reports that the attempt ends here, with o set.
func (a *attempt) admit(ctx context.Context) (done bool, err error) {
	if a.s.cfg.Authority == nil {
		return false, nil
	}
	v, err := a.s.cfg.Authority.Admit(ctx, port.Admission{Operation: a.view.Operation, Binding: a.binding, Arguments: a.prep.Arguments, BeforeLaunch: true})
	if err != nil {
		return true, fmt.Errorf("supervise: operation %q: asking the authority before launch: %w", a.c.OperationID, err)
	}
	switch v.Decision {
	case port.Allow:
		return false, nil
	case port.Refuse:
		a.o.State, a.o.Reason = launch.StateRefused, orReason(v.Reason, "refused by the authority")
	case port.Hold:
		a.o.State, a.o.Reason = launch.StateWaitingApproval, orReason(v.Reason, "held for approval by the authority")
	default:
		return true, fmt.Errorf("supervise: authority returned decision %q before launch, want allow, refuse or hold", v.Decision)
	}
	a.o.Reason += "; nothing was launched"
	a.s.emit(a.event(Event{Kind: EventOutcome, Outcome: a.o}))
	return true, &PreflightError{Check: "authority", Detail: a.o.Reason}
}

// start launches the host while the ledger records the launch, and serves
// it with a Handler until it ends. The launch (the operation when new,
// the attempt and its fence, the bootstrap id with the launch digest) is
// recorded in one write while the host starts, so that its fsync costs
// the invocation no wait. The host can do nothing with its context before
// that write is durable: it acts only after bootstrap, and the Handler
// answers bootstrap only once the write has landed (see the package
// documentation, “Invoke”).
func (a *attempt) start(ctx context.Context) (*launch.Outcome, error, error) {
	s, c := a.s, a.c
	st, err := s.starters.acquire(a.p.binding)
	if err != nil {
		return nil, nil, err
	}
	defer s.starters.release(st)

	lctx, stop := context.WithCancel(ctx)
	defer stop()
	a.r = &run{cancelled: make(chan struct{}), stop: stop}
	key := opKey{c.Scope, c.OperationID}
	s.register(key, a.r)
	defer s.unregister(key, a.r)

	var observer func(answer.Answer)
	if s.cfg.Observer != nil {
		observer = func(x answer.Answer) { s.cfg.Observer(eventOf(x)) }
	}
	a.launchRec = &answer.Pending{Done: make(chan struct{})}
	a.h, err = answer.New(answer.Config{
		Ledger: s.cfg.Ledger, Fence: a.fence, Binding: a.binding, BootstrapID: a.bootstrapID, Manifest: &a.m,
		Validator: s.validator, Authority: s.cfg.Authority, Dispatcher: s.cfg.Dispatcher, Cancelled: a.r.cancelled,
		Reserver: s.cfg.Reserver, Provider: &a.p.binding,
		OutcomeTimeout: s.cfg.OutcomeTimeout, Observer: observer, Logger: s.cfg.Logger,
		Telemetry: s.tel, Live: s.live, Launch: a.launchRec,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	go func() {
		defer close(a.launchRec.Done)
		if !a.launched {
			if _, err := s.cfg.Ledger.LaunchAttempt(ctx, a.launch); err != nil {
				a.launchRec.Err = err
				stop() // nothing is recorded for this host: stop it now
				return
			}
		}
		if !a.recorded {
			op := a.view.Operation
			s.emit(a.event(Event{Kind: EventOperation, Operation: &op}))
		}
		s.emit(a.event(Event{Kind: EventAttempt}))
		s.emit(a.event(Event{Kind: EventLaunch, BootstrapID: a.bootstrapID, LaunchDigest: a.enc.LaunchDigest, Budget: a.lc.TotalDispatchBudget}))
	}()
	lo, lerr := s.starters.invoke(lctx, st, a.p.binding, launch.Invocation{Encoded: &a.enc, Request: a.req, Handler: a.h})
	<-a.launchRec.Done
	a.r.once.Do(func() {}) // a Cancel from now on finds nothing to stop
	if a.r.timer != nil {
		a.r.timer.Stop()
	}
	return lo, lerr, nil
}

// judge reads the operation after the host ended and decides the
// outcome from it, the session and the host's claim (Supervisor.judge).
func (a *attempt) judge(ctx context.Context, lo *launch.Outcome, lerr error) error {
	cancelled := false
	select {
	case <-a.r.cancelled:
		cancelled = true
	default:
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.s.cfg.OutcomeTimeout)
	defer cancel()
	after, verr := a.s.cfg.Ledger.Operation(wctx, a.c.Scope, a.c.OperationID)
	cause := judge(a.o, leftBehind{lo: lo, lerr: lerr, after: after, verr: verr, cancelled: cancelled, h: a.h})
	if a.o.State == launch.StateFailed && a.o.Reason == "" && verr == nil && effectful(a.m) {
		op := after.Operation
		if op.EffectsUsed >= op.EffectBudget {
			a.o.Reason = fmt.Sprintf("the capability failed with the operation's effect budget used up (%d of %d effects): a further effect was refused; a new operation with a larger EffectBudget is needed",
				op.EffectsUsed, op.EffectBudget)
		}
	}
	return cause
}

// record writes the attempt's evidence.
func (a *attempt) record(ctx context.Context, lo *launch.Outcome) {
	a.s.record(ctx, a.fence, a.o, evidence(a.o, a.binding, a.bootstrapID, a.enc.LaunchDigest, lo, a.h, a.started))
}
