package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/childproc"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// zserver is one running fork server and the launcher's end of its
// control socket (the messages are drawn in zygote.py). A server that
// dies, stops answering in time or answers wrongly is lost: it is killed
// at once, and every invocation waiting on it fails.
type zserver struct {
	z        *Zygote
	cmd      *os.Process
	pid      int
	conn     *net.UnixConn
	digest   canon.Digest // the environment digest it was started for
	provider string       // the provider package it was started for
	started  time.Time
	out      *tailWriter // its stdout and stderr, for diagnostics
	// Set once it is ready: the modules it preloaded, and whether they
	// are the host's discovered closure.
	preloaded  []string
	discovered bool
	pw         *ProviderWarmStats // a provider-warm server's report

	// Pool fields, guarded by z.mu.
	live    int  // reservations (acquire) not yet released
	forks   int  // hosts forked, or reserved to be
	retired bool // no new forks; lost once live is 0

	wmu sync.Mutex // one write at a time on conn

	mu       sync.Mutex // guards the fields below
	nextID   uint64
	pending  map[uint64]zwait // fork requests awaiting an answer
	children map[int]*zchild  // hosts forked and not yet reported ended
	lostErr  error
	lost     chan struct{} // closed when lostErr is set
}

// zchild is a host forked by a server.
type zchild struct {
	pid   int
	pidfd *os.File      // nonblocking, in the netpoller
	spare bool          // it was the server's spare
	exit  chan int      // the exit code the server reports (< 0: -signal)
	code  int           // set from exit
	fd    int           // pidfd's number, for ioctls and pidfd_send_signal
	done  chan struct{} // closed once the child has exited (or pidfd was closed)
	// channel is a provider-warm child's own control channel, on which
	// it receives its invocation; nil otherwise.
	channel *os.File
	// egress is the egress listener the server bound for a child allowed
	// the network (the launcher's proxy serves it), and egressPort its
	// port; nil and 0 otherwise.
	egress     *os.File
	egressPort int
}

// zwait is a fork request awaiting its answer: where the answer goes,
// and whether the server must bind the child an egress listener.
type zwait struct {
	ch     chan zreply
	egress bool
}

// zmsg is a control message from a server.
type zmsg struct {
	Op      string `json:"op"`
	ID      uint64 `json:"id"`
	PID     int    `json:"pid"`
	Code    *int   `json:"code"`
	Reason  string `json:"reason"`
	Error   string `json:"error"`
	Python  string `json:"python"`
	Modules int    `json:"modules"`
	Refusal string `json:"refusal"`
	Spare   bool   `json:"spare"`
	// In ready: what was preloaded, why the host's imports could not be
	// discovered, and which discovered imports failed.
	Preloaded []string `json:"preloaded"`
	Discovery string   `json:"discovery"`
	Skipped   []string `json:"skipped"`
	// In a provider-warm server's ready: the host version it recognised,
	// its phases in milliseconds, the binding's digest as it computed it.
	Host          string         `json:"host"`
	Phases        map[string]int `json:"phases"`
	BindingDigest string         `json:"binding_digest"`
}

// zreply is a server's answer to a fork request.
type zreply struct {
	child   *zchild
	refused string
}

// start starts a server for binding b (its environment already verified)
// and waits until it is ready. Errors wrap ErrZygoteStart.
//
// When the preload is the host's discovered closure and it leaves the
// server unable to fork (or one of it failed hard), it warns and starts
// another server with the fixed fallback list, and no longer discovers
// for b's environment: a warm launch with a smaller preload is better
// than every host launched cold.
func (z *Zygote) start(ctx context.Context, b manifest.ProviderBinding) (*zserver, error) {
	z.mu.Lock()
	discover := z.spec.discover && !z.noDiscovery[b.EnvironmentDigest]
	z.mu.Unlock()
	s, err := z.startServer(ctx, b, discover)
	var pe *preloadError
	if !discover || !errors.As(err, &pe) {
		return s, err
	}
	z.l.log.Warn("launch: the host's discovered imports leave the zygote's server unable to fork; preloading the fixed list instead, for this environment from now on",
		"reason", pe.reason, "preload", z.spec.preload, "environment_digest", b.EnvironmentDigest)
	z.mu.Lock()
	z.noDiscovery[b.EnvironmentDigest] = true
	z.mu.Unlock()
	return z.startServer(ctx, b, false)
}

