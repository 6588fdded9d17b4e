package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// stdoutPrefix is how much of a bad stdout a CallError keeps.
const stdoutPrefix = 256

// instance is what Start returns: a handle on a runtime group, closed on its
// own.
type instance struct {
	b *Backend
	g *runtimeGroup
	// ctx is cancelled by Close (and, through Backend.closeCtx, by the
	// Backend's Close): every call of this instance watches it.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // guards closed and calls.Add
	closed bool
	calls  sync.WaitGroup
}

// Execute runs one fresh instance of the module: req as JSON on its stdin,
// its stdout read as exactly one Response, at most Config.MaxResponseBytes
// of it. It first waits for one of the runtime's MaxWorkers slots, within
// ctx. The module is stopped when ctx ends (or after Config.ExecuteTimeout
// when ctx has no deadline), when stdout overflows, or when the instance or
// Backend is closed; the call then fails with a *CallError carrying the
// cause. A module that exits non-zero fails with ErrExitStatus whatever it
// wrote, and one that traps with ErrTrap. A non-empty Response.Error is
// returned with the Response as a *capabilityruntime.RuntimeError.
//
// Only ctx's deadline and cancellation reach the module: its values never
// reach wazero (the instance's context holds the backend's memory allocator
// and nothing else), so no hook carried in a context (wazero's experimental
// sockets, listeners, allocators) can change what the module may do.
func (in *instance) Execute(ctx context.Context, req *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	name := in.g.spec.name()
	if req == nil {
		req = &capabilityruntime.Request{}
	}
	if err := pbvalue.Check(req.Params, "params"); err != nil {
		return nil, fmt.Errorf("wasm: %s: %w", name, err)
	}
	body, err := json.Marshal(capabilityruntime.Request{Params: req.Params})
	if err != nil {
		return nil, fmt.Errorf("wasm: %s: encoding the request: %w", name, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, in.b.cfg.ExecuteTimeout)
		defer cancel()
	}
	if !in.begin() {
		return nil, ErrClosed
	}
	defer in.end()

	select {
	case in.g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, &CallError{Runtime: name, Err: context.Cause(ctx)}
	case <-in.ctx.Done():
		return nil, &CallError{Runtime: name, Err: ErrClosed}
	}
	defer func() { <-in.g.slots }()
	in.b.running(1)
	defer in.b.running(-1)

	// callCtx ends with the first of: the caller's context, this
	// instance's or the Backend's Close, a stdout overflow. Its cause says
	// which.
	callCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	unwatch := context.AfterFunc(in.ctx, func() { stop(ErrClosed) })
	defer unwatch()

	stdout := &limitBuffer{max: in.b.cfg.MaxResponseBytes, over: func() { stop(ErrOutputTooLarge) }}
	stderr := &tailBuffer{max: in.b.cfg.StderrTailBytes}
	mcfg := in.g.base.
		WithStdin(bytes.NewReader(body)).
		WithStdout(stdout).
		WithStderr(stderr).
		WithNanosleep(func(ns int64) { sleep(callCtx, ns) })
	mod, runErr := in.b.rt.InstantiateModule(callContext{callCtx, in.b.values}, in.g.mod.mod, mcfg)
	if mod != nil {
		// _start returned without proc_exit: the module is still open.
		_ = mod.Close(context.Background())
	}

	ce := &CallError{Runtime: name, Stderr: stderr.String(), StderrHead: stderr.Head()}
	var exit *sys.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exit) && stoppedByContext(exit) && callCtx.Err() != nil:
		ce.Err = context.Cause(callCtx)
		return nil, ce
	case errors.As(runErr, &exit):
		ce.Err, ce.ExitCode = ErrExitStatus, exit.ExitCode()
		if stdout.overflowed() {
			ce.Err, ce.ExitCode = ErrOutputTooLarge, 0
		}
		return nil, ce
	case callCtx.Err() != nil:
		ce.Err = context.Cause(callCtx)
		return nil, ce
	default:
		ce.Err, ce.Detail = ErrTrap, runErr.Error()
		return nil, ce
	}
	if stdout.overflowed() {
		ce.Err = ErrOutputTooLarge
		return nil, ce
	}
	out := stdout.Bytes()
	resp, err := parseResponse(out)
	if err != nil {
		ce.Err = fmt.Errorf("%w: %w", ErrBadOutput, err)
		ce.Stdout = string(out[:min(len(out), stdoutPrefix)])
		return nil, ce
	}
	if resp.Error != "" {
		return resp, &capabilityruntime.RuntimeError{Type: in.g.spec.typ, Version: in.g.spec.version, Message: resp.Error}
	}
	return resp, nil
}

// stoppedByContext reports whether wazero ended the module because its
// context was done (WithCloseOnContextDone), not because the module exited.
func stoppedByContext(e *sys.ExitError) bool {
	c := e.ExitCode()
	return c == sys.ExitCodeContextCanceled || c == sys.ExitCodeDeadlineExceeded
}

// sleep is the module's nanosleep (poll_oneoff on a clock): the real clock,
// cut short when the call ends, so that a module asleep is stopped at its
// deadline like one that computes.
func sleep(ctx context.Context, ns int64) {
	if ns <= 0 {
		return
	}
	t := time.NewTimer(time.Duration(ns))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func (in *instance) begin() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed || !in.b.begin() {
		return false
	}
	in.calls.Add(1)
	return true
}

func (in *instance) end() {
	in.b.calls.Done()
	in.calls.Done()
}

// Health reports whether the instance can take a call: it and its Backend
// are open, so its compiled module is in memory. A module keeps no state
// between calls, so there is nothing else to ask.
func (in *instance) Health(context.Context) error {
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed || in.ctx.Err() != nil {
		return ErrClosed
	}
	return nil
}

// Close refuses further calls, stops the calls of this instance in flight,
// waits for them and drops its hold on the runtime: the last instance of a
// type@version frees its compiled code. Later calls return nil; other
// instances, of this runtime or another, are not affected.
func (in *instance) Close(context.Context) error {
	in.mu.Lock()
	first := !in.closed
	in.closed = true
	in.mu.Unlock()
	in.cancel()
	in.calls.Wait()
	if first {
		in.b.dropHolder(in.g)
	}
	return nil
}

// baseModuleConfig is what every call of ls's module is given besides its
// stdin, stdout, stderr and sleep: the same for every call, so built once
// per runtime group. No WithFSConfig: the module has no preopened
// directory, so no path resolves; and wazero offers sockets only through a
// context value, which callContext withholds.
func baseModuleConfig(ls launchSpec) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName(""). // anonymous, so that instances of one module can run at once
		WithArgs(filepath.Base(ls.module)).
		WithEnv(capabilityruntime.EnvProtocol, capabilityruntime.ProtocolJSONV1).
		WithEnv(capabilityruntime.EnvType, ls.typ).
		WithEnv(capabilityruntime.EnvVersion, ls.version).
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader)
}

var _ capabilityruntime.BackendInstance = (*instance)(nil)
