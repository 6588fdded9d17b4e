package launch

import (
	"context"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// Cgroup configures the cgroup layer (doc/design.md, “Containment”): each
// host, cold or warm, and each zygote server runs in a cgroup v2 of its
// own, and when the host has ended everything left in it is killed
// (cgroup.kill) and the cgroup removed before Invoke returns, so that no
// descendant outlives the host, whatever session or process group it
// moved to. The zero value uses the layer where this process has a
// usable delegated cgroup v2 (its own cgroup, writable, on a kernel with
// cgroup.kill: Linux 5.14) and falls back where it has none. The fallback
// is the process group alone: a descendant that calls setsid or setpgid
// outlives its host and Invoke. Launcher.Cgroups says which is in force.
//
// The layer is independent of Containment.Off: it is supervision, and
// applies to uncontained hosts too. On darwin it is never available.
//
// The same struct, with the same meaning, is process.Cgroup.
type Cgroup struct {
	// Off turns the layer off: the fallback, always.
	Off bool
	// Parent is an existing cgroup v2 directory delegated to this
	// process's user, under which each host gets its cgroup. Empty means
	// this process's own cgroup.
	Parent string
	// Required makes New refuse (ErrCgroupUnavailable) where the layer
	// is unavailable, instead of falling back.
	Required bool
	// Pids is pids.max of each host's cgroup: its processes and threads
	// together (a zygote server's cgroup holds the server and its spare;
	// each warm host has its own). Zero leaves it unset.
	Pids int64
	// MemoryBytes is memory.max of each host's cgroup. Zero leaves it
	// unset.
	MemoryBytes int64
	// SwapBytes is memory.swap.max of each host's cgroup; negative means
	// no swap. Zero leaves it unset.
	SwapBytes int64
	// CPUPercent is cpu.max as a share of one CPU (150: one and a half).
	// Zero leaves it unset.
	CPUPercent int
	// BestEffortLimits drops a limit that cannot be set (logged as a
	// warning) instead of refusing. Without it, a limit asked and
	// unavailable makes New refuse with ErrCgroupLimitUnavailable.
	BestEffortLimits bool
}

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