// preloadError says that a server's preload failed or left it unable to
// fork.
type preloadError struct{ reason string }

func (e *preloadError) Error() string { return e.reason }

// startServer is start with discover saying whether the server preloads
// the host's discovered closure (else the configured list).
func (z *Zygote) startServer(ctx context.Context, b manifest.ProviderBinding, discover bool) (*zserver, error) {
	l := z.l
	ctx, cancel := context.WithTimeout(ctx, z.spec.cfg.StartTimeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "zeo-zygote-") // 0700
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, err)
	}
	defer os.RemoveAll(dir) // the interpreter has read the program once it answers
	script, written, err := z.writeProgram(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: writing the server program: %w", ErrZygoteStart, err)
	}
	if u := l.cfg.User; u != nil {
		for _, p := range append([]string{dir}, written...) {
			if err := os.Chown(p, int(u.UID), int(u.GID)); err != nil {
				return nil, fmt.Errorf("%w: giving the server program to its user: %w", ErrZygoteStart, err)
			}
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, os.NewSyscallError("socketpair", err))
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "zeo-zygote"), os.NewFile(uintptr(fds[1]), "zeo-zygote-server")
	defer theirs.Close()
	fc, err := net.FileConn(mine)
	mine.Close()
	if err != nil {
		return nil, fmt.Errorf("%w: wrapping the control socket: %w", ErrZygoteStart, err)
	}
	conn, ok := fc.(*net.UnixConn)
	if !ok {
		fc.Close()
		return nil, fmt.Errorf("%w: the control socket is a %T", ErrZygoteStart, fc)
	}
	// Its stdin is an empty sealed file and its stdout a pipe, as a host's
	// are, so that the stdio objects each child inherits are the ones a
	// cold host would make.
	stdin, err := sealedFile("zeo-zygote-stdin", nil)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, err)
	}
	defer stdin.Close()
	s := &zserver{z: z, conn: conn, digest: b.EnvironmentDigest, provider: providerPackage(b), out: &tailWriter{max: DefaultStderrTailBytes},
		pending: map[uint64]zwait{}, children: map[int]*zchild{}, lost: make(chan struct{})}
	argv := append(append([]string{l.cfg.Interpreter}, z.spec.opts...), script)
	extra := []*os.File{theirs}
	cs, err := z.containServer(argv, dir, 3+len(extra))
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, err)
	}
	if cs != nil {
		defer cs.close()
		extra = append(extra, cs.files...)
	}
	// The server has a cgroup of its own (holding it, its spare, and each
	// child until the child moves into its host's cgroup), ended with it.
	cg, err := l.newCgroup("zygote")
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, err)
	}
	cmd := l.command(argv, "", stdin, s.out, s.out, extra)
	l.prepare(cmd)
	if cs != nil {
		cs.apply(cmd, l.cfg.User)
	}
	intoCgroup(cmd.SysProcAttr, cg)
	if err := cmd.Start(); err != nil {
		conn.Close()
		l.endCgroup(cg)
		return nil, fmt.Errorf("%w: starting %s: %w", ErrZygoteStart, l.cfg.Interpreter, cs.startError(err))
	}
	theirs.Close()
	if cs != nil {
		cs.started()
		if err := cs.await(ctx); err != nil {
			_ = signalGroup(cmd.Process.Pid, unix.SIGKILL)
			l.endCgroup(cg)
			_ = cmd.Wait()
			conn.Close()
			return nil, fmt.Errorf("%w: %w", ErrZygoteStart, err)
		}
	}
	s.cmd, s.pid, s.started = cmd.Process, cmd.Process.Pid, time.Now()
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		s.lose(ErrZygoteClosed)
	} else {
		z.servers[s] = struct{}{}
		z.mu.Unlock()
	}
	z.wg.Add(1)
	go func() {
		defer z.wg.Done()
		// Through the poller first: the server lives as long as the
		// zygote, and a goroutine blocked in waitid all that time would
		// hold a thread and keep the runtime's monitor polling.
		_ = childproc.AwaitExit(cmd.Process)
		l.endCgroup(cg)
		err := cmd.Wait()
		s.lose(fmt.Errorf("it exited (%v)%s", err, s.stderrHint()))
		z.mu.Lock()
		delete(z.servers, s)
		z.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { s.lose(fmt.Errorf("it was not ready: %w", context.Cause(ctx))) })
	defer stop()

	sp := z.spec
	var cerr error
	if sp.pw != nil {
		cerr = z.sendProviderConfig(s, b)
	} else {
		cerr = s.send(map[string]any{"op": "config", "module": sp.module, "preload": sp.preload, "discover": discover,
			"forbid": append(slices.Clip(sp.forbid), s.provider), "switches": sp.switches, "spare": sp.cfg.Spare, "pretouch": sp.cfg.PreTouch}, nil)
	}
	if err := cerr; err != nil {
		s.lose(err)
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, s.lostReason())
	}
	m, files, err := s.read(make([]byte, 64<<10)) // the preloaded names
	closeFiles(files)
	switch {
	case err != nil:
		s.lose(err)
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, s.lostReason())
	case m.Op != "ready" || len(files) != 0:
		s.lose(fmt.Errorf("it answered %q instead of ready", m.Op))
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, s.lostReason())
	case m.Error != "":
		s.lose(errors.New(m.Error))
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, &preloadError{m.Error})
	case m.Refusal != "" && sp.pw != nil:
		s.lose(errors.New(m.Refusal))
		return nil, fmt.Errorf("%w: it refused to become provider-warm: %s", ErrZygoteStart, m.Refusal)
	case m.Refusal != "":
		s.lose(errors.New(m.Refusal))
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, &preloadError{"after the preload it cannot fork: " + m.Refusal})
	case m.PID != s.pid:
		s.lose(fmt.Errorf("it says it is pid %d, not %d", m.PID, s.pid))
		return nil, fmt.Errorf("%w: %w", ErrZygoteStart, s.lostReason())
	}
	s.preloaded, s.discovered = m.Preloaded, discover && m.Discovery == ""
	if sp.pw != nil {
		if err := checkLoaded(s.pid, sp.cfg.Spare); err != nil {
			// What it started dies with it: its group (a spare has a
			// session of its own, and dies with its server).
			_ = signalGroup(s.pid, unix.SIGKILL)
			s.lose(err)
			return nil, fmt.Errorf("%w: the provider-warm server said it was ready, but %w", ErrZygoteStart, err)
		}
		s.pw = providerWarmReady(m)
		l.log.Info("launch: provider-warm server ready", "pid", s.pid, "host", m.Host, "binding_digest", sp.pw.bindingDigest,
			"organization_id", sp.pw.cfg.OrganizationID, "project_id", sp.pw.cfg.ProjectID, "phases_ms", m.Phases, "elapsed", time.Since(s.started))
	}
	if discover && m.Discovery != "" {
		l.log.Warn("launch: the host's imports could not be discovered; the zygote's server preloaded the fixed list instead",
			"reason", m.Discovery, "preload", m.Preloaded, "pid", s.pid)
	}
	if len(m.Skipped) > 0 {
		l.log.Warn("launch: imports of the host failed in the zygote's server; each host imports them itself", "failed", m.Skipped, "pid", s.pid)
	}
	l.log.Debug("launch: zygote server ready", "pid", s.pid, "python", m.Python, "modules", m.Modules,
		"preloaded", m.Preloaded, "discovered", s.discovered, "elapsed", time.Since(s.started))
	z.wg.Add(1)
	go s.readLoop()
	return s, nil
}

