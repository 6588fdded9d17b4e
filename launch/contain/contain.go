// Package contain is the vocabulary of host containment (doc/design.md,
// “Containment”): what confines each host a launch.Launcher starts, cold
// or warm. Config (launch.Config.Containment) turns the Linux layers on
// and off (Layers) and sets their paths and resource Limits; Cgroup
// (Config.Cgroup) is the cgroup layer; User (launch.Config.User) is the
// identity a host runs as. Init is the containment init's entry point:
// a program that launches contained hosts calls it first in main (or
// TestMain), or names one that does in Config.InitPath
// (cmd/zeo-launch-init).
//
// The package only describes containment; package launch applies it,
// validates a Config in launch.New and refuses what cannot be applied
// (launch.ErrContainmentUnavailable).
package contain

import (
	"strings"

	"github.com/zeoruntime/runtimeipc/internal/containinit"
)

// Layers is a set of containment layers (Config.Off).
type Layers uint

// The containment layers (doc/design.md, “Containment”).
const (
	// LayerFilesystem is Landlock's filesystem rules: read-only access to
	// the provider environment, the system directories and
	// Config.ReadPaths; read-write access to the attempt's workspace
	// and Config.WritePaths; nothing else.
	LayerFilesystem Layers = 1 << iota
	// LayerNetwork is a network namespace of its own for every host,
	// inside a new user namespace: empty (only a loopback interface,
	// down) when its context does not allow the network; otherwise with
	// one listener on its loopback, the egress proxy (launch.EgressPort), which
	// reaches only the context's network_hosts. A zygote's children share
	// their server's namespace and each connects only to its own egress
	// listener (doc/design.md, “Warm egress”).
	LayerNetwork
	// LayerScope is Landlock's IPC scoping (ABI 6): no signal to, and no
	// abstract unix socket of, any process outside the host's own tree.
	LayerScope
	// LayerLimits is the resource limits of Config.Limits.
	LayerLimits
	// LayerNoNewPrivs is prctl(PR_SET_NO_NEW_PRIVS): no exec gains
	// privileges (setuid, file capabilities). Landlock and seccomp need
	// it: launch.New refuses to turn it off while LayerFilesystem, LayerScope or
	// LayerSeccomp is on.
	LayerNoNewPrivs
	// LayerSeccomp is a seccomp filter denying (EPERM) system calls a
	// capability host never needs (SeccompDenied).
	LayerSeccomp

	// AllLayers is every layer: Config{Off: AllLayers} launches hosts
	// uncontained, as before containment existed.
	AllLayers = LayerFilesystem | LayerNetwork | LayerScope | LayerLimits | LayerNoNewPrivs | LayerSeccomp
)

// layerNames are the layers' names, in bit order.
var layerNames = []string{"filesystem", "network", "scope", "limits", "no_new_privs", "seccomp"}

// String lists the layers' names, separated by "+", or "none".
func (s Layers) String() string {
	var out []string
	for i, n := range layerNames {
		if s&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "+")
}

// Limits are the resource limits a contained host starts with
// (LayerLimits), each set as both its soft and its hard limit, so the
// host cannot raise it. Zero means the stated default; a negative value
// leaves that limit as this process has it.
type Limits struct {
	// Processes is RLIMIT_NPROC. In the user namespace a host gets when
	// it has no network (LayerNetwork), the kernel counts the host's own
	// processes and threads only (a zygote's: the server's and all its
	// children's together); otherwise every process of its user, so set
	// it with that in mind. The kernel does not apply it to a host running
	// as root (run it as launch.Config.User). Default DefaultLimitProcesses.
	Processes int64
	// OpenFiles is RLIMIT_NOFILE. Default DefaultLimitOpenFiles.
	OpenFiles int64
	// DataBytes is RLIMIT_DATA: the host's private writable memory
	// (heap, anonymous mappings), which is what an allocation takes; the
	// address space (RLIMIT_AS) is left alone, as runtimes reserve far
	// more of it than they use. Default DefaultLimitDataBytes.
	DataBytes int64
	// FileBytes is RLIMIT_FSIZE: the largest file the host may write or
	// extend (beyond it, SIGXFSZ, or EFBIG when ignored). Default
	// DefaultLimitFileBytes.
	FileBytes int64
	// CoreBytes is RLIMIT_CORE. Zero means 0 (no core dumps, which would
	// hold the host's memory); a negative value leaves it alone.
	CoreBytes int64
}

