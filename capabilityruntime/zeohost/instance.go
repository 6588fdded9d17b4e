package zeohost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// instance is one admitted provider binding: a BackendInstance whose
// Execute is one Supervisor.Invoke.
type instance struct {
	b    *Backend
	spec instanceSpec
	key  bindingKey
	env  *environment
	sem  chan struct{} // nil: no bound of its own

	stop     context.Context // ended when Close gives up draining
	stopCall context.CancelFunc
	calls    sync.WaitGroup

	mu       sync.Mutex // guards closed, released
	closed   bool
	released bool
}

func newInstance(b *Backend, is instanceSpec, k bindingKey, env *environment) *instance {
	in := &instance{b: b, spec: is, key: k, env: env}
	if is.maxWorkers > 0 {
		in.sem = make(chan struct{}, is.maxWorkers)
	}
	in.stop, in.stopCall = context.WithCancel(context.Background())
	return in
}

// enter counts one call in, or refuses it once Close has begun.
func (in *instance) enter() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed || in.b.isClosed() {
		return fmt.Errorf("%w: %s@%s", ErrClosed, in.spec.typ, in.spec.version)
	}
	in.calls.Add(1)
	return nil
}

// Execute runs one operation: Request.Params name the capability, its
// arguments and the operation id (see the package documentation,
// “Requests”), and Supervisor.Invoke runs or continues it. A succeeded
// outcome is a Response whose Result holds its data and artifact; any
// other outcome is a Response whose Error is the outcome's code,
// returned with a *CallError (a controlled failure). A request that says
// nothing runnable, a closed instance, or a failure before any outcome
// (ledger unreachable, the operation id reused for another request) is a
// nil Response and an error.
func (in *instance) Execute(ctx context.Context, req *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	c, err := parseRequest(req)
	if err != nil {
		return nil, err
	}
	if err := in.enter(); err != nil {
		return nil, err
	}
	defer in.calls.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(in.stop, cancel)()
	if in.sem != nil {
		select {
		case in.sem <- struct{}{}:
			defer func() { <-in.sem }()
		case <-ctx.Done():
			return nil, fmt.Errorf("zeohost: %s@%s: waiting for one of %d workers: %w", in.spec.typ, in.spec.version, cap(in.sem), context.Cause(ctx))
		}
	}
	b := in.spec.binding
	o, err := in.b.sup.Invoke(ctx, supervise.Call{
		Scope: in.spec.scope, OperationID: c.operationID, CapabilityID: c.capabilityID, Binding: &b,
		Arguments: c.arguments, SeatID: in.spec.seat, RuntimeBindingID: in.spec.runtime,
		EffectBudget: in.spec.budget, ReservationWait: in.spec.reservationWait,
	})
	if o == nil {
		switch {
		case errors.Is(err, supervise.ErrInvalidCall):
			return nil, fmt.Errorf("%w: %w", ErrInvalidParams, err)
		case errors.Is(err, supervise.ErrClosed):
			return nil, fmt.Errorf("%w: %s@%s: %w", ErrClosed, in.spec.typ, in.spec.version, err)
		}
		return nil, fmt.Errorf("zeohost: %s@%s: %w", in.spec.typ, in.spec.version, err)
	}
	resp := &capabilityruntime.Response{Result: resultOf(o)}
	if o.State == launch.StateSucceeded {
		if err := in.attach(ctx, o, resp.Result); err != nil {
			return nil, err
		}
		return resp, nil
	}
	resp.Error = string(o.State)
	oe, ok := errors.AsType[*supervise.OutcomeError](err)
	if !ok {
		oe = &supervise.OutcomeError{Outcome: o, Err: supervise.ErrProtocol, Cause: err}
	}
	return resp, &CallError{
		Runtime: &capabilityruntime.RuntimeError{Type: in.spec.typ, Version: in.spec.version, Message: resp.Error},
		Outcome: oe,
	}
}

// attach puts the accepted result's data, read from its artifact, into r.
// The artifact is read under the operation's scope, the only one the
// ledger gives it to.
func (in *instance) attach(ctx context.Context, o *supervise.Outcome, r map[string]any) error {
	if o.Result == nil || len(o.Result.ArtifactRefs) == 0 {
		return fmt.Errorf("zeohost: %s@%s: operation %q succeeded with no artifact", in.spec.typ, in.spec.version, o.OperationID)
	}
	a, err := in.b.sup.Artifact(context.WithoutCancel(ctx), in.spec.scope, o.Result.ArtifactRefs[0])
	if err != nil {
		return fmt.Errorf("zeohost: %s@%s: operation %q succeeded but its result cannot be read (retry with the same operation id): %w",
			in.spec.typ, in.spec.version, o.OperationID, err)
	}
	var data any
	if err := json.Unmarshal(a.Bytes, &data); err != nil {
		return fmt.Errorf("zeohost: %s@%s: operation %q: artifact %q is not JSON: %w", in.spec.typ, in.spec.version, o.OperationID, a.Ref, err)
	}
	r[ResultData] = data
	return nil
}

// Health runs the host's doctor on the instance's binding in its provider
// environment (discovery.Doctor): a real process, which fails when
// the environment can no longer launch the binding (its interpreter gone
// or broken, its distribution changed). An error wraps ErrDoctor, or
// ErrClosed.
func (in *instance) Health(ctx context.Context) error {
	if err := in.enter(); err != nil {
		return err
	}
	defer in.calls.Done()
	if _, err := discovery.Doctor(ctx, in.env.launcher, in.spec.binding); err != nil {
		return fmt.Errorf("%w: %s@%s (%s %s): %w", ErrDoctor, in.spec.typ, in.spec.version, in.spec.binding.Distribution, in.spec.binding.Version, err)
	}
	return nil
}

// Close stops taking calls (Execute then fails with ErrClosed) and lets the
// calls in flight finish until ctx ends; then it cancels them (their hosts
// are stopped as at a deadline, and their outcomes are still recorded) and
// waits up to Config.CloseGrace for them to return, else its error wraps
// ErrCloseTimeout. The Supervisor stays open for the Backend's other
// instances. Close may be called more than once; later calls wait the same
// way.
func (in *instance) Close(ctx context.Context) error {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
	drained := make(chan struct{})
	go func() {
		in.calls.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		in.stopCall()
		t := time.NewTimer(in.b.cfg.CloseGrace)
		select {
		case <-drained:
		case <-t.C:
			err = fmt.Errorf("%w: %s@%s: calls were still running %v after they were cancelled", ErrCloseTimeout, in.spec.typ, in.spec.version, in.b.cfg.CloseGrace)
		}
		t.Stop()
	}
	in.mu.Lock()
	release := !in.released
	in.released = true
	in.mu.Unlock()
	if release {
		in.b.release(in.key)
	}
	if err == nil {
		in.stopCall() // nothing is left to stop
	}
	return err
}
