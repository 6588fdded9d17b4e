package supervise

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// ProviderWarm makes the Supervisor's starters launch hosts
// provider-warm (Config.ProviderWarm; doc/design.md, “Provider-warm
// launch”): for each provider binding (its digest covers the generation
// and the environment digest) and each tenant (organization, project) the
// Supervisor starts, on first use and in the background, a fork server
// that has activated that generation (launch.ProviderWarm), and closes it
// once it has been idle for Config.StarterIdle. A server is never shared
// between tenants, and a new generation or binding gets a server of its
// own while operations pinned to the old one finish on theirs. Until a
// server is ready, and for a binding and tenant whose server refused to
// become warm (logged with why), hosts start as they would without
// ProviderWarm: warm from the environment's fork server when Config.Warm
// is set, else cold.
type ProviderWarm struct {
	// Hosts lists the host versions the servers were checked against
	// (launch.ProviderWarm.Hosts). Required.
	Hosts []launch.HostVersion
	// Zygote holds the rest of each server's settings (Spare, MaxForks,
	// MaxAge, StartTimeout, ReplyTimeout); the Supervisor sets Provider
	// and ProviderWarm, and Preload, Forbid, Switches and PreTouch must be
	// unset.
	Zygote launch.ZygoteConfig
}

// validate reports what is wrong with pw.
func (pw *ProviderWarm) validate() []string {
	var bad []string
	if len(pw.Hosts) == 0 {
		bad = append(bad, "ProviderWarm.Hosts is empty: name the host versions the servers were checked against")
	}
	z := pw.Zygote
	if z.ProviderWarm != nil || z.Provider.Factory != "" || z.Preload != nil || z.Forbid != nil || z.Switches != nil || z.PreTouch {
		bad = append(bad, "ProviderWarm.Zygote must leave Provider, ProviderWarm, Preload, Forbid, Switches and PreTouch unset")
	}
	return bad
}

// pwKey names one provider-warm server of a starter: the binding and the
// tenant it serves.
type pwKey struct {
	binding               canon.Digest
	organization, project string
}

// pwServer is one provider-warm server of a starter, guarded by the
// starter's mu.
type pwServer struct {
	key        pwKey
	generation int64
	z          *launch.Zygote // nil while it starts, or after it failed to
	failed     bool
	active     int
	idle       *time.Timer
	closed     bool
}

// providerWarm returns the provider-warm zygote that serves binding b for
// the tenant of inv, reserved until release is called, or nil when
// there is none ready (one is then started in the background, once).
func (ss *starters) providerWarm(st *starter, b manifest.ProviderBinding, inv launch.Invocation) (*launch.Zygote, func()) {
	if ss.s.cfg.ProviderWarm == nil || st.fixed {
		return nil, nil
	}
	a := inv.Context.Attempt
	if inv.Encoded != nil {
		a = inv.Encoded.Context.Attempt
	}
	org, project := a.OrganizationID, a.ProjectID
	raw, err := b.AppendCanonical(nil)
	if err != nil {
		return nil, nil
	}
	key := pwKey{binding: canon.Sum(raw), organization: org, project: project}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, nil
	}
	if st.pw == nil {
		st.pw = map[pwKey]*pwServer{}
	}
	p := st.pw[key]
	if p == nil {
		p = &pwServer{key: key, generation: b.Generation}
		st.pw[key] = p
		ss.pwWG.Go(func() { ss.startProviderWarm(st, p, b) })
		return nil, nil
	}
	if p.z == nil {
		return nil, nil
	}
	p.active++
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
	return p.z, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		p.active--
		ss.armProviderWarm(st, p)
	}
}

