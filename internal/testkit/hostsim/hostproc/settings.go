package hostproc

import (
	"strings"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
)

// The environment variables the simulated host reads (see the package
// documentation, “Environment”).
const (
	EnvPythonVersion = "ZEO_HOSTSIM_PYTHON_VERSION"
	EnvDistribution  = "ZEO_HOSTSIM_DISTRIBUTION"
	EnvVersion       = "ZEO_HOSTSIM_VERSION"
	EnvScenario      = "ZEO_HOSTSIM_SCENARIO"
	// EnvClaim names the state the claim and claim-at-once scenarios
	// write, and EnvClaimCode its error code when not the usual one.
	EnvClaim     = "ZEO_HOSTSIM_CLAIM"
	EnvClaimCode = "ZEO_HOSTSIM_CLAIM_CODE"
	// EnvHostile lists, for the hostile scenario, the actions the host
	// tries, separated by ";", each "verb:argument" (see hostileAction).
	EnvHostile = "ZEO_HOSTSIM_HOSTILE"
)

// scenario is a misbehaviour selected by ZEO_HOSTSIM_SCENARIO. The empty
// scenario is a well-behaved host. Each is described in scenarioTable.
type scenario string

// The scenarios.
const (
	scReport            scenario = "report"
	scProbe             scenario = "probe"
	scHang              scenario = "hang"
	scHangIgnoreTerm    scenario = "hang-ignore-term"
	scGrandchild        scenario = "grandchild"
	scGrandchildEscape  scenario = "grandchild-escape"
	scGarbage           scenario = "garbage"
	scTwoLines          scenario = "two-lines"
	scBigStdout         scenario = "big-stdout"
	scWrongExit         scenario = "wrong-exit"
	scClaimSuccess      scenario = "claim-success"
	scClaim             scenario = "claim"
	scClaimAtOnce       scenario = "claim-at-once"
	scCrashMidFrame     scenario = "crash-mid-frame"
	scExit1             scenario = "exit-1"
	scLie               scenario = "lie"
	scSleeper           scenario = "sleeper"
	scHangBeforePublish scenario = "hang-before-publish"
	scHostile           scenario = "hostile"
	scHostileEcho       scenario = "hostile-echo"
)

// PausedPIDFile is the file, in the host's working directory, where the
// hang-before-publish scenario writes its pid once the capability has
// returned.
const PausedPIDFile = "hostsim-paused.pid"

// scenarioTable is every scenario with its one-line help, in the order of
// the package documentation.
func scenarioTable() []struct {
	sc   scenario
	help string
} {
	return []struct {
		sc   scenario
		help string
	}{
		{scReport, "write a JSON report of what the process inherited instead of a result; no IPC"},
		{scProbe, "the report, plus what the host could do to its parent: read its environment, memory and descriptors through /proc, and send a frame whose credentials name the parent"},
		{scHang, "block before any IPC; SIGTERM ends it"},
		{scHangIgnoreTerm, "block before any IPC, ignoring SIGTERM"},
		{scGrandchild, "start a grandchild in the group that holds stdout and ignores SIGTERM (pid in hostsim-grandchild.pid), then block ignoring SIGTERM"},
		{scGrandchildEscape, "run normally, then start a grandchild in a new session that holds stdout (pid in hostsim-grandchild.pid)"},
		{scGarbage, `write "not JSON" and exit 0 before any IPC`},
		{scTwoLines, "write the result line twice"},
		{scBigStdout, "write the result line, then 1 MiB of 'x'"},
		{scWrongExit, "write the result and exit with a code that disagrees with it"},
		{scClaimSuccess, "run normally, then claim succeeded whatever happened and exit 0"},
		{scClaim, "run normally, then claim the state " + EnvClaim + " names (with " + EnvClaimCode + " as its error code, if set) whatever happened"},
		{scClaimAtOnce, "claim the state " + EnvClaim + " names right after reading the inputs, without any IPC"},
		{scCrashMidFrame, "send half a bootstrap frame and SIGKILL itself"},
		{scExit1, "exit 1 without output, as a crashing interpreter would"},
		{scLie, "answer discovery with a well-formed but wrong document"},
		{scSleeper, "the grandchild role: ignore SIGTERM and sleep until killed"},
		{scHangBeforePublish, "run until the capability returns, write the pid to " + PausedPIDFile + ", then block before result.publish"},
		{scHostile, "try each action " + EnvHostile + " lists (reading, writing, connecting, signalling, forking, allocating as a hostile provider would) and write a JSON report of what each got instead of a result; no IPC"},
		{scHostileEcho, "serve normally, but the echo capability tries each action " + EnvHostile + " lists first and answers, as its text, the JSON report (what a hostile provider does through the Supervisor)"},
	}
}

// known reports whether sc is the empty scenario or one of scenarioTable.
func (sc scenario) known() bool {
	if sc == "" {
		return true
	}
	for _, e := range scenarioTable() {
		if e.sc == sc {
			return true
		}
	}
	return false
}

// scenarioNames lists the scenarios' names.
func scenarioNames() []string {
	var out []string
	for _, e := range scenarioTable() {
		out = append(out, string(e.sc))
	}
	return out
}

// Usage returns the simulated host's settings as help text: its command
// line, the environment variables it reads with their defaults, and every
// scenario.
func Usage() string {
	var b strings.Builder
	b.WriteString(`The simulated ZEO runtime host (a test double, never a real provider).

Command line, as upstream's zeo-capability:
	invoke --context-fd 3 --runtime-fd 4      (LaunchContext on FD 3, request on stdin, IPC on FD 4)
	describe | doctor | capabilities list [--limit N] [--offset N] | capabilities describe ID
	                                          (provider binding on --binding-fd, default 3)

Capabilities, chosen by the manifest's capability name: echo (also any other
name), two_effects, redeliver, fail, cancel, nothing, noisy.

Environment (the launcher passes the host's whole environment; set these there):
	` + EnvPythonVersion + `   interpreter version the binding must name (default ` + hostsim.DefaultPythonVersion + `)
	` + EnvDistribution + `     installed distribution the binding must name (default ` + hostsim.DefaultDistribution + `)
	` + EnvVersion + `          installed version the binding must name (default ` + hostsim.DefaultVersion + `)
	` + EnvHostile + `          the hostile scenario's actions, "verb:argument;..." (read, write, connect, resolve, signal, abstract, forkbomb, alloc, bigfile, proxyget, tunnel, caps)
	` + EnvScenario + `         a misbehaviour for tests (default: none); one of:
`)
	for _, e := range scenarioTable() {
		b.WriteString("\t\t" + string(e.sc) + strings.Repeat(" ", max(1, 19-len(e.sc))) + e.help + "\n")
	}
	return b.String()
}