// stderrHint is the end of the server's output, for an error message.
func (s *zserver) stderrHint() string {
	tail, _ := s.out.result()
	if len(tail) == 0 {
		return ""
	}
	return "; its output ends with: " + lastLine(string(bytes.TrimSpace(tail)))
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// lose marks the server lost for reason err (the first reason stays),
// kills it and closes its socket; everything waiting on it is woken.
func (s *zserver) lose(err error) {
	s.mu.Lock()
	if s.lostErr != nil {
		s.mu.Unlock()
		return
	}
	s.lostErr = err
	close(s.lost)
	s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Kill() // through Go's pidfd: never another process
	}
	s.conn.Close()
}

func (s *zserver) isLost() bool {
	select {
	case <-s.lost:
		return true
	default:
		return false
	}
}

// lostReason is why the server was lost (nil while it is not).
func (s *zserver) lostReason() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostErr == nil {
		return nil
	}
	return fmt.Errorf("zygote server %d lost: %w", s.pid, s.lostErr)
}

// send writes one control message with files as SCM_RIGHTS.
func (s *zserver) send(msg any, files []*os.File) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if len(b) > maxControlMessage {
		return fmt.Errorf("%w: %d bytes, at most %d", errControlTooLarge, len(b), maxControlMessage)
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if _, _, err := s.conn.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("writing to its control socket: %w", err)
	}
	return nil
}

