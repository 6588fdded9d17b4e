package contain

// Cgroup configures the cgroup layer (doc/design.md, “Containment”): each
// host, cold or warm, and each zygote server runs in a cgroup v2 of its own,
// and when the host has ended everything left in it is killed (cgroup.kill)
// and the cgroup removed before launch.Launcher.Invoke returns, so that no
// descendant outlives the host, whatever session or process group it moved
// to. The zero value uses the layer where this process has a usable delegated
// cgroup v2 (its own cgroup, writable, on a kernel with cgroup.kill: Linux
// 5.14) and falls back where it has none. The fallback is the process group
// alone: a descendant that calls setsid or setpgid outlives its host and
// Invoke. launch.Launcher.Cgroups says which is in force.
//
// The layer is independent of Config.Off: it is supervision, and
// applies to uncontained hosts too. On darwin it is never available.
//
// The same struct, with the same meaning, is process.Cgroup (package
// capabilityruntime/process).
type Cgroup struct {
	// Off turns the layer off: the fallback, always.
	Off bool
	// Parent is an existing cgroup v2 directory delegated to this
	// process's user, under which each host gets its cgroup. Empty means
	// this process's own cgroup.
	Parent string
	// Required makes launch.New refuse (launch.ErrCgroupUnavailable) where
	// the layer is unavailable, instead of falling back.
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
	// unavailable makes launch.New refuse with launch.ErrCgroupLimitUnavailable.
	BestEffortLimits bool
}
