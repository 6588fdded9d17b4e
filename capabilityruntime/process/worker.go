//go:build unix

package process

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
)

// Names inside a worker's private directory.
const (
	socketName = "capability-runtime.sock"
	readyName  = "ready"
	dirPattern = "neuron-capability-runtime-*"
)

// maxSocketPath is the longest socket path every Unix accepts (sun_path is
// 104 bytes on the BSDs, 108 on Linux, both counting the final NUL).
const maxSocketPath = 103

// Ready-file polling starts fast, so that a quick worker is not held back,
// and backs off to upstream's 50 ms.
const (
	readyPollFirst = 200 * time.Microsecond
	readyPollMax   = 50 * time.Millisecond
)

// killWait bounds the wait for a worker to be reaped after SIGKILL.
const killWait = 5 * time.Second

// worker is one long-lived runtime process and its gRPC connection.
type worker struct {
	proc     *child
	dir      string // private directory: socket and ready file
	conn     *grpc.ClientConn
	client   pb.CapabilityRuntimeServiceClient
	features []string
	log      *slog.Logger

	stopOnce sync.Once
	stopped  chan struct{}
	stopErr  error
}

// startWorker starts one worker and returns it initialized, or an error and
// no process: a worker that fails to start is killed and reaped first.
func (p *pool) startWorker(ctx context.Context) (*worker, error) {
	s := p.spec
	fail := func(w *worker, err error) error {
		se := &StartError{Runtime: s.name(), Err: err}
		if w != nil {
			se.PID = w.proc.pid
			w.kill()
			se.Stderr = w.proc.stderr.String()
		}
		return se
	}
	dir, err := os.MkdirTemp(p.b.cfg.TempDir, dirPattern)
	if err != nil {
		return nil, fail(nil, fmt.Errorf("worker directory: %w", err))
	}
	sock, ready := filepath.Join(dir, socketName), filepath.Join(dir, readyName)
	if len(sock) > maxSocketPath {
		os.RemoveAll(dir)
		return nil, fail(nil, fmt.Errorf("socket path %s is longer than %d bytes: use a shorter Config.TempDir", sock, maxSocketPath))
	}
	proc, err := startChild(p.b.cg, p.b.log, s.entrypoint, s.rootDir, p.b.env(s, sock, ready), nil, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fail(nil, err)
	}
	w := &worker{proc: proc, dir: dir, log: p.b.log.With("runtime", s.name(), "pid", proc.pid), stopped: make(chan struct{})}

	// One bound for the whole start: the caller's deadline, at most
	// StartTimeout, and the pool's closing.
	sctx, cancel := context.WithTimeout(ctx, p.b.cfg.StartTimeout)
	defer cancel()
	defer context.AfterFunc(p.closedCtx, cancel)()
	startErr := func(stage error) error {
		switch {
		case p.closedCtx.Err() != nil:
			return ErrClosed
		case errors.Is(sctx.Err(), context.DeadlineExceeded):
			return fmt.Errorf("%w: %w", stage, context.Cause(sctx))
		default:
			return context.Cause(ctx)
		}
	}

	if err := w.awaitReady(sctx, ready); err != nil {
		if errors.Is(err, ErrExited) {
			return nil, fail(w, err)
		}
		return nil, fail(w, startErr(ErrNotReady))
	}
	conn, err := grpc.NewClient("unix://"+sock,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(p.b.cfg.MaxResponseBytes)),
	)
	if err != nil {
		return nil, fail(w, fmt.Errorf("connecting to %s: %w", sock, err))
	}
	w.conn, w.client = conn, pb.NewCapabilityRuntimeServiceClient(conn)
	resp, err := w.client.Initialize(sctx, &pb.InitializeRequest{
		ProtocolVersion: s.protocol,
		Metadata: map[string]string{
			"capability_runtime_type":    s.typ,
			"capability_runtime_version": s.version,
		},
	})
	if err != nil {
		if sctx.Err() != nil {
			return nil, fail(w, startErr(ErrInitialize))
		}
		return nil, fail(w, fmt.Errorf("%w: %w", ErrInitialize, err))
	}
	if got := resp.GetProtocolVersion(); got != s.protocol {
		return nil, fail(w, &ProtocolError{Want: s.protocol, Got: got})
	}
	w.features = resp.GetFeatures()
	w.log.Debug("capability runtime worker ready", "features", w.features)
	return w, nil
}

// awaitReady polls for the ready file until it exists, the process exits,
// or ctx ends.
func (w *worker) awaitReady(ctx context.Context, ready string) error {
	delay := readyPollFirst
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		if _, err := os.Stat(ready); err == nil {
			return nil
		}
		select {
		case <-w.proc.exited:
			return fmt.Errorf("%w (exit status %d)", ErrExited, w.proc.exitCode())
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, readyPollMax)
		t.Reset(delay)
	}
}

// kill ends a worker that never served: SIGKILL to its group, then reaped,
// its connection closed and its directory removed.
func (w *worker) kill() {
	w.stopOnce.Do(func() {
		w.proc.signalGroup(syscall.SIGKILL)
		w.proc.waitExited(killWait)
		w.release()
		close(w.stopped)
	})
	<-w.stopped
}

// release frees what the worker holds besides its process.
func (w *worker) release() {
	if w.conn != nil {
		w.conn.Close()
	}
	os.RemoveAll(w.dir)
}

// stop ends a worker politely first: a Shutdown call and up to grace for it
// to exit, then SIGTERM to its process group and up to grace again, then
// SIGKILL. When ctx ends, the polite phases are cut short and it goes
// straight to SIGKILL. It returns once the process is reaped (or killWait
// after SIGKILL), and returns the first caller's result to every caller.
func (w *worker) stop(ctx context.Context, grace time.Duration) error {
	w.stopOnce.Do(func() {
		w.stopErr = w.shutdown(ctx, grace)
		w.release()
		close(w.stopped)
	})
	<-w.stopped
	return w.stopErr
}

func (w *worker) shutdown(ctx context.Context, grace time.Duration) error {
	p := w.proc
	wait := func(d time.Duration) bool {
		if p.hasExited() {
			return true
		}
		t := time.NewTimer(max(d, 0))
		defer t.Stop()
		select {
		case <-p.exited:
			return true
		case <-t.C:
		case <-ctx.Done():
		}
		return p.hasExited()
	}
	if w.client != nil && ctx.Err() == nil && !p.hasExited() {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, grace)
		_, err := w.client.Shutdown(rctx, &pb.ShutdownRequest{TimeoutMs: grace.Milliseconds()})
		cancel()
		if err == nil && wait(grace-time.Since(start)) {
			return nil
		}
	}
	if ctx.Err() == nil && !p.hasExited() {
		w.log.Warn("capability runtime worker did not stop after Shutdown; sending SIGTERM", "grace", grace)
		p.signalGroup(syscall.SIGTERM)
		if wait(grace) {
			return nil
		}
	}
	if p.hasExited() {
		return nil
	}
	w.log.Warn("capability runtime worker still alive; sending SIGKILL", "context_done", ctx.Err() != nil)
	p.signalGroup(syscall.SIGKILL)
	if !p.waitExited(killWait) {
		return fmt.Errorf("process: worker pid %d was not reaped within %v of SIGKILL", p.pid, killWait)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("process: worker pid %d killed when the stop's context ended: %w", p.pid, context.Cause(ctx))
	}
	return fmt.Errorf("%w: pid %d outlived %v after Shutdown and %v after SIGTERM", ErrKilled, p.pid, grace, grace)
}

var _ capabilityruntime.BackendInstance = (*poolInstance)(nil)
