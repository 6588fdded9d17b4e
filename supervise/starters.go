package supervise

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// Environments says how hosts of a provider binding are launched: the
// launch.Config of the binding's provider environment (its interpreter,
// arguments, environment, working directory, verifier). The Supervisor
// makes one starter per distinct environment on first use and closes it
// when idle or at Close. It is called once per Invoke and must be safe
// for concurrent use.
type Environments func(b manifest.ProviderBinding) (launch.Config, error)

// starter starts the hosts of one provider environment: cold through its
// launcher, or warm through its fork server once that has started.
type starter struct {
	key      string
	launcher *launch.Launcher
	fixed    bool // from Config.Launcher/Zygote: never closed by the Supervisor

	mu     sync.Mutex // guards the fields below
	zygote *launch.Zygote
	warmed bool // a fork server was tried (started, or failed and logged)
	active int
	idle   *time.Timer
	closed bool
	pw     map[pwKey]*pwServer // its provider-warm servers (provwarm.go)
}

// starters is the Supervisor's set of starters by environment key.
type starters struct {
	s     *Supervisor
	mu    sync.Mutex
	m     map[string]*starter
	fixed *starter
	done  bool
	pwWG  sync.WaitGroup // provider-warm servers starting
	// pwStop ends provider-warm starts in progress when the Supervisor
	// closes (provwarm.go).
	pwOnce sync.Once
	pwCtx  context.Context
	pwStop context.CancelFunc
}

// envKey is what makes two provider environments differ for a starter:
// the program, its arguments, its environment and directory, the user it
// runs as, the environment digest the binding pins and the factory's
// package (a fork server serves one factory).
func envKey(cfg launch.Config, b manifest.ProviderBinding) string {
	var sb strings.Builder
	put := func(v string) { sb.WriteString(v); sb.WriteByte(0) }
	put(cfg.Interpreter)
	put(fmt.Sprint(len(cfg.Args)))
	for _, a := range cfg.Args {
		put(a)
	}
	env := slices.Clone(cfg.Env)
	slices.Sort(env)
	put(fmt.Sprint(len(env)))
	for _, e := range env {
		put(e)
	}
	put(cfg.Dir)
	if cfg.User != nil {
		put(fmt.Sprint(cfg.User.UID, ":", cfg.User.GID))
	}
	put(string(b.EnvironmentDigest))
	pkg, _, _ := strings.Cut(b.Factory, ":")
	pkg, _, _ = strings.Cut(pkg, ".")
	put(pkg)
	return sb.String()
}

// acquire returns the starter for b, counted active until release.
func (ss *starters) acquire(b manifest.ProviderBinding) (*starter, error) {
	if ss.fixed != nil {
		ss.fixed.mu.Lock()
		ss.fixed.active++
		ss.fixed.mu.Unlock()
		return ss.fixed, nil
	}
	var cfg launch.Config
	if ss.s.cfg.Environments != nil {
		var err error
		if cfg, err = ss.s.cfg.Environments(b); err != nil {
			return nil, &PreflightError{Check: "environment", Detail: fmt.Sprintf("no provider environment for %s %s", b.Distribution, b.Version), Err: err}
		}
	}
	k := envKey(cfg, b)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.done {
		return nil, ErrClosed
	}
	st := ss.m[k]
	if st == nil {
		l := ss.s.cfg.Launcher // one launcher for every environment, when Environments is nil
		if ss.s.cfg.Environments != nil {
			if cfg.Logger == nil {
				cfg.Logger = ss.s.cfg.Logger
			}
			var err error
			if l, err = launch.New(cfg); err != nil {
				return nil, &PreflightError{Check: "environment", Detail: fmt.Sprintf("the provider environment of %s %s cannot launch", b.Distribution, b.Version), Err: err}
			}
		}
		st = &starter{key: k, launcher: l}
		ss.m[k] = st
		ss.s.log.Debug("supervise: starter created", telemetry.KeyDistribution, b.Distribution, telemetry.KeyEnvironment, string(b.EnvironmentDigest))
	}
	st.mu.Lock()
	st.active++
	if st.idle != nil {
		st.idle.Stop()
		st.idle = nil
	}
	st.mu.Unlock()
	return st, nil
}

