// Package hostproc is the simulated ZEO runtime host as a process: the
// command line, descriptors, stdout envelope and exit codes of upstream's
// `zeo-capability` (see doc/protocol.md), driving an invocation with
// internal/testkit/hostsim's scripted providers. [Main] is its whole program, so
// that any executable of this module can become the simulated host: the
// zeo-hostsim command is nothing else, and zeoctl runs it in a hidden mode
// when it re-executes itself as the host of its demo. It exists so that the
// Runtime side can be exercised with real processes; it is never a real
// provider.
//
// # Command line
//
// As upstream's host: `invoke --context-fd N --runtime-fd N` (the
// LaunchContext on FD 3, the InvocationRequest on stdin, the IPC socket on
// FD 4), and the static discovery commands `describe`, `doctor`,
// `capabilities list [--limit N] [--offset N]` and
// `capabilities describe ID`, each reading the provider binding from
// --binding-fd (default 3), with --json accepted and unique prefixes of
// option names, as argparse allows.
//
// # The simulated installation
//
// The simulated provider environment has one interpreter and one installed
// distribution; a binding that names others is refused after bootstrap
// with protocol_error, as upstream's provider activation refuses it. The
// capabilities it can run are chosen by the manifest's capability name:
//
//   - echo: answers {"text": arguments.text} (the default for any name not
//     listed here)
//   - two_effects: requests effect-1 ("prepare") and effect-2 ("commit")
//     on connection-a and answers {"receipts": [...], "target": ...}
//   - redeliver: requests effect-1 ("prepare") on connection-a twice
//     with the same input, the second time as a redelivery, and answers
//     as two_effects with both receipts
//   - fail: ends failed with ZEO_DEMO_DOMAIN_FAILURE
//   - cancel: ends cancelled with ZEO_CAP_CANCELLED
//   - nothing: ends unavailable with ZEO_DEMO_UNAVAILABLE
//   - slow: waits arguments.millis milliseconds (ends cancelled when the
//     invocation is), then answers as echo
//   - crash: SIGKILLs itself during the invocation, after bootstrap
//   - noisy: writes a fake result to stdout and a traceback to stderr
//     (both go to /dev/null, as upstream's sink), then answers as echo
//
// # Environment
//
// The host reads only these variables; the Runtime's launcher passes the
// host's whole environment explicitly, so each must be set there:
//
//   - ZEO_HOSTSIM_PYTHON_VERSION: the interpreter version the binding's
//     python_version must equal. Empty means [hostsim.DefaultPythonVersion].
//   - ZEO_HOSTSIM_DISTRIBUTION: the installed distribution the binding's
//     distribution must equal. Empty means [hostsim.DefaultDistribution].
//   - ZEO_HOSTSIM_VERSION: the installed version the binding's version
//     must equal. Empty means [hostsim.DefaultVersion].
//   - ZEO_HOSTSIM_SCENARIO: a misbehaviour, for tests of the Runtime's
//     duties (see Scenarios). Empty means a well-behaved host; a name not
//     listed there makes the host write protocol_error, with a line naming
//     the known scenarios on stderr.
//   - ZEO_HOSTSIM_CLAIM, ZEO_HOSTSIM_CLAIM_CODE: the state (and error
//     code) the claim and claim-at-once scenarios write.
//   - ZEO_HOSTSIM_HOSTILE: the actions of the hostile scenario.
//
// # Scenarios
//
// Each exists to exercise one duty of the Runtime's launcher:
//
//   - report: instead of a HostResult, writes a JSON report of what the
//     process inherited (descriptors at startup, environment, pid, process
//     group, session, the sizes of the context and stdin); no IPC
//   - probe: the report, plus what the host could do to the Runtime that
//     started it (its parent): read its environment, 4 KiB of its memory
//     and its descriptor list through /proc, and send a frame on the
//     socket with SCM_CREDENTIALS naming the parent's pid; each is "ok" or
//     the error
//   - hang: blocks before any IPC; SIGTERM ends it
//   - hang-ignore-term: blocks before any IPC and ignores SIGTERM
//   - grandchild: starts a grandchild in its process group that holds
//     stdout and ignores SIGTERM, writes its pid to hostsim-grandchild.pid
//     in the working directory, then blocks ignoring SIGTERM
//   - grandchild-escape: runs normally, then starts a grandchild in a new
//     session (outside the group) that holds stdout, writes its pid file
//     and exits
//   - garbage: writes "not JSON" and exits 0, before any IPC
//   - two-lines: writes its result line twice
//   - big-stdout: writes its result line and then 1 MiB of 'x'
//   - wrong-exit: writes its result and exits with a code that disagrees
//   - claim-success: runs normally, then writes a well-formed succeeded
//     result whatever happened, and exits 0
//   - claim: runs normally, then writes the state ZEO_HOSTSIM_CLAIM names
//     whatever happened, with the error code, effect disposition and exit
//     status an honest host writes with it (ZEO_HOSTSIM_CLAIM_CODE
//     overrides the error code)
//   - claim-at-once: the same claim, right after reading its inputs,
//     without any IPC
//   - crash-mid-frame: sends half a bootstrap frame and SIGKILLs itself
//   - exit-1: exits 1 without output, as a crashing interpreter would
//   - lie: answers discovery with a well-formed but wrong document
//   - sleeper: the grandchild role of the grandchild scenarios: ignores
//     SIGTERM and sleeps until killed
//   - hang-before-publish: runs until the capability returns (its effects
//     done), writes the process's pid to hostsim-paused.pid in the working
//     directory ([PausedPIDFile]), then blocks before result.publish;
//     SIGTERM ends it
//   - hostile: a hostile provider, for the containment tests: tries each
//     action ZEO_HOSTSIM_HOSTILE lists ([EnvHostile]: read or write a
//     file, connect, resolve a name, signal a pid, reach an abstract
//     socket, fork, allocate, write a large file, GET or CONNECT through
//     the proxy of its environment, report its capabilities) and writes a JSON report of what each
//     got instead of a result; no IPC
//   - hostile-echo: serves normally, but its echo capability tries the
//     hostile actions first and answers the JSON report as its text: a
//     hostile provider seen through the Supervisor
//
// [Usage] returns the settings and scenarios as help text; a test keeps it
// and this comment in step.
//
// # Platforms
//
// Linux only (it reads /proc and Linux socket options); elsewhere Main
// returns protocol_error's exit status without doing anything.
package hostproc