// startProviderWarm starts p's server for binding b.
func (ss *starters) startProviderWarm(st *starter, p *pwServer, b manifest.ProviderBinding) {
	zc := ss.s.cfg.ProviderWarm.Zygote
	zc.Provider = b
	zc.ProviderWarm = &launch.ProviderWarm{OrganizationID: p.key.organization, ProjectID: p.key.project,
		Hosts: ss.s.cfg.ProviderWarm.Hosts}
	z, err := st.launcher.StartZygote(ss.startContext(), zc) // bounded by its StartTimeout, ended by Close
	st.mu.Lock()
	if err == nil && (st.closed || p.closed) {
		st.mu.Unlock()
		z.Close()
		return
	}
	defer st.mu.Unlock()
	if err != nil {
		p.failed = true
		if ss.startContext().Err() != nil {
			return // the Supervisor is closing: not a failure of the server
		}
		ss.s.log.Warn("supervise: the provider-warm server did not start; this binding and tenant start hosts without it",
			telemetry.KeyDistribution, b.Distribution, telemetry.KeyProviderGeneration, b.Generation, telemetry.KeyOrganization, p.key.organization,
			telemetry.KeyProject, p.key.project, telemetry.KeyErr, err)
		ss.s.tel.ServerFailed()
		return
	}
	p.z = z
	ss.armProviderWarm(st, p)
}

// startContext is the context of provider-warm starts, cancelled when
// the Supervisor closes.
func (ss *starters) startContext() context.Context {
	ss.pwOnce.Do(func() { ss.pwCtx, ss.pwStop = context.WithCancel(context.Background()) })
	return ss.pwCtx
}

// armProviderWarm arms p's idle timer when nothing uses it; st.mu is
// held.
func (ss *starters) armProviderWarm(st *starter, p *pwServer) {
	if p.active > 0 || p.closed || p.z == nil || p.idle != nil {
		return
	}
	p.idle = time.AfterFunc(ss.s.cfg.StarterIdle, func() {
		st.mu.Lock()
		if p.active > 0 || p.closed {
			st.mu.Unlock()
			return
		}
		p.closed = true
		delete(st.pw, p.key)
		z := p.z
		st.mu.Unlock()
		if err := z.Close(); err != nil {
			ss.s.log.Warn("supervise: closing an idle provider-warm server failed", telemetry.KeyErr, err)
		}
		ss.s.log.Debug("supervise: idle provider-warm server closed", telemetry.KeyProviderGeneration, p.generation)
	})
}

// takeProviderWarm removes every provider-warm server of st, which is
// closing, and returns their zygotes for the caller to close; st.mu is
// held.
func takeProviderWarm(st *starter) []*launch.Zygote {
	var zs []*launch.Zygote
	for k, p := range st.pw {
		p.closed = true
		if p.idle != nil {
			p.idle.Stop()
		}
		if p.z != nil {
			zs = append(zs, p.z)
		}
		delete(st.pw, k)
	}
	return zs
}

// closeZygotes closes zs, joining their errors.
func closeZygotes(zs []*launch.Zygote) error {
	var errs []error
	for _, z := range zs {
		if err := z.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ProviderWarmServer describes one provider-warm server of the
// Supervisor.
type ProviderWarmServer struct {
	// OrganizationID and ProjectID are the tenant it serves.
	OrganizationID, ProjectID string
	// Binding is the digest of the binding it activated, Generation its
	// generation.
	Binding    canon.Digest
	Generation int64
	// Stats is what its zygote did.
	Stats launch.ZygoteStats
}

// ProviderWarmServers lists the provider-warm servers that are ready now,
// ordered by tenant and generation.
func (s *Supervisor) ProviderWarmServers() []ProviderWarmServer {
	ss := &s.starters
	ss.mu.Lock()
	all := make([]*starter, 0, len(ss.m))
	for _, st := range ss.m {
		all = append(all, st)
	}
	ss.mu.Unlock()
	var out []ProviderWarmServer
	for _, st := range all {
		st.mu.Lock()
		for _, p := range st.pw {
			if p.z != nil {
				out = append(out, ProviderWarmServer{OrganizationID: p.key.organization, ProjectID: p.key.project,
					Binding: p.key.binding, Generation: p.generation, Stats: p.z.Stats()})
			}
		}
		st.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b ProviderWarmServer) int {
		if c := strings.Compare(a.OrganizationID+"\x00"+a.ProjectID, b.OrganizationID+"\x00"+b.ProjectID); c != 0 {
			return c
		}
		return int(a.Generation - b.Generation)
	})
	return out
}
