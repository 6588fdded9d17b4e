//go:build unix

package process

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
	"github.com/zeoruntime/runtimeipc/internal/childproc"
)

// stderrTail is how much of a child's standard error is kept for errors.
const stderrTail = 4 << 10

// pipeWaitDelay bounds the wait for a child's output pipes after it exited,
// when a descendant that escaped its process group still holds them.
const pipeWaitDelay = time.Second

// child is one started process, leader of its own process group, reaped
// exactly once by its own goroutine.
type child struct {
	cmd    *exec.Cmd
	pid    int
	stderr *tailBuffer
	cg     *cgroup.Group // the process's own cgroup; nil without the layer
	log    *slog.Logger
	// exited is closed once the process is reaped and its output pipes are
	// drained; waitErr is set before. gone is set as soon as the exit is
	// observed, before the reap, so that a dead worker is never leased in
	// the window while its pipes drain.
	exited  chan struct{}
	waitErr error
	gone    atomic.Bool

	mu      sync.Mutex // guards reaping
	reaping bool       // the group id may no longer be ours: never signal it
}

// startChild starts path as the leader of a new process group, with
// descriptors 0–2 only (every inherited descriptor of this process is marked
// close-on-exec first), and starts its reaper. With a cgroup parent, the
// process starts inside a fresh cgroup of its own (clone3 into it), which
// the reaper kills and removes once the process exited.
func startChild(cg *cgroup.Parent, log *slog.Logger, path, dir string, env []string, stdin io.Reader, stdout io.Writer) (*child, error) {
	tail := &tailBuffer{max: stderrTail}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        []string{path},
		Dir:         dir,
		Env:         env,
		Stdin:       stdin,
		Stdout:      stdout,
		Stderr:      tail,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		WaitDelay:   pipeWaitDelay,
	}
	var g *cgroup.Group
	if cg != nil {
		var err error
		if g, err = cg.New("zeo-process"); err != nil {
			return nil, fmt.Errorf("the process's cgroup: %w", err)
		}
		intoCgroup(cmd.SysProcAttr, g)
	}
	// A descriptor this process inherited without close-on-exec would
	// otherwise reach the runtime; Go's own are close-on-exec already. A
	// failed sweep is no reason to refuse the start: it can only fail on a
	// kernel without close_range and without /proc.
	_ = childproc.SweepCloexec()
	if err := cmd.Start(); err != nil {
		if g != nil {
			_ = g.Close(context.Background()) // empty: nothing started in it
		}
		return nil, err
	}
	c := &child{cmd: cmd, pid: cmd.Process.Pid, stderr: tail, cg: g, log: log, exited: make(chan struct{})}
	go c.reap()
	return c, nil
}

// reap waits for the leader to exit. Where the exit can be observed without
// reaping (Linux), the rest of the group is killed first, while the leader's
// unreaped pid still pins the group id, and then the whole cgroup, so that
// no descendant outlives it, in the group or not.
func (c *child) reap() {
	if childproc.CanAwaitUnreaped && childproc.AwaitExit(c.cmd.Process) == nil {
		c.gone.Store(true)
		c.mu.Lock()
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		c.reaping = true
		c.mu.Unlock()
		c.endCgroup() // before the reap: a descendant may hold the output pipes Wait drains
		c.waitErr = c.cmd.Wait()
	} else {
		c.waitErr = c.cmd.Wait()
		c.gone.Store(true)
		c.mu.Lock()
		c.reaping = true
		c.mu.Unlock()
		c.endCgroup()
	}
	close(c.exited)
}

// endCgroup kills what is left in the child's cgroup and removes it,
// within killWait; a cgroup still populated then (a process stuck in the
// kernel) is logged and left in place.
func (c *child) endCgroup() {
	if c.cg == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	if err := c.cg.Close(ctx); err != nil {
		c.log.Warn("process: ending the runtime process's cgroup failed; it is left in place", "pid", c.pid, "cgroup", c.cg.Dir(), "err", err)
	}
}

// signalGroup sends sig to the child's process group while the group id is
// still the child's.
func (c *child) signalGroup(sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reaping {
		_ = syscall.Kill(-c.pid, sig)
	}
}

// exitCode is the exit status once exited is closed; -1 for a signal.
func (c *child) exitCode() int {
	if c.cmd.ProcessState == nil {
		return -1
	}
	return c.cmd.ProcessState.ExitCode()
}

// waitExited waits up to d for the child to be reaped.
func (c *child) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(p) >= t.max {
		p = p[len(p)-t.max:]
		t.b = append(t.b[:0], p...)
		return n, nil
	}
	if over := len(t.b) + len(p) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	t.b = append(t.b, p...)
	return n, nil
}

// ReadFrom copies r through Write in small reads, so that exec's copy of a
// child's stderr does not allocate its 32 KiB buffer.
func (t *tailBuffer) ReadFrom(r io.Reader) (int64, error) { return readFrom(t, r) }

// readFrom feeds w from r in 4 KiB reads until EOF or a write error.
func readFrom(w io.Writer, r io.Reader) (int64, error) {
	buf := make([]byte, 4<<10)
	var n int64
	for {
		m, err := r.Read(buf)
		if m > 0 {
			k, werr := w.Write(buf[:m])
			n += int64(k)
			if werr != nil {
				return n, werr
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// hasExited reports whether the child has been reaped.
func (c *child) hasExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// isGone reports whether the child is known to have exited, reaped or not:
// a worker that is gone must not be leased, even while its pipes drain.
func (c *child) isGone() bool {
	return c.gone.Load()
}
