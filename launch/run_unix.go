//go:build linux || darwin

package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/childproc"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// runtimeSocket returns the Runtime's end of a new socketpair as a
// connection, with SO_PASSCRED already on, and the child's end as a file
// for the child's FD 4. Credentials must be on before the child can write:
// the kernel attaches SCM_CREDENTIALS only to bytes sent after SO_PASSCRED
// is set on the receiving end, and the session checks every frame's sender
// (doc/design.md, “Peer identity”). ipc.EnablePassCred is the one place
// that sets it.
func runtimeSocket() (net.Conn, *os.File, error) {
	fds, err := childproc.Socketpair()
	if err != nil {
		return nil, nil, fmt.Errorf("launch: socketpair: %w", os.NewSyscallError("socketpair", err))
	}
	parentEnd := os.NewFile(uintptr(fds[0]), "zeo-runtime")
	childEnd := os.NewFile(uintptr(fds[1]), "zeo-host")
	conn, err := net.FileConn(parentEnd) // dups; never .Fd(), which would make it blocking
	parentEnd.Close()
	if err != nil {
		childEnd.Close()
		return nil, nil, fmt.Errorf("launch: wrapping the Runtime socket: %w", err)
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		conn.Close()
		childEnd.Close()
		return nil, nil, fmt.Errorf("launch: the Runtime socket is a %T, not a *net.UnixConn", conn)
	}
	if err := ipc.EnablePassCred(uc); err != nil {
		conn.Close()
		childEnd.Close()
		return nil, nil, fmt.Errorf("launch: socket credentials: %w", err)
	}
	return uc, childEnd, nil
}

// run starts the process described by s, supervises it to its end and reaps
// it exactly once. It returns what the run left whenever the process
// started, or a start error.
//
// Order of events, and why:
//  1. FD 3 and stdin are sealed in-memory files (an unlinked temp file on
//     darwin) at offset 0, so the host can read them to EOF in any order
//     and a large context can never deadlock on a pipe.
//  2. The socketpair is created SOCK_CLOEXEC; only the child's end is
//     placed at FD 4, and the parent closes its copy right after start.
//  3. The child gets a new session (so its own process group, pgid = pid)
//     and exactly FDs 0–4: Go passes nothing else, the sweep marks any
//     stray inheritable descriptor of ours close-on-exec first, and the
//     child itself closes every other number up to childproc.ChildFDBound
//     before the exec, so that one opened meanwhile stays out too. With
//     Config.User it drops its supplementary groups, then sets its gid and
//     uid, before the exec.
//  4. Group signals are only ever sent while the leader is unreaped (alive
//     or a zombie), so the pgid cannot have been reused by then: on Linux
//     the exit is awaited on a pidfd in the runtime's poller and observed
//     with waitid(WNOWAIT) (childproc.AwaitExit), the group's stragglers
//     are SIGKILLed, and only then is the leader reaped.
//  5. With the cgroup layer (Containment.Cgroup) the child starts inside a
//     cgroup of its own (clone3 into it), and once the leader has exited
//     everything left in it is killed (cgroup.kill), awaited and the
//     cgroup removed, before the reap: a descendant that left the group
//     (setsid) ends too.
//  6. exec's WaitDelay bounds the wait for stdout/stderr EOF when a
//     descendant escaped the group (and there is no cgroup layer) with
//     them; the IPC session gets the same bound after exit before it is
//     cancelled.
func (l *Launcher) run(ctx context.Context, s spec) (hostRun, error) {
	ctxFile, stdinFile, err := s.inputs()
	if err != nil {
		return hostRun{}, err
	}
	defer ctxFile.Close()
	defer stdinFile.Close()

	extra := []*os.File{ctxFile}
	var childEnd *os.File
	var conn net.Conn
	if s.serve != nil {
		if conn, childEnd, err = runtimeSocket(); err != nil {
			return hostRun{}, err
		}
		defer childEnd.Close()
		extra = append(extra, childEnd)
	}

	stdout := &headWriter{max: MaxResultBytes + 1}
	stderr := &tailWriter{max: l.cfg.StderrTailBytes}
	argv := l.argv(s.args)
	dir := s.dir
	if dir == "" {
		dir = l.cfg.Dir
	}
	cs, err := l.containPrepare(s, argv, dir, 3+len(extra))
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return hostRun{}, err
	}
	if cs != nil {
		defer cs.close()
		extra = append(extra, cs.files...)
	}
	cg, err := l.newCgroup("host")
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return hostRun{}, err
	}
	// Every return kills what is left of the host's cgroup and removes
	// it; the normal end does so before the reap, below.
	defer l.endCgroup(cg)
	cmd := l.command(argv, dir, stdinFile, stdout, stderr, extra)
	l.prepare(cmd)
	if cs != nil {
		cs.apply(cmd, l.cfg.User)
	}
	intoCgroup(cmd.SysProcAttr, cg)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if conn != nil {
			conn.Close() // serve never got it
		}
		return hostRun{}, fmt.Errorf("launch: starting %s: %w", l.cfg.Interpreter, cs.startError(err))
	}
	pid := cmd.Process.Pid
	p := &Process{PID: pid}
	// The child holds its own copies now.
	ctxFile.Close()
	stdinFile.Close()

	if s.serve != nil {
		childEnd.Close()
	}
	if cs != nil {
		// The host runs only once the init has applied the whole policy;
		// an init that could not is reaped here and the host never ran.
		cs.started()
		if err := cs.await(ctx); err != nil {
			_ = signalGroup(pid, syscall.SIGKILL)
			_ = cmd.Wait()
			if conn != nil {
				conn.Close()
			}
			return hostRun{}, err
		}
		// The host starts now: its grace floor and Elapsed count from
		// here, not from the init's start.
		start = time.Now()
	}

	sctx, deadlineCtx, cancel := l.supervision(ctx, s.deadline, start)
	defer cancel()
	sv := startServing(ctx, s, conn, pid)
	defer sv.stop()

	exited := make(chan error, 1)
	reaped := false
	var waitErr error
	if childproc.CanAwaitUnreaped {
		go func() { exited <- childproc.AwaitExit(cmd.Process) }()
	} else {
		go func() { exited <- cmd.Wait() }()
		reaped = true
	}
	group := func(sig syscall.Signal) { _ = signalGroup(pid, sig) }
	if err := l.stopSequence(sctx, deadlineCtx, pid, group, exited, p); err != nil {
		if reaped {
			waitErr = err
		} else {
			l.log.Warn("launch: waiting for the host without reaping failed", "pid", pid, "err", err)
		}
	}
	if p.Stopped == StopDeadline && ctx.Err() != nil {
		p.Stopped = StopCancelled
	}
	if !reaped {
		// The leader is a zombie: the group id is still ours. Kill whatever
		// the host left behind, in its group and in its cgroup (which a
		// zombie does not populate), then reap.
		_ = signalGroup(pid, syscall.SIGKILL)
		l.endCgroup(cg)
		waitErr = cmd.Wait()
	}
	p.Elapsed = time.Since(start)

	// The host closes its socket before exiting; give the session the same
	// bound as the output streams to notice, then stop it.
	serveErr := sv.finish(l.cfg.WaitDelay)

	if st := cmd.ProcessState; st != nil {
		p.ExitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.Signal = ws.Signal()
		}
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		p.WaitErr = waitErr
	}
	p.Stdout, p.StdoutBytes = stdout.result()
	p.StderrTail, p.StderrBytes = stderr.result()
	l.log.Debug("launch: host ended", "pid", pid, "exit", p.ExitCode, "signal", p.Signal,
		"stopped", p.Stopped, "killed", p.Killed, "elapsed", p.Elapsed)
	return hostRun{p, serveErr}, nil
}

