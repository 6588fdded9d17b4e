//go:build unix

package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// stdoutPrefix is how much of a bad stdout a CallError keeps.
const stdoutPrefix = 256

// oneShot is an instance of the JSON protocol: one process per call.
type oneShot struct {
	b    *Backend
	spec launchSpec

	mu      sync.Mutex // guards closed and calls.Add
	closed  bool
	closing chan struct{} // closed by Close: calls in flight are killed
	calls   sync.WaitGroup
}

// Execute runs one process: req as JSON on its stdin, its stdout read as
// exactly one Response, at most Config.MaxResponseBytes of it. The process
// runs in its own process group, which is killed when ctx ends (or after
// Config.ExecuteTimeout when ctx has no deadline), when stdout overflows, or
// when the instance or backend is closed; the call then fails with a
// *CallError. A process that exits non-zero fails with ErrExitStatus
// whatever it wrote. A non-empty Response.Error is returned with the
// Response as a *capabilityruntime.RuntimeError.
func (o *oneShot) Execute(ctx context.Context, req *capabilityruntime.Request) (*capabilityruntime.Response, error) {
	if req == nil {
		req = &capabilityruntime.Request{}
	}
	if err := pbvalue.Check(req.Params, "params"); err != nil {
		return nil, fmt.Errorf("process: %s: %w", o.spec.name(), err)
	}
	body, err := json.Marshal(capabilityruntime.Request{Params: req.Params})
	if err != nil {
		return nil, fmt.Errorf("process: %s: encoding the request: %w", o.spec.name(), err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.b.cfg.ExecuteTimeout)
		defer cancel()
	}
	if !o.begin() {
		return nil, ErrClosed
	}
	defer o.end()

	stdout := &limitBuffer{max: o.b.cfg.MaxResponseBytes, over: make(chan struct{})}
	proc, err := startChild(o.b.cg, o.b.log, o.spec.entrypoint, o.spec.rootDir, o.b.env(o.spec, "", ""), bytes.NewReader(body), stdout)
	if err != nil {
		return nil, &CallError{Runtime: o.spec.name(), Err: fmt.Errorf("starting %s: %w", o.spec.entrypoint, err)}
	}
	var cause error
	select {
	case <-proc.exited:
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-stdout.over:
		cause = ErrOutputTooLarge
	case <-o.closing:
		cause = ErrClosed
	case <-o.b.closing:
		cause = ErrClosed
	}
	if cause != nil && !proc.hasExited() {
		proc.signalGroup(syscall.SIGKILL)
		proc.waitExited(killWait)
	} else {
		cause = nil // it finished on its own: judge what it left
	}
	ce := &CallError{Runtime: o.spec.name(), ExitCode: proc.exitCode(), Stderr: proc.stderr.String()}
	out := stdout.Bytes()
	switch {
	case cause != nil:
		ce.Err = cause
		return nil, ce
	case stdout.overflowed():
		ce.Err = ErrOutputTooLarge
		return nil, ce
	case ce.ExitCode != 0:
		ce.Err = ErrExitStatus
		return nil, ce
	}
	resp, err := parseResponse(out)
	if err != nil {
		ce.Err = fmt.Errorf("%w: %s", ErrBadOutput, err)
		ce.Stdout = string(out[:min(len(out), stdoutPrefix)])
		return nil, ce
	}
	if resp.Error != "" {
		return resp, &capabilityruntime.RuntimeError{Type: o.spec.typ, Version: o.spec.version, Message: resp.Error}
	}
	return resp, nil
}

func (o *oneShot) begin() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.b.mu.Lock()
	defer o.b.mu.Unlock()
	if o.b.closed {
		return false
	}
	o.calls.Add(1)
	o.b.calls.Add(1)
	return true
}

func (o *oneShot) end() {
	o.b.calls.Done()
	o.calls.Done()
}

// parseResponse decodes the runtime's untrusted stdout
// (capabilityruntime.ParseResponse).
func parseResponse(b []byte) (*capabilityruntime.Response, error) {
	return capabilityruntime.ParseResponse(b)
}

// Health reports whether the entrypoint is still an executable regular file;
// a one-shot instance has no process to ask between calls.
func (o *oneShot) Health(context.Context) error {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return ErrClosed
	}
	fi, err := os.Stat(o.spec.entrypoint)
	if err != nil {
		return fmt.Errorf("process: %s: entrypoint: %w", o.spec.name(), err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("process: %s: entrypoint %s is not an executable file", o.spec.name(), o.spec.entrypoint)
	}
	return nil
}

// Close refuses further calls, kills the process groups of calls in flight
// and waits for them to be reaped. Later calls return nil.
func (o *oneShot) Close(context.Context) error {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.closing)
	}
	o.mu.Unlock()
	o.calls.Wait()
	return nil
}

// limitBuffer collects at most max bytes; a write past that closes over and
// fails, which stops exec's copy.
type limitBuffer struct {
	mu   sync.Mutex
	max  int
	buf  bytes.Buffer
	over chan struct{}
	hit  bool
}

var errOverflow = errors.New("process: output limit reached")

func (l *limitBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); len(p) > room {
		l.buf.Write(p[:max(room, 0)])
		if !l.hit {
			l.hit = true
			close(l.over)
		}
		return max(room, 0), errOverflow
	}
	return l.buf.Write(p)
}

// ReadFrom copies r through Write in small reads (see tailBuffer.ReadFrom).
func (l *limitBuffer) ReadFrom(r io.Reader) (int64, error) { return readFrom(l, r) }

func (l *limitBuffer) overflowed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hit
}

func (l *limitBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Bytes()
}

var _ capabilityruntime.BackendInstance = (*oneShot)(nil)
