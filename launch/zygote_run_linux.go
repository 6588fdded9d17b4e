package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// runWarm runs the host of s forked from the zygote's server, with the
// guarantees of run: the same descriptors on 0–4 (the context and stdin
// as sealed memfds, stdout and stderr as pipes, the socket whose other
// end has SO_PASSCRED on), the same environment and argument vector, its
// own session, and the same supervision: the attempt deadline, SIGTERM
// then SIGKILL to its process group through its pidfd, the WaitDelay
// bound on its output and session after it exits. The exit status comes
// from the server, which reaps the host after killing its group's
// stragglers, and is checked against the pidfd. A *coldError means no
// host was started.
func (z *Zygote) runWarm(ctx context.Context, s spec) (hostRun, error) {
	l := z.l
	if z.spec.pw != nil {
		if err := z.spec.pw.match(s.lc); err != nil {
			return hostRun{}, err
		}
	}
	srv, err := z.acquire(ctx, s.provider)
	if errors.Is(err, ErrZygoteClosed) {
		return hostRun{}, err
	}
	if err != nil {
		// ctx ending while a server starts included: the cold launch then
		// stops its host at once, and the Outcome says so.
		return hostRun{}, &coldError{err}
	}
	defer z.release(srv)

	ctxFile, stdinFile, err := s.inputs()
	if err != nil {
		return hostRun{}, err
	}
	defer ctxFile.Close()
	defer stdinFile.Close()
	conn, childEnd, err := runtimeSocket()
	if err != nil {
		return hostRun{}, err
	}
	defer childEnd.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		conn.Close()
		return hostRun{}, fmt.Errorf("launch: stdout pipe: %w", err)
	}
	defer outW.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.Close()
		outR.Close()
		return hostRun{}, fmt.Errorf("launch: stderr pipe: %w", err)
	}
	defer errW.Close()

	dir := s.dir
	if dir == "" {
		dir = l.cfg.Dir
	}
	argv := append(append([]string{}, z.spec.rest...), s.args...)
	contain, egress, err := z.childContain(s, dir)
	if err != nil {
		conn.Close()
		outR.Close()
		errR.Close()
		return hostRun{}, err
	}
	env := l.cfg.Env
	if egress {
		// The child adds the proxy variables, naming its own listener.
		env = withoutProxyEnv(env)
	}
	req := map[string]any{"argv": bytesList(argv), "env": bytesList(env), "dir": []byte(dir),
		"orig_argv": bytesList(l.argv(s.args))}
	if contain != nil {
		req["contain"] = contain
	}
	files := []*os.File{stdinFile, outW, errW, ctxFile, childEnd}
	cg, procs, err := l.warmCgroup()
	if err != nil {
		conn.Close()
		outR.Close()
		errR.Close()
		return hostRun{}, err
	}
	// Every return kills what is left of the host's cgroup and removes
	// it; the normal end does so once the host has exited, below.
	defer l.endCgroup(cg)
	if procs != nil {
		req["cgroup"] = true
		files = append(files, procs)
	}
	start := time.Now()
	c, err := z.forkHost(srv, req, files, egress)
	// The server (and the child) hold their own copies now, or no one does.
	for _, f := range files {
		f.Close()
	}
	if err != nil {
		conn.Close()
		outR.Close()
		errR.Close()
		return hostRun{}, err
	}
	defer func() {
		c.pidfd.Close() // ends awaitPidfd
		<-c.done
	}()
	if egress {
		// The child may connect before the proxy serves: the kernel
		// queues its connection on the listener meanwhile.
		proxy, err := z.childEgress(s, c)
		if err != nil {
			// The host must not run without its way out: it is killed,
			// and its exit awaited, before the error is returned.
			srv.signal(c, unix.SIGKILL)
			if werr := srv.await(c); werr != nil {
				l.log.Warn("launch: a warm host without its egress proxy was lost", "pid", c.pid, "err", werr)
			}
			conn.Close()
			outR.Close()
			errR.Close()
			return hostRun{}, err
		}
		defer proxy.close()
	}
	if c.spare {
		z.mu.Lock()
		z.stats.Spares++
		z.mu.Unlock()
	}

	stdout := &headWriter{max: MaxResultBytes + 1}
	stderr := &tailWriter{max: l.cfg.StderrTailBytes}
	outDone, errDone := make(chan error, 1), make(chan error, 1)
	go func() { _, err := stdout.ReadFrom(outR); outDone <- err }()
	go func() { _, err := stderr.ReadFrom(errR); errDone <- err }()

	p := &Process{PID: c.pid, Warm: true}
	sctx, deadlineCtx, cancel := l.supervision(ctx, s.deadline, start)
	defer cancel()
	sv := startServing(ctx, s, conn, c.pid)
	defer sv.stop()

	exited := make(chan error, 1)
	go func() { exited <- srv.await(c) }()
	signal := func(sig syscall.Signal) { srv.signal(c, sig) }
	waitErr := l.stopSequence(sctx, deadlineCtx, c.pid, signal, exited, p)
	if p.Stopped == StopDeadline && ctx.Err() != nil {
		p.Stopped = StopCancelled
	}
	p.Elapsed = time.Since(start)
	if waitErr != nil {
		p.ExitCode, p.WaitErr = -1, waitErr
		l.log.Warn("launch: a warm host's exit status is unknown; it was killed", "pid", c.pid, "err", waitErr)
	} else {
		p.ExitCode = c.code
		if c.code < 0 {
			p.ExitCode, p.Signal = -1, syscall.Signal(-c.code)
		}
	}

	// Whatever the host left behind, in any session, ends with its
	// cgroup (Containment.Cgroup).
	l.endCgroup(cg)

	// As exec's WaitDelay: the output streams get the same bound after the
	// exit; a descendant still holding them is cut off.
	t := time.NewTimer(l.cfg.WaitDelay)
	for outDone != nil || errDone != nil {
		select {
		case <-outDone:
			outDone = nil
		case <-errDone:
			errDone = nil
		case <-t.C:
			outR.Close() // unblocks the readers
			errR.Close()
			if p.WaitErr == nil {
				p.WaitErr = exec.ErrWaitDelay
			}
		}
	}
	t.Stop()
	outR.Close()
	errR.Close()
	serveErr := sv.finish(l.cfg.WaitDelay)

	p.Stdout, p.StdoutBytes = stdout.result()
	p.StderrTail, p.StderrBytes = stderr.result()
	l.log.Debug("launch: warm host ended", "pid", c.pid, "exit", p.ExitCode, "signal", p.Signal,
		"stopped", p.Stopped, "killed", p.Killed, "elapsed", p.Elapsed)
	return hostRun{p, serveErr}, nil
}