// release ends one invocation on st; the last one arms its idle timer.
func (ss *starters) release(st *starter) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.active--
	if st.active > 0 || st.fixed || st.closed {
		return
	}
	st.idle = time.AfterFunc(ss.s.cfg.StarterIdle, func() { ss.expire(st) })
}

// expire closes st if it is still idle.
func (ss *starters) expire(st *starter) {
	ss.mu.Lock()
	st.mu.Lock()
	if st.active > 0 || st.closed {
		st.mu.Unlock()
		ss.mu.Unlock()
		return
	}
	if ss.m[st.key] == st {
		delete(ss.m, st.key)
	}
	st.closed = true
	z := st.zygote
	st.zygote = nil
	pws := takeProviderWarm(st)
	st.mu.Unlock()
	ss.mu.Unlock()
	if z != nil {
		if err := z.Close(); err != nil {
			ss.s.log.Warn("supervise: closing an idle fork server failed", telemetry.KeyErr, err)
		}
	}
	if err := closeZygotes(pws); err != nil {
		ss.s.log.Warn("supervise: closing idle provider-warm servers failed", telemetry.KeyErr, err)
	}
	ss.s.log.Debug("supervise: idle starter closed")
}

// invoke starts the host of inv on st: warm when the Supervisor is warm
// and the fork server started, cold otherwise. A fork server that cannot
// start is logged once, with why, and the environment runs cold.
func (ss *starters) invoke(ctx context.Context, st *starter, b manifest.ProviderBinding, inv launch.Invocation) (*launch.Outcome, error) {
	if z, release := ss.providerWarm(st, b, inv); z != nil {
		defer release()
		lo, err := z.Invoke(ctx, inv)
		ss.s.tel.Started(ctx, lo, true)
		return lo, err
	}
	if z := ss.zygote(ctx, st, b); z != nil {
		lo, err := z.Invoke(ctx, inv)
		ss.s.tel.Started(ctx, lo, true)
		return lo, err
	}
	lo, err := st.launcher.Invoke(ctx, inv)
	ss.s.tel.Started(ctx, lo, false)
	return lo, err
}

// zygote returns st's fork server, starting it on first use when the
// Supervisor is warm; nil means cold.
func (ss *starters) zygote(ctx context.Context, st *starter, b manifest.ProviderBinding) *launch.Zygote {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.fixed || st.warmed || ss.s.cfg.Warm == nil {
		return st.zygote
	}
	st.warmed = true
	zc := *ss.s.cfg.Warm
	zc.Provider = b
	z, err := st.launcher.StartZygote(ctx, zc)
	if err != nil {
		ss.s.log.Warn("supervise: the fork server did not start; this provider environment launches cold", telemetry.KeyDistribution, b.Distribution, telemetry.KeyErr, err)
		ss.s.tel.ServerFailed()
		return nil
	}
	st.zygote = z
	return z
}

// closeAll closes every starter the Supervisor made, now.
func (ss *starters) closeAll() error {
	ss.mu.Lock()
	ss.done = true
	all := make([]*starter, 0, len(ss.m))
	for _, st := range ss.m {
		all = append(all, st)
	}
	ss.m = map[string]*starter{}
	ss.mu.Unlock()
	var errs []error
	for _, st := range all {
		st.mu.Lock()
		st.closed = true
		if st.idle != nil {
			st.idle.Stop()
		}
		z := st.zygote
		st.zygote = nil
		pws := takeProviderWarm(st)
		st.mu.Unlock()
		if z != nil {
			if err := z.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := closeZygotes(pws); err != nil {
			errs = append(errs, err)
		}
	}
	ss.startContext()
	ss.pwStop()
	ss.pwWG.Wait() // a server still starting stops, or closes itself: its starter is closed
	if len(errs) > 0 {
		return fmt.Errorf("supervise: closing fork servers: %v", errs)
	}
	return nil
}