// Config is the containment a launch.Launcher applies to every host it
// starts, cold or warm, on Linux (doc/design.md, “Containment”). The zero
// value is full containment: every layer on, the policy of each launch
// derived from the launch.LaunchContext it serves (network_allowed,
// filesystem_read, filesystem_write) and from these fields. Every layer left
// on is required: launch.New refuses, with launch.ErrContainmentUnavailable,
// a Config whose layers the kernel lacks. On darwin no layer exists and a
// Config has no effect (launch.Launcher.ContainmentSummary says so).
//
// The mechanism: the host is started as this program re-executed
// (InitPath), which, in Init, applies the policy to itself and then execs
// the interpreter, so that the policy is in force before the host runs a
// line of provider code. A zygote's server is started the same way, and
// each child it forks adds its own Landlock layer before the host runs.
//
// A host whose context allows the network reaches only its network_hosts,
// through an egress proxy the launcher runs for it (HTTP CONNECT and
// plain-HTTP forwarding, named by the host's HTTP_PROXY, HTTPS_PROXY and
// ALL_PROXY), cold or warm; with network_allowed and no network_hosts it
// reaches nothing. Turn LayerNetwork off for a host that may reach everything
// this machine reaches (doc/design.md, “Containment”).
type Config struct {
	// Off turns layers off. Zero keeps every layer on; AllLayers turns
	// containment off entirely.
	Off Layers
	// Limits are the resource limits (LayerLimits).
	Limits Limits
	// WorkspaceRoot, when set, is an existing directory under which the
	// launcher creates, for each invocation, a fresh private directory
	// (0700, named after the attempt) that is the host's working
	// directory and its one writable directory besides WritePaths; no
	// other attempt's host can reach it. The directory is removed, with
	// everything in it, when Invoke returns, unless KeepWorkspaces is
	// set. launch.Invocation.Dir must then be empty. When WorkspaceRoot is
	// empty the host's working directory (launch.Invocation.Dir, else
	// launch.Config.Dir) is its writable workspace: give each attempt its own.
	WorkspaceRoot string
	// KeepWorkspaces leaves the directories created under WorkspaceRoot
	// in place for the embedder to inspect and remove.
	KeepWorkspaces bool
	// ReadPaths are further files and directories every host may read
	// (and execute), beyond what it gets anyway: the interpreter and its
	// environment prefix, the PYTHONPATH and PYTHONHOME entries of
	// launch.Config.Env, the system directories /usr, /lib, /lib64, /lib32,
	// /bin, /sbin and /etc (each where it exists), /proc, /dev/random and
	// /dev/urandom, and /dev/null and /dev/zero (which it may also write).
	ReadPaths []string
	// WritePaths are further files and directories every host may read
	// and write.
	WritePaths []string
	// FilesystemRead and FilesystemWrite are read-only and read-write
	// paths granted only to hosts whose launch.LaunchContext sets
	// filesystem_read, respectively filesystem_write.
	FilesystemRead, FilesystemWrite []string
	// InitPath is the program started as the containment init: one whose
	// main calls Init first. Empty means this program, which must then
	// have called Init (launch.New refuses otherwise, with
	// launch.ErrContainmentUnavailable). cmd/zeo-launch-init is such a program
	// for embedders that cannot call Init in their own main.
	InitPath string
	// Cgroup is the cgroup layer: by default, where this process has a
	// usable delegated cgroup v2, each host runs in a cgroup of its own,
	// killed as a whole when the host ends, so that no descendant
	// outlives it. It is independent of Off.
	Cgroup Cgroup
	// AssumeNoLandlock makes the launcher behave as on a kernel without
	// Landlock: a Config that needs it (LayerFilesystem or LayerScope on)
	// is refused. For tests of that refusal.
	AssumeNoLandlock bool
}

// Defaults of Limits, used when the field is zero.
const (
	// DefaultLimitProcesses is Limits.Processes' default.
	DefaultLimitProcesses = 512
	// DefaultLimitOpenFiles is Limits.OpenFiles' default.
	DefaultLimitOpenFiles = 1024
	// DefaultLimitDataBytes is Limits.DataBytes' default.
	DefaultLimitDataBytes = 4 << 30
	// DefaultLimitFileBytes is Limits.FileBytes' default.
	DefaultLimitFileBytes = 1 << 30
)

// SeccompDenied returns, in a fresh slice, the names of the system calls the
// seccomp layer (LayerSeccomp) denies with EPERM: tracing other processes,
// mounting, namespaces (unshare, setns, and clone with a namespace flag;
// clone3, whose flags a filter cannot read, fails with ENOSYS so that libc
// falls back to clone), BPF, kernel keyrings, modules and kexec, reboot,
// swap, quotas, perf events, userfaultfd and handle-based opens. A capability
// host needs none of them.
func SeccompDenied() []string { return containinit.SeccompDenied() }