// await returns nil once the server reported c's exit (in c.code) and
// the pidfd agrees, or an error wrapping ErrExitUnknown once the server
// was lost; then c has been killed, and has exited.
func (s *zserver) await(c *zchild) error {
	var report <-chan time.Time
	done := c.done
	for {
		select {
		case code := <-c.exit:
			return s.exited(c, code)
		case <-s.lost:
			select {
			case code := <-c.exit: // reported just before the loss
				return s.exited(c, code)
			default:
			}
			return s.abandon(c)
		case <-done:
			// It exited: its parent must say so soon.
			t := time.NewTimer(s.z.spec.cfg.ReplyTimeout)
			defer t.Stop()
			report, done = t.C, nil
		case <-report:
			s.lose(fmt.Errorf("it did not report the exit of host %d within %v", c.pid, s.z.spec.cfg.ReplyTimeout))
		}
	}
}

// exited takes the server's report of c's exit code, once checked.
func (s *zserver) exited(c *zchild, code int) error {
	c.code = code
	if err := s.checkExit(c); err != nil {
		s.lose(err)
		return s.abandon(c)
	}
	return nil
}

// checkExit checks the server's report of c's exit against its pidfd: the
// host must have exited, and, where the kernel keeps exit codes (Linux
// 6.15), with that code.
func (s *zserver) checkExit(c *zchild) error {
	if !pidfdExited(c.fd) {
		return fmt.Errorf("it reported the exit of host %d, which its pidfd shows running", c.pid)
	}
	if code, ok := pidfdExitCode(c.fd); ok && code != c.code {
		return fmt.Errorf("it reported exit code %d for host %d, whose pidfd says %d", c.code, c.pid, code)
	}
	return nil
}

// abandon kills c (its whole group, through its pidfd) once its server
// is lost, and waits for it to exit.
func (s *zserver) abandon(c *zchild) error {
	if err := c.kill(s.z.groupFlag); err != nil {
		s.z.l.log.Warn("launch: killing an abandoned warm host failed", "pid", c.pid, "err", err)
	}
	t := time.NewTimer(s.z.l.cfg.WaitDelay)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	}
	return fmt.Errorf("%w: %w", ErrExitUnknown, s.lostReason())
}

// bytesList returns ss as byte slices (JSON base64, so that arguments and
// environment entries that are not UTF-8 arrive intact).
func bytesList(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