// errControlTooLarge refuses a control message over maxControlMessage.
var errControlTooLarge = errors.New("the control message is too large")

// read reads one control message and the descriptors that came with it
// (the caller owns them, whatever the error).
func (s *zserver) read(buf []byte) (zmsg, []*os.File, error) {
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := s.conn.ReadMsgUnix(buf, oob)
	var files []*os.File
	if oobn > 0 {
		cmsgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
		for _, c := range cmsgs {
			fds, _ := unix.ParseUnixRights(&c)
			for _, fd := range fds {
				files = append(files, os.NewFile(uintptr(fd), "zeo-zygote-fd"))
			}
		}
		if perr != nil && err == nil {
			err = perr
		}
	}
	switch {
	case err != nil:
		return zmsg{}, files, fmt.Errorf("reading its control socket: %w", err)
	case n == 0 && oobn == 0:
		return zmsg{}, files, errors.New("it closed its control socket")
	case flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
		return zmsg{}, files, errors.New("it sent a control message too large")
	}
	var m zmsg
	dec := json.NewDecoder(bytes.NewReader(buf[:n]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return zmsg{}, files, fmt.Errorf("it sent a malformed control message: %w", err)
	}
	return m, files, nil
}

func closeFiles(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// readLoop reads the server's messages until it is lost: fork answers go
// to their requests, exit reports to their children. Anything else is a
// wrong answer, and loses the server.
func (s *zserver) readLoop() {
	defer s.z.wg.Done()
	buf := make([]byte, 4<<10)
	for {
		m, files, err := s.read(buf)
		if err == nil {
			err = s.dispatch(m, files)
		}
		if err != nil {
			closeFiles(files)
			s.lose(err)
			return
		}
	}
}

// dispatch delivers one message; on error the caller closes files.
func (s *zserver) dispatch(m zmsg, files []*os.File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lostErr != nil {
		return s.lostErr
	}
	switch m.Op {
	case "forked", "refused":
		w, ok := s.pending[m.ID]
		ch := w.ch
		if !ok {
			return fmt.Errorf("it answered fork request %d, which is not pending", m.ID)
		}
		if m.Op == "refused" {
			if len(files) != 0 || m.Reason == "" {
				return errors.New("it refused a fork without a reason, or with descriptors")
			}
			delete(s.pending, m.ID)
			ch <- zreply{refused: m.Reason}
			return nil
		}
		want := 1
		if s.z.spec.pw != nil {
			want++ // the child's channel
		}
		if w.egress {
			want++ // its egress listener, last
		}
		if len(files) != want || m.PID <= 0 {
			return fmt.Errorf("it answered a fork with pid %d and %d descriptors, want a pid and %d", m.PID, len(files), want)
		}
		if _, dup := s.children[m.PID]; dup {
			return fmt.Errorf("it answered a fork with pid %d, which already runs a host", m.PID)
		}
		egressPort := 0
		if w.egress {
			p, err := egressListenerPort(files[want-1])
			if err != nil {
				return fmt.Errorf("the egress listener it passed for pid %d: %w", m.PID, err)
			}
			egressPort = p
		}
		c, err := s.adopt(m.PID, files[0])
		if err != nil {
			return err
		}
		c.spare = m.Spare
		if s.z.spec.pw != nil {
			c.channel = files[1]
		}
		if w.egress {
			c.egress, c.egressPort = files[want-1], egressPort
		}
		delete(s.pending, m.ID)
		s.children[m.PID] = c
		ch <- zreply{child: c}
		return nil
	case "exit":
		c, ok := s.children[m.PID]
		if !ok || m.Code == nil || len(files) != 0 {
			return fmt.Errorf("it reported the exit of pid %d, which is not a host it forked", m.PID)
		}
		delete(s.children, m.PID)
		c.exit <- *m.Code
		return nil
	}
	return fmt.Errorf("it sent an unexpected %q message", m.Op)
}

// adopt checks that pidfd names pid, a child of this server, and returns
// the child, its pidfd in the netpoller.
func (s *zserver) adopt(pid int, pidfd *os.File) (*zchild, error) {
	fd := int(pidfd.Fd()) // blocking until it is re-wrapped below
	got, ppid, err := pidfdPID(fd)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the pidfd it passed for pid %d: %w", pid, err)
	case got != pid:
		return nil, fmt.Errorf("the pidfd it passed for pid %d names pid %d", pid, got)
	case ppid >= 0 && ppid != s.pid:
		return nil, fmt.Errorf("the pidfd it passed for pid %d names a process whose parent is %d", pid, ppid)
	}
	nfd, err := unix.Dup(fd)
	if err != nil {
		return nil, os.NewSyscallError("dup", err)
	}
	pidfd.Close()
	unix.CloseOnExec(nfd)
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	c := &zchild{pid: pid, pidfd: os.NewFile(uintptr(nfd), "zeo-host-pidfd"), fd: nfd, exit: make(chan int, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		_ = awaitPidfd(c.pidfd)
	}()
	return c, nil
}

// fork asks the server to fork a host with the five descriptors files
// (stdin, stdout, stderr, context, socket), and with egress to bind it an
// egress listener. It returns the child, or a *coldError when no host was
// started (the server refused, or was lost; a host it may have forked
// before it was lost cannot reach the Runtime: the caller closes the
// socket).
func (s *zserver) fork(req map[string]any, files []*os.File, egress bool) (*zchild, error) {
	s.mu.Lock()
	if s.lostErr != nil {
		s.mu.Unlock()
		return nil, &coldError{s.lostReason()}
	}
	s.nextID++
	id := s.nextID
	ch := make(chan zreply, 1)
	s.pending[id] = zwait{ch: ch, egress: egress}
	s.mu.Unlock()
	req["op"], req["id"] = "fork", id
	if err := s.send(req, files); err != nil {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
		if errors.Is(err, errControlTooLarge) || errors.Is(err, syscall.EMSGSIZE) {
			return nil, &coldError{err} // the server is fine
		}
		s.lose(err)
		return nil, &coldError{s.lostReason()}
	}
	t := time.NewTimer(s.z.spec.cfg.ReplyTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.refused != "" {
			// Its state will not get better: the next invocation gets a
			// fresh server.
			s.z.mu.Lock()
			s.z.retireLocked(s)
			s.z.mu.Unlock()
			return nil, &coldError{fmt.Errorf("the zygote server %d refused to fork: %s", s.pid, r.refused)}
		}
		return r.child, nil
	case <-s.lost:
	case <-t.C:
		s.lose(fmt.Errorf("it did not answer a fork request within %v", s.z.spec.cfg.ReplyTimeout))
	}
	// A reply may have been delivered just before the loss (none can be
	// after it: dispatch checks under s.mu).
	select {
	case r := <-ch:
		if r.child != nil {
			_ = r.child.kill(s.z.groupFlag)
			r.child.pidfd.Close()
			r.child.closeChannels()
			<-r.child.done
		}
	default:
	}
	return nil, &coldError{s.lostReason()}
}

// closeChannels closes the child's channel and egress listener, where
// it has them.
func (c *zchild) closeChannels() {
	if c.channel != nil {
		c.channel.Close()
		c.channel = nil
	}
	if c.egress != nil {
		c.egress.Close()
		c.egress = nil
	}
}

// kill sends SIGKILL through the child's pidfd: to its process group when
// the kernel can address one that way, else to the child alone.
func (c *zchild) kill(group bool) error { return c.signal(unix.SIGKILL, group) }

// signal sends sig to the child through its pidfd: to its whole process
// group when group (the kernel resolves the group from the pidfd, so the
// group id cannot have been reused), else to the child alone.
func (c *zchild) signal(sig unix.Signal, group bool) error {
	flags := 0
	if group {
		flags = unix.PIDFD_SIGNAL_PROCESS_GROUP
	}
	err := unix.PidfdSendSignal(c.fd, sig, nil, flags)
	if err == unix.ESRCH {
		return nil
	}
	return err
}

// signal sends sig to the host c and its process group: through the
// pidfd when the kernel can address a group that way, else to the host
// through the pidfd and to its group through the server (its parent,
// which signals the group only while it has not reaped the host).
func (s *zserver) signal(c *zchild, sig unix.Signal) {
	if s.z.groupFlag {
		_ = c.signal(sig, true)
		return
	}
	_ = c.signal(sig, false)
	_ = s.send(map[string]any{"op": "signal", "pid": c.pid, "sig": int(sig)}, nil)
}

// pidfdGroupSignals reports whether pidfd_send_signal takes
// PIDFD_SIGNAL_PROCESS_GROUP here (Linux 6.9): signal 0 to the group led
// by this process is refused with EINVAL only when the flag is unknown.
func pidfdGroupSignals() bool {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.PidfdSendSignal(fd, 0, nil, unix.PIDFD_SIGNAL_PROCESS_GROUP) != unix.EINVAL
}

// pidfdPID returns the pid and parent pid of the process pidfd refers
// to (ppid -1 when the kernel cannot say: before Linux 6.13 only the pid
// is read, from /proc/self/fdinfo).
func pidfdPID(fd int) (pid, ppid int, err error) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_PID}
	if err := unix.IoctlPidfdInfo(fd, &info); err == nil && info.Mask&unix.PIDFD_INFO_PID != 0 {
		return int(info.Pid), int(info.Ppid), nil
	}
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			return pid, -1, err
		}
	}
	return 0, 0, errors.New("not a pidfd")
}

// awaitPidfd blocks until the process behind f has exited, or f is
// closed.
func awaitPidfd(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Read(func(fd uintptr) bool { return pidfdExited(int(fd)) })
}

// pidfdExited reports whether the process behind pidfd has exited (or
// the question cannot be asked).
func pidfdExited(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err != nil && err != unix.EINTR || n > 0
}

// pidfdExitCode returns the exit code (< 0: -signal) the kernel recorded
// for the reaped process behind pidfd, and false when it keeps none
// (before Linux 6.15).
func pidfdExitCode(fd int) (int, bool) {
	info := unix.PidfdInfo{Mask: unix.PIDFD_INFO_EXIT}
	if err := unix.IoctlPidfdInfo(fd, &info); err != nil || info.Mask&unix.PIDFD_INFO_EXIT == 0 {
		return 0, false
	}
	ws := syscall.WaitStatus(info.Exit_code)
	if ws.Signaled() {
		return -int(ws.Signal()), true
	}
	return ws.ExitStatus(), true
}