// inputs returns the context (FD 3) and stdin of s as sealed files at
// offset 0 (see run, step 1).
func (s spec) inputs() (ctxFile, stdinFile *os.File, err error) {
	ctxFile, err = sealedFile("zeo-launch-context", s.fd3)
	if err != nil {
		return nil, nil, fmt.Errorf("launch: context descriptor: %w", err)
	}
	stdinFile, err = sealedFile("zeo-launch-stdin", s.stdin)
	if err != nil {
		ctxFile.Close()
		return nil, nil, fmt.Errorf("launch: stdin: %w", err)
	}
	return ctxFile, stdinFile, nil
}

// prepare makes cmd start as every process of the launcher starts (see
// run, steps 2 and 3): in its own session, with exactly the descriptors
// cmd names (the sweep marks any stray inheritable one of ours
// close-on-exec, and the child closes every other number up to
// childproc.ChildFDBound before the exec), and as Config.User.
func (l *Launcher) prepare(cmd *exec.Cmd) {
	if !l.cfg.LeaveParentFDs {
		if err := childproc.SweepCloexec(); err != nil {
			l.log.Warn("launch: could not mark inherited descriptors close-on-exec", "err", err)
		}
	}
	// The child closes every other descriptor number up to the bound
	// itself, between fork and exec: a nil ExtraFiles entry is closed when
	// the process starts. That keeps out what the sweep cannot: a
	// descriptor another goroutine opens without close-on-exec while the
	// child forks.
	bound, err := childproc.ChildFDBound()
	if err != nil {
		bound = 3 + len(cmd.ExtraFiles) + childproc.ChildCloseSlack
		l.log.Warn("launch: could not list this process's descriptors; the child closes a fixed range", "err", err, "up_to", bound)
	}
	for 3+len(cmd.ExtraFiles) < bound {
		cmd.ExtraFiles = append(cmd.ExtraFiles, nil)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if u := l.cfg.User; u != nil {
		// Groups empty and NoSetGroups false: setgroups(0) clears the
		// supplementary groups before setgid and setuid.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
}

// signalGroup sends sig to the process group pgid. A group that no longer
// exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := unix.Kill(-pgid, sig)
	if err == unix.ESRCH {
		return nil
	}
	return err
}
