// Package process is the capability runtime backend of kind "process":
// native executables started as child processes, speaking either protocol of
// the contract (see doc/capabilityruntime.md, “The process backend”).
//
// Start with [New]: the [*Backend] it returns is registered in a
// capabilityruntime.Registry under the kind "process".
//
// # Long-lived workers: neuron/capability-runtime-v1
//
// Every Start of the same type@version shares one pool of gRPC workers,
// counted by holders and stopped when the last holder closes. A call leases
// a worker: an idle one, else a new one while fewer than MaxWorkers
// processes of the pool exist, else the first to come free. Processes being
// started or stopped count against MaxWorkers too, so the pool never has
// more processes than that.
//
// A worker is started with its own private directory (a Unix socket path
// and a ready file, passed in NEURON_CAPABILITY_RUNTIME_SOCKET and _READY).
// It is ready when the ready file exists, polled within the caller's
// deadline and at most Config.StartTimeout; then Initialize must answer the
// protocol that was asked for (upstream never checked). Each call sends the
// caller's deadline as timeout_ms, a fresh execution_id unless the Request
// names one, and the Request's correlation_id. A worker whose call failed in
// any way (cancelled, past its deadline, a broken connection, a crash, a
// non-OK status) is discarded, never reused, and never retried on; a worker
// found dead while idle is replaced before a call reaches it. Health calls
// the worker's Health RPC.
//
// A worker stops politely first: a Shutdown call, then SIGTERM to its
// process group, each with Config.ShutdownGrace to take effect, then
// SIGKILL; the stop never outlives its context (and a bounded wait for the
// reaping after SIGKILL).
//
// # One-shot processes: neuron/capability-runtime-v1-json
//
// Each Execute runs one process: the Request as JSON on stdin, exactly one
// Response on stdout, at most Config.MaxResponseBytes of it. The process
// group is killed when the call's context ends or stdout overflows.
//
// # What every runtime process gets
//
// Its environment is the variables named by EnvAllowlist that are set in this
// process plus the NEURON_CAPABILITY_RUNTIME_* variables of its protocol,
// and nothing else (upstream's one-shot path passed the whole environment).
// Its working directory is the spec's RootDir, its only descriptors are 0–2
// (stdin and stdout are /dev/null for a worker; stderr is kept, the last
// 4 KiB, for errors), and it leads its own process group; on Linux the rest
// of the group is killed as soon as the leader exits.
//
// # No descendant outlives a runtime process: the cgroup layer
//
// Where this process has a usable delegated cgroup v2 (Config.Cgroup: its
// own cgroup, or Cgroup.Parent, writable, on Linux 5.14 or later), each
// runtime process starts inside a cgroup of its own (clone3 into it, so
// nothing it runs is ever outside), and once it exited, for whatever
// reason, everything left in that cgroup is killed (cgroup.kill) and the
// cgroup removed before the exit is reported: no descendant outlives the
// process, its instance's Close or the Backend's Close, whatever session
// or process group it moved to. Cgroup limits (pids.max, memory.max,
// memory.swap.max, cpu.max) are set where the parent enables their
// controllers, and refused (ErrCgroupLimitUnavailable) where not.
// Backend.Cgroups says whether the layer is in force.
//
// Without it (Cgroup.Off, or no usable cgroup v2 and Cgroup.Required
// unset) only the process group is killed: a descendant that calls setsid
// or setpgid outlives the runtime process, its instance's Close and the
// Backend's Close. See doc/design.md, “Containment”.
//
// Values follow the contract's rules on both protocols: params of any type
// encoding/json can encode are accepted, integers beyond ±(2^53−1), NaN and
// infinities are refused with ErrUnsupportedValue before anything starts,
// and numbers in results are float64.
//
// The package builds on Unix only.
package process
