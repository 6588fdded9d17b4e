package supervisetest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Scenario is what the host process does around the protocol, for every
// invocation of one launcher.
type Scenario string

// The scenarios.
const (
	// WellBehaved runs each capability as documented.
	WellBehaved Scenario = ""
	// CrashExit exits 1 without output before any IPC, as an interpreter
	// that fails to start.
	CrashExit Scenario = "exit-1"
	// CrashMidFrame sends half a bootstrap frame and SIGKILLs itself.
	CrashMidFrame Scenario = "crash-mid-frame"
	// Hang blocks before any IPC until SIGTERM: the call's deadline (or
	// its cancellation) ends it.
	Hang Scenario = "hang"
	// HangIgnoreTerm blocks before any IPC and ignores SIGTERM, so only
	// the launcher's SIGKILL ends it.
	HangIgnoreTerm Scenario = "hang-ignore-term"
	// Garbage writes "not JSON" on stdout and exits 0.
	Garbage Scenario = "garbage"
	// TwoLines writes its result line twice.
	TwoLines Scenario = "two-lines"
	// BigStdout writes its result line and then 1 MiB of 'x'.
	BigStdout Scenario = "big-stdout"
	// WrongExit writes its result and exits with a status that disagrees.
	WrongExit Scenario = "wrong-exit"
	// ClaimSuccess runs normally, then claims a well-formed succeeded
	// result whatever happened: a lying host the ledger must outvote.
	ClaimSuccess Scenario = "claim-success"
)

// LaunchConfig returns the launch.Config of a launcher whose hosts are
// this executable re-executed as the simulated host (see [RunHost]) with
// scenario sc, working in dir. It is for programs (an example's main); a
// test uses [Launcher].
func LaunchConfig(dir string, sc Scenario) (launch.Config, error) {
	self, err := os.Executable()
	if err != nil {
		return launch.Config{}, fmt.Errorf("supervisetest: finding this executable, the host to re-execute: %w", err)
	}
	var env []string
	if sc != WellBehaved {
		env = []string{hostproc.EnvScenario + "=" + string(sc)}
	}
	return launch.Config{Interpreter: self, Args: []string{Marker}, Env: env, Dir: dir,
		// The simulated host is this executable: there is no provider
		// environment to verify, and it runs as whoever runs the test.
		Verifier: environment.Trust{}, AllowRootHost: true}, nil
}

// Launcher returns a launcher of the simulated host with scenario sc,
// working in a directory of t's that is removed when t ends. The test
// binary's TestMain must call [Main].
func Launcher(t testing.TB, sc Scenario) *launch.Launcher {
	t.Helper()
	cfg, err := LaunchConfig(t.TempDir(), sc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := launch.New(cfg)
	if err != nil {
		t.Fatalf("supervisetest: %v", err)
	}
	return l
}

// SupervisorConfig returns a supervise.Config ready for supervise.New: a
// fresh in-memory ledger (closed when t ends), a [Launcher] with scenario
// sc, [Binding] as its one provider, [PythonVersion], and seat, runtime
// binding and workspace identifiers. Authority and Dispatcher are left
// nil (AllowAll and NoEffects): set the ones under test.
func SupervisorConfig(t testing.TB, sc Scenario) supervise.Config {
	t.Helper()
	l := memory.New()
	t.Cleanup(func() { l.Close(context.Background()) })
	return supervise.Config{Ledger: l, Launcher: Launcher(t, sc), Provider: Binding(),
		HostPythonVersion: PythonVersion, SeatID: "seat-1", RuntimeBindingID: "runtime-1", Workspace: "/workspace"}
}
