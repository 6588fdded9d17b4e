//go:build unix

package process

import (
	"fmt"
	"log/slog"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// ErrCgroupUnavailable is wrapped by New's refusal when Config.Cgroup is
// Required and no usable delegated cgroup v2 exists (the message says
// why). It is the same error as launch.ErrCgroupUnavailable.
var ErrCgroupUnavailable = cgroup.ErrUnavailable

// ErrCgroupLimitUnavailable is wrapped by New's refusal when a limit of
// Config.Cgroup cannot be set: no cgroup at all, or a parent that does not
// enable the limit's controller for its children (the message names the
// file, the controller and the parent). Cgroup.BestEffortLimits drops
// such a limit instead. It is the same error as
// launch.ErrCgroupLimitUnavailable.
var ErrCgroupLimitUnavailable = cgroup.ErrLimitUnavailable

// Cgroup configures the cgroup layer: each runtime process (a worker, or
// a one-shot call's process) started in a cgroup v2 of its own, killed
// as a whole (cgroup.kill) and removed when the process exits, so that no
// descendant outlives it, whatever session or process group it moved to.
// The zero value uses the layer where this process has a usable delegated
// cgroup v2 (its own cgroup, writable, on a kernel with cgroup.kill:
// Linux 5.14) and falls back silently where it has none. The fallback is
// the process group alone: a descendant that leaves the group (setsid,
// setpgid) outlives the runtime process, its instance's Close and the
// Backend's Close. Backend.Cgroups says which is in force.
//
// The same struct, with the same meaning, is contain.Cgroup (package
// launch/contain).
type Cgroup struct {
	// Off turns the layer off: the fallback, always.
	Off bool
	// Parent is an existing cgroup v2 directory delegated to this
	// process's user, under which each process gets its cgroup. Empty
	// means this process's own cgroup.
	Parent string
	// Required makes New refuse (ErrCgroupUnavailable) where the layer
	// is unavailable, instead of falling back.
	Required bool
	// Pids is pids.max of each process's cgroup: its processes and
	// threads together. Zero leaves it unset.
	Pids int64
	// MemoryBytes is memory.max of each process's cgroup. Zero leaves it
	// unset.
	MemoryBytes int64
	// SwapBytes is memory.swap.max of each process's cgroup; negative
	// means no swap. Zero leaves it unset.
	SwapBytes int64
	// CPUPercent is cpu.max as a share of one CPU (150: one and a half).
	// Zero leaves it unset.
	CPUPercent int
	// BestEffortLimits drops a limit that cannot be set (logged as a
	// warning) instead of refusing. Without it, a limit asked and
	// unavailable makes New refuse with ErrCgroupLimitUnavailable.
	BestEffortLimits bool
}

// openCgroup returns the parent the Backend's processes get their cgroups
// under, or nil for the fallback.
func openCgroup(c Cgroup, log *slog.Logger) (*cgroup.Parent, error) {
	p, fallback, err := cgroup.Resolve(cgroup.Option(c).Config())
	switch {
	case err != nil:
		return nil, fmt.Errorf("Cgroup: %w", err)
	case fallback != nil:
		log.Debug("process: no cgroup layer; a descendant that leaves its process group outlives its runtime process", "why", fallback)
		return nil, nil
	}
	if d := p.Dropped(); len(d) > 0 {
		log.Warn("process: cgroup limits dropped: their controllers are not enabled", "parent", p.Dir(), "dropped", d)
	}
	return p, nil
}

// Cgroups returns the directory under which each runtime process gets
// its own cgroup, or "" when the Backend runs without the cgroup layer
// (Config.Cgroup): then a descendant that leaves its process group
// outlives the process that started it.
func (b *Backend) Cgroups() string {
	if b.cg == nil {
		return ""
	}
	return b.cg.Dir()
}
