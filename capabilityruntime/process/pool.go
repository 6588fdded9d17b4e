//go:build unix

package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// pool holds the gRPC workers of one type@version.
//
// A slot is a process that may exist: one being started, live (idle or
// busy), or being stopped. Slots never exceed spec.maxWorkers, and a slot is
// freed only once its process has been reaped, so the number of worker
// processes of the pool never exceeds maxWorkers, even while discarded
// workers shut down. A worker is either idle (in idle), leased to exactly
// one call, or gone from live.
type pool struct {
	b    *Backend
	spec launchSpec

	holders int // guarded by b.mu

	mu      sync.Mutex
	idle    []*worker            // most recently used last
	live    map[*worker]struct{} // started and not discarded
	slots   int
	waiters []chan grant // calls waiting for a worker or a slot, oldest first
	closed  bool

	// closedCtx is cancelled by shutdown: starts in progress abort.
	closedCtx context.Context
	cancel    context.CancelFunc
	// killCtx bounds the background stops of discarded workers: it is
	// cancelled when a shutdown's own context ends, so that they go
	// straight to SIGKILL instead of holding the shutdown past its bound.
	killCtx    context.Context
	killCancel context.CancelFunc
	bg         sync.WaitGroup // starts in progress and background stops
	stopOnce   sync.Once
	stopped    chan struct{} // closed when shutdown has finished
	stopErr    error
}

// grant is what a waiting call is handed: an idle worker, a free slot to
// start one in, or the pool's closing.
type grant struct {
	w    *worker
	slot bool
	err  error
}

func newPool(b *Backend, s launchSpec) *pool {
	p := &pool{b: b, spec: s, live: make(map[*worker]struct{}), stopped: make(chan struct{})}
	p.closedCtx, p.cancel = context.WithCancel(context.Background())
	p.killCtx, p.killCancel = context.WithCancel(context.Background())
	return p
}

// lease returns a worker for one call: an idle one, a new one if a slot is
// free, or the first to be returned or freed, waiting at most until ctx
// ends.
func (p *pool) lease(ctx context.Context) (*worker, error) {
	p.mu.Lock()
	for {
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		n := len(p.idle)
		if n == 0 {
			break
		}
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		if !w.proc.isGone() {
			p.mu.Unlock()
			return w, nil
		}
		// It died while idle: drop it and look again.
		p.discardLocked(w)
	}
	if p.slots < p.spec.maxWorkers {
		p.slots++
		p.bg.Add(1)
		p.mu.Unlock()
		return p.startInSlot(ctx)
	}
	ch := make(chan grant, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()

	select {
	case g := <-ch:
		return p.take(ctx, g)
	case <-ctx.Done():
	}
	p.mu.Lock()
	for i, c := range p.waiters {
		if c == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, p.waitError(ctx)
		}
	}
	p.mu.Unlock()
	// Granted while giving up: pass the grant on.
	if g := <-ch; g.w != nil {
		p.release(g.w)
	} else if g.slot {
		p.freeSlot()
		p.bg.Done() // taken by the granter for the start we will not make
	}
	return nil, p.waitError(ctx)
}

func (p *pool) waitError(ctx context.Context) error {
	return fmt.Errorf("process: %s: all %d workers busy: %w", p.spec.name(), p.spec.maxWorkers, context.Cause(ctx))
}

// take turns a grant into a worker.
func (p *pool) take(ctx context.Context, g grant) (*worker, error) {
	switch {
	case g.err != nil:
		return nil, g.err
	case g.w != nil && g.w.proc.isGone():
		// It died between its last call and this one: replace it.
		p.discard(g.w)
		return p.lease(ctx)
	case g.w != nil:
		return g.w, nil
	default: // a slot, already counted and added to bg by the granter
		return p.startInSlot(ctx)
	}
}

// startInSlot starts a worker in a slot already counted, with p.bg already
// incremented for it.
func (p *pool) startInSlot(ctx context.Context) (*worker, error) {
	defer p.bg.Done()
	w, err := p.startWorker(ctx)
	if err != nil {
		p.freeSlot() // startWorker leaves no process behind on failure
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.stop(p.killCtx, p.b.cfg.ShutdownGrace)
		p.freeSlot()
		return nil, ErrClosed
	}
	p.live[w] = struct{}{}
	p.mu.Unlock()
	return w, nil
}

// release returns a worker after a call that succeeded: to the oldest
// waiter, else to the idle list.
func (p *pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.live[w]; !ok || p.closed {
		return // shutdown owns it now
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		ch <- grant{w: w}
		return
	}
	p.idle = append(p.idle, w)
}

// discard stops a worker that must not serve again (its call failed or was
// abandoned). It returns at once; the slot is freed once the process is gone.
func (p *pool) discard(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.discardLocked(w)
}

func (p *pool) discardLocked(w *worker) {
	if _, ok := p.live[w]; !ok || p.closed {
		return
	}
	delete(p.live, w)
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		w.stop(p.killCtx, p.b.cfg.ShutdownGrace)
		p.freeSlot()
	}()
}

// freeSlot gives a slot back, or hands it to the oldest waiter.
func (p *pool) freeSlot() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		p.bg.Add(1)
		ch <- grant{slot: true}
		return
	}
	p.slots--
}

