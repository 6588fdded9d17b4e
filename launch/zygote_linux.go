package launch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Zygote launches hosts warm: a fork server, a Python program of ours
// started once from the provider environment's interpreter, imports the
// host's trusted dependencies and forks a fresh child per invocation,
// which then runs the host module as `python -m` would. Each invocation
// still gets its own process with exactly its own descriptors,
// environment, session and process group, and every duty of a cold
// launch is kept; see the package doc, “Warm launch”, and doc/design.md,
// “Warm launch”.
//
// A Zygote is safe for concurrent use. Close it when done: it owns the
// server process.
type Zygote struct {
	l      *Launcher
	spec   zygoteSpec
	source []byte // the server program
	// pwSource is the provider-warm server program (with source beside
	// it), used when spec.pw is set.
	pwSource []byte
	// groupFlag reports that the kernel signals a process group through a
	// pidfd (PIDFD_SIGNAL_PROCESS_GROUP, Linux 6.9); without it the
	// server signals its children's groups.
	groupFlag bool

	wg sync.WaitGroup // the servers' goroutines and starts

	mu          sync.Mutex // guards the fields below and every server's pool fields
	cur         *zserver   // where new invocations fork; nil when none
	servers     map[*zserver]struct{}
	starting    chan struct{} // closed when the start in progress ends
	startErr    error         // the last start's failure, nil after a success
	startFailed time.Time
	closed      bool
	stats       ZygoteStats
	// noDiscovery holds the environments whose discovered preload left a
	// server unable to fork: their servers preload the fixed list.
	noDiscovery map[canon.Digest]bool
}

// StartZygote starts a warm launcher for this Launcher's host (see
// Zygote): it verifies cfg.Provider's environment with Config.Verifier,
// then starts the fork server exactly as it would start a host (the exact
// interpreter and its options from Config.Args, the environment
// allowlist, Config.Dir, its own session, Config.User, only its
// descriptors) with a private control socket, and waits until the server
// has imported its preload (cfg.Preload, or by default the host's
// discovered import closure). Config.Args must run the host as
// `-m MODULE`.
//
// Errors wrap ErrInvalidConfig, ErrEnvironmentMismatch (or the
// verifier's own), ErrZygoteStart or ErrUnsupported (on platforms other
// than Linux). ctx bounds the start only.
func (l *Launcher) StartZygote(ctx context.Context, cfg ZygoteConfig) (*Zygote, error) {
	return l.startZygote(ctx, cfg, zygoteSource)
}

// startZygote is StartZygote with source as the server program.
func (l *Launcher) startZygote(ctx context.Context, cfg ZygoteConfig, source []byte) (*Zygote, error) {
	return l.startZygoteWith(ctx, cfg, source, provwarmSource)
}

// startZygoteWith is startZygote with pwSource as the provider-warm
// server program.
func (l *Launcher) startZygoteWith(ctx context.Context, cfg ZygoteConfig, source, pwSource []byte) (*Zygote, error) {
	zs, err := zygoteSpecFor(l.cfg, cfg)
	if err != nil {
		return nil, err
	}
	if err := l.warmContainable(); err != nil {
		return nil, err
	}
	if err := l.cfg.Verifier.VerifyEnvironment(ctx, zs.cfg.Provider); err != nil {
		return nil, err
	}
	z := &Zygote{l: l, spec: zs, source: source, pwSource: pwSource, groupFlag: pidfdGroupSignals(), servers: map[*zserver]struct{}{},
		noDiscovery: map[canon.Digest]bool{}}
	s, err := z.start(ctx, zs.cfg.Provider)
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	z.cur = s
	z.stats.Starts++
	z.mu.Unlock()
	return z, nil
}

// Invoke runs one invocation as Launcher.Invoke does, with the same
// guarantees, errors and Outcome, except that the host is forked from
// the zygote's server (Outcome.Process.Warm). When the server refuses to
// fork (see ZygoteConfig), is lost before it forked, or cannot be
// (re)started, the host is launched cold instead and the reason is
// logged at warning level. A server lost while its host runs fails that
// invocation as a protocol error (ErrExitUnknown): the host is killed
// through its pidfd and its exit status is never guessed.
//
// The server is replaced by a fresh one when inv's provider binding
// names another environment digest than the server's, after
// ZygoteConfig.MaxForks hosts, and after ZygoteConfig.MaxAge.
func (z *Zygote) Invoke(ctx context.Context, inv Invocation) (*Outcome, error) {
	return z.l.invoke(ctx, inv, z)
}

// run launches the host of s warm, or cold when a warm launch is not
// possible.
func (z *Zygote) run(ctx context.Context, s spec) (hostRun, error) {
	r, err := z.runWarm(ctx, s)
	var cold *coldError
	if !errors.As(err, &cold) {
		return r, err
	}
	z.mu.Lock()
	z.stats.Cold++
	z.mu.Unlock()
	z.l.log.Warn("launch: launching the host cold: a warm launch is not possible", "reason", cold.err)
	return z.l.run(ctx, s)
}

// coldError says why a warm launch did not start a host; the caller
// launches cold.
type coldError struct{ err error }

