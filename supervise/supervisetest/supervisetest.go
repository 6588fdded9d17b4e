// Package supervisetest runs a simulated ZEO runtime host for the tests of
// a program that embeds the Supervisor, as net/http/httptest runs a server
// for the tests of an HTTP client: it is named for the package it serves,
// supervise, beside which it sits, and is for tests and examples only,
// never a real provider.
//
// The host is the test binary itself, re-executed with [Marker] as its
// first argument: no build step, no Python. An embedder's TestMain calls
// [Main], which makes the process the host (or the containment init of
// one, contain.Init) when it was re-executed as one and otherwise runs the
// tests; a program's main calls [RunHost] first instead.
//
//	func TestMain(m *testing.M) { supervisetest.Main(m) }
//
//	func TestMyDispatcher(t *testing.T) {
//		cfg := supervisetest.SupervisorConfig(t, supervisetest.WellBehaved)
//		cfg.Dispatcher, cfg.Authority = myDispatcher{}, myAuthority{}
//		s, err := supervise.New(cfg)
//		...
//	}
//
// # Behaviours per call: the capability id
//
// [Binding] is the simulated provider's binding. Each of its capabilities
// (all at version 1.0.0) is one behaviour, chosen per call by
// supervise.Call.CapabilityID:
//
//   - [Echo] (example.echo@1.0.0): success without effects; answers
//     {"text": arguments.text}.
//   - [TwoEffects] (example.two_effects@1.0.0): requests two effects on
//     connection-a, effect-1 (operation "prepare") then effect-2
//     ("commit"), each with arguments {"step": n, "target": target}, and
//     answers {"receipts": [both receipt ids], "target": target}. It is
//     the capability for testing a Dispatcher and an Authority: a
//     Dispatcher error other than port.ErrNotConsumed leaves the
//     effect unknown (an uncertain effect: the outcome is
//     needs_reconciliation until Supervisor.Resolve), a refused or held
//     effect ends the call refused or waiting_approval, and invoking the
//     operation again redelivers a confirmed effect without dispatching it.
//     Give its calls supervise.Call.EffectBudget 2: with less, the host's
//     own counter refuses effect-2 and the capability ends failed.
//   - [Fail] (example.fail@1.0.0): ends failed with ZEO_DEMO_DOMAIN_FAILURE,
//     a business failure.
//   - [Slow] (example.slow@1.0.0): waits arguments.millis milliseconds, or
//     until the call is cancelled (then it ends cancelled), and answers as
//     Echo: a call in flight for as long as a test needs.
//   - [Crash] (example.crash@1.0.0): the host SIGKILLs itself after
//     bootstrap, before any result: a host lost mid-invocation.
//
// # Behaviours per launcher: the scenario
//
// What the host process does around the protocol is chosen per launcher,
// by the [Scenario] given to [LaunchConfig], [Launcher] or
// [SupervisorConfig]: [WellBehaved], a crash before any IPC ([CrashExit]),
// a hang ([Hang], [HangIgnoreTerm]) and hostile output on the socket or
// stdout ([CrashMidFrame], [Garbage], [TwoLines], [BigStdout],
// [WrongExit], [ClaimSuccess]). A test that needs two behaviours of the
// process uses two launchers (or two Supervisors).
//
// The ledger of [SupervisorConfig] is the in-memory ledger
// (ledger/memory): a test's ledger, not a durable one.
//
// The simulated host runs on Linux only; elsewhere every launch ends in a
// protocol error.
package supervisetest

import (
	"fmt"
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Marker is the first argument that makes an executable calling [RunHost]
// (or [Main]) the simulated host.
const Marker = "__supervisetest_host"

// RunHost makes the process the containment init of a host it launched
// (contain.Init) or the simulated host when it was re-executed as one, and
// then does not return; otherwise it returns having called contain.Init,
// which every program that launches hosts must call first. Call it first
// in main, before anything writes to stdout or starts goroutines.
func RunHost() {
	contain.Init()
	hostproc.MainIf(Marker)
}

// Main is the body of a TestMain whose tests launch the simulated host:
// RunHost, then the tests, then os.Exit with their status.
func Main(m *testing.M) {
	RunHost()
	os.Exit(m.Run())
}

// The capabilities of [Binding], one behaviour each (see the package
// documentation, “Behaviours per call”).
const (
	Echo       = "example.echo@1.0.0"
	TwoEffects = "example.two_effects@1.0.0"
	Fail       = "example.fail@1.0.0"
	Slow       = "example.slow@1.0.0"
	Crash      = "example.crash@1.0.0"
)

// PythonVersion is the interpreter version the simulated host reports:
// supervise.Config.HostPythonVersion. A real provider's is its
// interpreter's platform.python_version().
const PythonVersion = hostsim.DefaultPythonVersion

// extraManifests are the capabilities the simulated host runs beyond the
// demo inventory's three.
var extraManifests = [...]string{
	`{"id": "example.slow@1.0.0",
	  "description": "Waits arguments.millis milliseconds, then answers its text.",
	  "request_schema": {"type": "object", "additionalProperties": false,
	    "properties": {"text": {"type": "string"}, "millis": {"type": "integer", "minimum": 0}},
	    "required": ["millis"]},
	  "response_schema": {"type": "object"},
	  "examples": [{"request": {"millis": 10}}],
	  "error_codes": [],
	  "effects": {"kinds": ["read"]},
	  "requirements": {}, "tags": [], "metadata": {}, "deprecation": {}}`,
	`{"id": "example.crash@1.0.0",
	  "description": "The host dies by SIGKILL during the invocation.",
	  "request_schema": {"type": "object"},
	  "response_schema": {"type": "object"},
	  "examples": [{"request": {}}],
	  "error_codes": [],
	  "effects": {"kinds": ["read"]},
	  "requirements": {}, "tags": [], "metadata": {}, "deprecation": {}}`,
}

// Binding returns the simulated provider's binding: the capabilities
// listed in the package documentation, accepted by the simulated host.
// Its environment digest is all zeros (there is no environment tree to
// verify). The result is fresh; the caller may modify it. A real
// provider's binding comes from manifest.DecodeBinding of its file.
func Binding() manifest.ProviderBinding {
	b := hostsim.DemoBinding()
	for i, s := range extraManifests {
		m, err := manifest.DecodeManifest([]byte(s))
		if err != nil {
			// The manifests are constants checked by this package's tests.
			panic(fmt.Sprintf("supervisetest: manifest %d: %v", i, err))
		}
		b.Manifests = append(b.Manifests, m)
	}
	d, err := manifest.InventoryDigest(b.Manifests)
	if err != nil {
		panic(fmt.Sprintf("supervisetest: inventory: %v", err))
	}
	b.ManifestDigest = d
	return b
}