// shutdown stops the pool: waiting calls fail with ErrClosed, every live
// worker (idle or busy) is stopped, starts in progress are aborted, and it
// returns once all of them are gone, bounded by ctx and the shutdown grace.
// Later calls wait for the first and return its result.
func (p *pool) shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.cancel()
		workers := make([]*worker, 0, len(p.live))
		for w := range p.live {
			workers = append(workers, w)
		}
		clear(p.live)
		p.idle = nil
		for _, ch := range p.waiters {
			ch <- grant{err: ErrClosed}
		}
		p.waiters = nil
		p.mu.Unlock()

		stopKills := context.AfterFunc(ctx, p.killCancel)
		errs := make([]error, len(workers))
		var wg sync.WaitGroup
		for i, w := range workers {
			wg.Go(func() { errs[i] = w.stop(ctx, p.b.cfg.ShutdownGrace) })
		}
		wg.Wait()
		p.bg.Wait()
		stopKills()
		p.killCancel()
		p.stopErr = errors.Join(errs...)
		close(p.stopped)
	})
	// A later caller waits for the first, whose context bounds the stop.
	<-p.stopped
	return p.stopErr
}

// execute runs one call on a leased worker.
func (p *pool) execute(ctx context.Context, req *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	if req == nil {
		req = &capabilityruntime.Request{}
	}
	params, err := pbvalue.FromMap(req.Params, "params")
	if err != nil {
		return nil, fmt.Errorf("process: %s: %w", p.spec.name(), err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.b.cfg.ExecuteTimeout)
		defer cancel()
	}
	id := req.ExecutionID
	if id == "" {
		id = newExecutionID()
	}
	w, err := p.lease(ctx)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	resp, err := w.client.Execute(ctx, &pb.ExecuteRequest{
		ExecutionId:   id,
		Params:        params,
		TimeoutMs:     max(1, time.Until(deadline).Milliseconds()),
		CorrelationId: req.CorrelationID,
	})
	if err != nil {
		// Cancelling a call stops only our side: the worker may still be
		// busy with it, so it never serves again; nor does one whose
		// connection or process failed.
		p.discard(w)
		return nil, p.callError(ctx, w, "execute", err)
	}
	p.release(w)
	out := &capabilityruntime.Response{Result: pbvalue.ToMap(resp.GetResult()), Error: resp.GetError()}
	if out.Result == nil {
		out.Result = map[string]any{}
	}
	if out.Error != "" {
		return out, &capabilityruntime.RuntimeError{Type: p.spec.typ, Version: p.spec.version, Message: out.Error}
	}
	return out, nil
}

// callError describes a failed RPC: the caller's context when it ended (or
// its deadline when the worker saw it pass first: the deadline travels
// rounded down), else ErrWorkerFailed.
func (p *pool) callError(ctx context.Context, w *worker, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("process: %s %s on worker pid %d: %w (%w)", p.spec.name(), op, w.proc.pid, context.Cause(ctx), err)
	}
	if _, ok := ctx.Deadline(); ok && status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("process: %s %s on worker pid %d: %w (%w)", p.spec.name(), op, w.proc.pid, context.DeadlineExceeded, err)
	}
	return fmt.Errorf("%w: %s %s on worker pid %d: %w", ErrWorkerFailed, p.spec.name(), op, w.proc.pid, err)
}

// health asks a worker (idle, or new) whether it is ready.
func (p *pool) health(ctx context.Context) error {
	w, err := p.lease(ctx)
	if err != nil {
		return err
	}
	resp, err := w.client.Health(ctx, &pb.HealthRequest{})
	if err != nil {
		p.discard(w)
		return p.callError(ctx, w, "health", err)
	}
	p.release(w)
	if !resp.GetReady() {
		return fmt.Errorf("%w: %s worker pid %d: %q", ErrUnhealthy, p.spec.name(), w.proc.pid, resp.GetMessage())
	}
	return nil
}

// newExecutionID returns 128 random bits in hex.
func newExecutionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// poolInstance is one holder's handle on a shared pool.
type poolInstance struct {
	p      *pool
	closed atomic.Bool
}

// Execute runs req on a worker of the pool. The call's deadline (or
// Config.ExecuteTimeout) is sent as timeout_ms and bounds the RPC; a failed
// RPC discards its worker. A non-empty Response.Error is returned with the
// Response as a *capabilityruntime.RuntimeError.
func (i *poolInstance) Execute(ctx context.Context, req *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	if i.closed.Load() {
		return nil, ErrClosed
	}
	return i.p.execute(ctx, req)
}

// Health asks a worker of the pool for its Health: an idle one, else one
// started for the purpose, else (all busy) the first to come free within
// ctx. It returns nil when the worker answers ready, an error wrapping
// ErrUnhealthy with the worker's message when it answers not ready. A worker
// whose Health call fails is discarded.
func (i *poolInstance) Health(ctx context.Context) error {
	if i.closed.Load() {
		return ErrClosed
	}
	return i.p.health(ctx)
}

// Close releases this instance's hold on the pool; the last holder's Close
// stops the pool's workers and waits for them, bounded by ctx. Later calls
// return nil.
func (i *poolInstance) Close(ctx context.Context) error {
	if i.closed.Swap(true) {
		return nil
	}
	return i.p.b.release(ctx, i.p)
}
