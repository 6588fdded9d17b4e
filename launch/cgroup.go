package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// cgroupKillWait bounds the wait for a host's cgroup to empty after
// cgroup.kill; a process the kernel holds longer (stuck in
// uninterruptible sleep) is logged and its cgroup left in place.
const cgroupKillWait = 5 * time.Second

// openCgroup returns the parent the hosts of cfg get their cgroups under,
// or nil for the fallback.
func openCgroup(cfg *Config) (*cgroup.Parent, error) {
	c := cfg.Containment.Cgroup
	p, fallback, err := cgroup.Resolve(cgroup.Option(c).Config())
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: Containment.Cgroup: %w", ErrInvalidConfig, err)
	case fallback != nil:
		return nil, nil
	}
	return p, nil
}

// Cgroups returns the directory under which each host gets its own
// cgroup, or "" when the Launcher runs without the cgroup layer
// (Containment.Cgroup): then a descendant that leaves its host's process
// group outlives the host.
func (l *Launcher) Cgroups() string {
	if l.cg == nil {
		return ""
	}
	return l.cg.Dir()
}

// cgroupSummary is the cgroup part of ContainmentSummary.
func (l *Launcher) cgroupSummary() string {
	if l.cg == nil {
		return "; cgroup: none (a descendant that leaves the host's process group outlives it)"
	}
	s := "; cgroup: one per host under " + l.cg.Dir()
	if lim := l.cg.Limits(); len(lim) > 0 {
		s += fmt.Sprintf(" (limits %v)", lim)
	}
	return s
}

// newCgroup makes the cgroup of one host (or zygote server); nil without
// the layer.
func (l *Launcher) newCgroup(what string) (*cgroup.Group, error) {
	if l.cg == nil {
		return nil, nil
	}
	g, err := l.cg.New("zeo-" + what)
	if err != nil {
		return nil, fmt.Errorf("launch: the %s's cgroup: %w", what, err)
	}
	return g, nil
}

// endCgroup kills whatever is left in g and removes it; safe to call
// again, and with nil.
func (l *Launcher) endCgroup(g *cgroup.Group) {
	if g == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cgroupKillWait)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		l.log.Warn("launch: ending a host's cgroup failed; it is left in place", "cgroup", g.Dir(), "err", err)
	}
}