func (e *coldError) Error() string { return "launch: warm launch not possible: " + e.err.Error() }
func (e *coldError) Unwrap() error { return e.err }

// Close stops the zygote: it kills its servers (a spare child dies with
// its server) and waits for their goroutines. Hosts still running fail as
// protocol errors (they are killed), so call Close after the invocations
// have returned; Invoke afterwards returns ErrZygoteClosed. Close is safe
// to call more than once.
func (z *Zygote) Close() error {
	z.mu.Lock()
	z.closed = true
	servers := make([]*zserver, 0, len(z.servers))
	for s := range z.servers {
		servers = append(servers, s)
	}
	z.cur = nil
	z.mu.Unlock()
	for _, s := range servers {
		s.lose(ErrZygoteClosed)
	}
	z.wg.Wait()
	return nil
}

// Launcher returns the Launcher the zygote was started from.
func (z *Zygote) Launcher() *Launcher { return z.l }

// Stats returns what the zygote did so far.
func (z *Zygote) Stats() ZygoteStats {
	z.mu.Lock()
	defer z.mu.Unlock()
	st := z.stats
	if z.cur != nil {
		st.ServerPID, st.Preloaded, st.Discovered = z.cur.pid, slices.Clone(z.cur.preloaded), z.cur.discovered
		st.ProviderWarm = z.cur.pw.clone()
	}
	return st
}

// acquire returns the server a new host forks from, reserved for one
// fork (release undoes it), replacing the current one if it is stale.
//
// It waits for at most one start: a server that is unusable as soon as
// it has started (it died or answered wrongly at once) makes this
// invocation launch cold rather than start another.
func (z *Zygote) acquire(ctx context.Context, b *manifest.ProviderBinding) (*zserver, error) {
	waited := false
	for {
		z.mu.Lock()
		if z.closed {
			z.mu.Unlock()
			return nil, ErrZygoteClosed
		}
		if s := z.cur; s != nil {
			why := z.staleLocked(s, b)
			if why == "" {
				s.live++
				s.forks++
				z.stats.Forks++
				z.mu.Unlock()
				return s, nil
			}
			z.l.log.Info("launch: replacing the zygote's server", "pid", s.pid, "why", why)
			z.retireLocked(s)
			if waited {
				z.mu.Unlock()
				return nil, fmt.Errorf("the zygote's fresh server %d is unusable: %s", s.pid, why)
			}
		}
		if z.starting == nil {
			if z.startErr != nil && time.Since(z.startFailed) < zygoteRestartBackoff {
				err := z.startErr
				z.mu.Unlock()
				return nil, err
			}
			z.starting = make(chan struct{})
			z.wg.Add(1)
			go z.restart(*b, z.starting)
		}
		ch := z.starting
		z.mu.Unlock()
		select {
		case <-ch:
			waited = true
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// staleLocked says why s must not fork another host of binding b, or ""
// if it may.
func (z *Zygote) staleLocked(s *zserver, b *manifest.ProviderBinding) string {
	switch {
	case s.isLost():
		return "it was lost: " + s.lostReason().Error()
	case s.digest != b.EnvironmentDigest:
		return fmt.Sprintf("the environment digest changed from %s to %s", s.digest, b.EnvironmentDigest)
	case s.provider != providerPackage(*b):
		return fmt.Sprintf("the provider package changed from %s to %s", s.provider, providerPackage(*b))
	case s.forks >= z.spec.cfg.MaxForks:
		return fmt.Sprintf("it forked %d hosts (MaxForks)", s.forks)
	case time.Since(s.started) >= z.spec.cfg.MaxAge:
		return fmt.Sprintf("it is older than %v (MaxAge)", z.spec.cfg.MaxAge)
	}
	return ""
}

// retireLocked stops new forks from s; it is stopped once its last host
// has ended.
func (z *Zygote) retireLocked(s *zserver) {
	s.retired = true
	if z.cur == s {
		z.cur = nil
	}
	if s.live == 0 {
		s.lose(errRetired)
	}
}

// errRetired is how a replaced server ends.
var errRetired = errors.New("replaced by a fresh server")

// release ends the reservation acquire made on s.
func (z *Zygote) release(s *zserver) {
	z.mu.Lock()
	defer z.mu.Unlock()
	s.live--
	if s.retired && s.live == 0 {
		s.lose(errRetired)
	}
}

// restart starts a server for binding b in the background and makes it
// current; ch is closed when it is done, whatever the result.
func (z *Zygote) restart(b manifest.ProviderBinding, ch chan struct{}) {
	defer z.wg.Done()
	s, err := z.start(context.Background(), b)
	z.mu.Lock()
	defer z.mu.Unlock()
	z.starting = nil
	close(ch)
	if err != nil {
		z.startErr, z.startFailed = err, time.Now()
		z.l.log.Warn("launch: the zygote's server did not start; hosts launch cold meanwhile", "err", err)
		return
	}
	z.startErr = nil
	z.stats.Starts++
	if z.closed {
		s.lose(ErrZygoteClosed)
		return
	}
	z.cur = s
}
