// Package launch is the Runtime's trusted launcher for the ZEO runtime host
// (`zeo-capability`, protocol version 1; see doc/protocol.md, “Descriptors”,
// “Launch context”, “Host result”, “Result check”, “Static discovery” and
// “Host command line”): it builds the LaunchContext, starts the host with
// exactly the descriptors, environment and process group the protocol
// requires, serves its IPC through an ipc.Session bound to the child,
// supervises it to its deadline, and judges what it left behind — its one
// stdout line and its exit status — with ParseResult.
//
// # First steps
//
// Start with [New]: it checks a [Config] (the provider environment's
// interpreter, its arguments and environment, a Verifier such as
// environment.TreeVerifier) and returns the [*Launcher] that supervise.Config
// takes. Most embedders call nothing else here: a supervise.Supervisor
// builds each LaunchContext, invokes and judges (see
// examples/quickstart). Package launch/discovery (Describe, Doctor) runs
// the host's static discovery on an installed provider (no capability
// runs) through [Launcher.Discover].
// Driving a host directly, for a controller of your own, takes:
//
//   - contain.Init (package launch/contain), the first statement of main (or TestMain) of every program
//     that launches contained hosts (each host starts as that program
//     re-executed, which applies the containment and then execs the
//     interpreter);
//   - a [LaunchContext] (supervise/handler.BuildContext makes one from the
//     ledger's operation), encoded once with [LaunchContext.Encode], and
//     the request ([EncodeRequest]);
//   - [Launcher.Invoke] with an [Invocation] (the Encoded context, the
//     request, the ipc.Handler that answers the host), which returns the
//     [Outcome]: the [HostResult] (valid only with a nil error), the
//     [Process] evidence, the session's summary and the rest of what the
//     result was judged against.
//
// The rest is optional: warm launch ([Launcher.StartZygote],
// [ZygoteConfig], [Zygote.Invoke]; “Warm launch” below), containment
// settings (Config.Containment, of package launch/contain: contain.Config,
// Cgroup, Limits, Layers; on by default, “Containment” below), another uid
// (Config.User, a contain.User), more discovery (discovery.ListCapabilities,
// discovery.DescribeCapability) and environment verification (package
// launch/environment: TreeVerifier, DigestTree).
//
// # What a launch guarantees
//
// The five duties of the trusted launcher (doc/protocol.md,
// “Launcher duties”):
//
//   - Exact program and environment: Config.Interpreter is an absolute path,
//     never looked up; Config.Env is the child's whole environment and
//     nothing of the launching process is inherited. An EnvironmentVerifier
//     (environment.TreeVerifier: a digest of the environment's directory tree) must
//     accept the binding's environment_digest before every launch.
//   - A fresh private socketpair (AF_UNIX, SOCK_STREAM, close-on-exec) whose
//     child end is FD 4; the Runtime end has SO_PASSCRED on before the child
//     starts and is wrapped with net.FileConn, never .Fd().
//   - The context on FD 3 and the request on stdin, each a sealed memfd
//     (Linux; an unlinked temp file on macOS) at offset 0, so the host reads
//     them to EOF in any order and a context of any size up to 1 MiB cannot
//     deadlock. The child holds exactly FDs 0–4: every other descriptor of
//     this process is marked close-on-exec first (Config.LeaveParentFDs),
//     and the child itself closes every other descriptor number up to
//     past the highest this process holds, after the fork and before the
//     exec (os/exec closes a nil ExtraFiles entry in the child), so that a
//     descriptor another goroutine opens without close-on-exec while the
//     child forks stays out too.
//   - Its own session and process group. At the attempt deadline (or when
//     ctx ends) the group gets SIGTERM, and SIGKILL after Config.Grace.
//     Group signals are sent only while the leader is unreaped, so the
//     group id cannot have been reused; on Linux the exit is awaited on a
//     pidfd in the runtime's poller (no thread blocked for the host's life)
//     and observed with waitid(WNOWAIT), the group's stragglers are killed,
//     and only then is the leader reaped, exactly once. Config.WaitDelay
//     bounds the wait for stdout/stderr EOF after exit, so a descendant
//     holding stdout can never hang the call.
//   - The channel bound to the actual child: the ipc.Session checks that
//     every frame was sent by the child's pid and that bootstrap presents
//     the child's pid, the bootstrap id and the launch digest of the context
//     that was sent.
//
// Stdout is read to at most MaxResultBytes+1 bytes (the rest is drained and
// discarded); stderr keeps a bounded tail for diagnostics only and is never
// parsed.
//
// # Privilege: the host runs with less
//
// Config.User runs the host as another uid and gid with no supplementary
// groups; New refuses a Config that would start a host as root (or group
// 0) unless Config.AllowRootHost says so. Unless Config.LeaveDumpable is
// set, New marks the whole controller process non-dumpable
// (prctl(PR_SET_DUMPABLE, 0); process-wide and for the rest of its life:
// no core dumps, no same-user ptrace attach), so that a host running as
// the same user cannot read its memory, environment or descriptors
// through /proc either (doc/design.md, “Less privilege for the host”).
//
// # What the credential check proves
//
// The Runtime end of the socket has SO_PASSCRED on, and the session
// accepts a frame only if the SCM_CREDENTIALS the kernel attached to its
// bytes name the child's pid, and a bootstrap only if it presents that
// pid. The kernel attaches the sender's real credentials, unless the
// sender supplies its own: an unprivileged process may only supply its
// own pid, uid and gid (anything else is EPERM), but a process with
// CAP_SYS_ADMIN (root) may name any pid, and one with CAP_SETUID and
// CAP_SETGID any uid and gid. So the check proves that a frame came from
// the child, or from a privileged process on this host:
//
//   - against a host running unprivileged (Config.User, or this process
//     not root), it proves the sender: another process holding the socket
//     (a descendant the host gave FD 4 to) is refused, whatever it claims;
//   - against a root host it proves nothing: root can name the child's pid
//     from any process. Such a host is trusted with this whole machine
//     anyway, which is why New wants AllowRootHost for it.
//
// It never proves which program the child is running: the child may exec
// another program, or hand the socket to a descendant that runs under its
// pid (threads share it). The launcher's guarantees (exact interpreter,
// environment digest) are about what was started, not about what runs
// later.
//
// # What it refuses
//
// ParseResult never resolves a disagreement toward the exit code: a
// signal, an unknown exit status, empty, oversized, multi-line or malformed
// stdout, an incoherent HostResult, a foreign or null binding and an exit
// status that disagrees with the state are each a distinct *ResultError
// wrapping ErrBadResult. Invoke also refuses a result that what its own
// session saw contradicts (ErrSessionMismatch; launch/coherence.go holds
// the rules): a waiting_approval, cancelled, refused or needs_reconciliation
// that no reply and no ending of the host's own explains, a success whose
// result.publish the session did not allow (doc/design.md, “A host result
// is evidence”). The Runtime then keeps the evidence and asks its ledger;
// it never redispatches (doc/design.md, “No retries on the wire”).
//
// # Warm launch
//
// A real Python host spends most of its start-up importing its
// dependencies (pydantic, jsonschema) before it sends its first frame. A
// Zygote (Launcher.StartZygote, then Zygote.Invoke instead of
// Launcher.Invoke) removes that wait while each invocation still gets a
// fresh process of its own: a fork server, a small Python program of
// this package (standard library only), is started exactly as a host is
// started, imports trusted modules, and forks one child per invocation;
// the child then runs the host module as `python -m` runs it. By default
// (ZygoteConfig.Preload nil) the trusted modules are the host's own
// import closure: the server reads the host module's source (and that of
// the modules of its package it imports), never running it, and imports
// what they import at their top level from outside the host package and
// the provider's package, so that the host's contract models are built
// once, in the server. Cold launch stays the default (see doc/design.md,
// “Warm launch”).
//
// What a warm child gets is what a cold host gets: exactly FDs 0–4 (the
// same five descriptors, passed to the server with SCM_RIGHTS and placed
// by the child, which closes every other), exactly the environment sent
// (in os.environ and at the C level, plus what the interpreter itself
// adds at start-up, as a cold one does), its own session and process
// group, the signal dispositions and mask of a fresh interpreter, the
// argument vector, sys.path[0] and __main__ of `python -m`, and its exit
// status as the interpreter sets it (SystemExit codes, an uncaught
// exception printed to stderr and status 1). The launcher's duties are
// the same: the server opens a pidfd for each child and passes it back
// with its pid; the session's credential check uses that pid; the
// deadline, SIGTERM then SIGKILL to the child's process group (through
// the pidfd, so that the group id cannot have been reused), WaitDelay
// and the output bounds work as for a cold host; the exit status comes
// from the server, the child's parent, which kills the group's stragglers
// before it reaps the child, and is checked against the pidfd.
//
// Before every fork the server checks that no module of the host or the
// provider is loaded (provider code is imported only by the child, after
// bootstrap), that one thread runs, that the host's process-wide
// switches (ZygoteConfig.Switches) are as the preload left them, and that
// it holds no descriptor it does not know; otherwise it refuses, and that
// invocation is launched cold, with a warning in the log. A server that
// dies, hangs or answers wrongly is killed and replaced: an invocation
// whose host it had not forked yet is launched cold, and one whose host
// runs fails as a protocol error (ErrExitUnknown) once its host is
// killed, never by a wait. A server is also replaced when an
// invocation's binding names another environment digest, and after
// ZygoteConfig.MaxForks hosts or ZygoteConfig.MaxAge.
//
// What a warm child shares with its siblings, and a cold host would not:
// the interpreter's string hash secret and the address-space layout
// (ASLR) of the server, and the server's memory pages until either
// writes them. A host that learns one of these learns it for every host
// the same server forks; replacing the server after MaxForks hosts or
// MaxAge bounds that. Its parent is the server, not this process, and
// /proc/self/cmdline and /proc/self/environ show the server's.
//
// # Provider-warm launch
//
// With ZygoteConfig.ProviderWarm, the server also does once what the
// host does before every call and what depends only on the provider
// generation: with the host's own functions (recognised by the digests
// of its sources, ProviderWarm.Hosts), it sets the managed-execution
// latch, validates the admitted inventory, imports the provider and
// activates its generation. It serves one binding and one tenant
// (organization and project); each child receives its invocation on a
// channel of its own, straight from the launcher, and starts from the
// activated generation. An invocation of another binding or tenant, a
// host the server does not recognise, and a provider whose loading left
// threads, descriptors or child processes are launched cold, with a log
// line saying why (doc/design.md, “Provider-warm launch”).
//
// # Containment
//
// On Linux every host is contained by default (Config.Containment): a
// program that launches hosts calls contain.Init first in main, and each host
// starts as that program re-executed, which applies the launch's policy
// to itself — rlimits, no_new_privs, a Landlock ruleset (read-only: the
// provider environment and system directories; read-write: the attempt's
// workspace) with IPC scopes, a seccomp deny list, and a network
// namespace in a user namespace, empty or, when the context allows the
// network, with an egress proxy reaching only its network_hosts as the one
// way out (a zygote's children share their server's namespace, each kept
// to its own proxy) — and then execs the interpreter. A layer the kernel lacks is refused
// (ErrContainmentUnavailable), never skipped. See doc/design.md,
// “Containment”, for what each layer stops and what none does.
//
// # Limits of the containment
//
// A process group is not a cgroup: a descendant that calls setsid leaves
// the group and survives the group kill. Where this process has a usable
// delegated cgroup v2, each host (cold or warm) and each zygote server
// runs in a cgroup of its own, killed as a whole (cgroup.kill) and removed
// before Invoke returns, so no descendant outlives its host; cgroup limits
// are set only where asked and where the parent enables their controller
// (Containment.Cgroup, Launcher.Cgroups). Without it (Containment.Cgroup.Off, no
// usable cgroup v2, darwin) such a descendant survives the host and
// Invoke (it still cannot hang the call, because of WaitDelay). The
// environment check
// is check-then-execute: the tree must not be writable by anyone the
// Runtime does not trust.
//
// # Platforms
//
// Linux is first class. macOS builds and runs with a temp file instead of a
// memfd and without waitid(WNOWAIT), so stragglers of a host that exits on
// its own are not killed there; warm launch needs pidfds, so StartZygote
// returns ErrUnsupported there. Any other platform, Windows included, does
// not compile this package (doc/design.md, “Platforms”).
package launch
