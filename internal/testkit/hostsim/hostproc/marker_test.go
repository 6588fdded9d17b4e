//go:build linux

package hostproc_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// allow answers every request allowed.
type allow struct{}

func (allow) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}

func (allow) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}

func (allow) Effect(context.Context, ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{State: ipc.StateRefused}, nil
}

func (allow) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: []string{"artifact-1"}}, nil
}

// TestGrandchildKeepsMarker runs the test binary as a host behind a marker
// argument, as zeoctl does, with a scenario that starts a grandchild: the
// grandchild must be the host again (its command line keeps the marker),
// not a second run of the program's ordinary main.
func TestGrandchildKeepsMarker(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	l, err := launch.New(launch.Config{
		Interpreter: self, Args: []string{hostMarker}, Dir: dir, Verifier: environment.Trust{}, AllowRootHost: true,
		Env:   []string{hostproc.EnvScenario + "=grandchild-escape"},
		Grace: 2 * time.Second, WaitDelay: 200 * time.Millisecond,
		// The grandchild must outlive Invoke to be looked at: the cgroup
		// layer would end it with its host.
		Containment: contain.Config{Cgroup: contain.Cgroup{Off: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b := hostsim.DemoBinding()
	m, err := manifest.Describe(b.Manifests, "example.echo@1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"text": "hi"}
	p, err := manifest.PrepareRequest(m, args)
	if err != nil {
		t.Fatal(err)
	}
	req, err := launch.EncodeRequest("example.echo@1.0.0", args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := l.Invoke(ctx, launch.Invocation{
		Context: launch.LaunchContext{
			Provider: b,
			Attempt: ipc.AttemptBinding{OrganizationID: "org", ProjectID: "proj", SeatID: "seat",
				RuntimeBindingID: "rb", PacketID: "packet", OperationID: "op", AttemptID: "attempt-1",
				FencingGeneration: 1, CapabilityID: "example.echo@1.0.0", RequestDigest: p.RequestDigest,
				ManifestDigest: b.ManifestDigest},
			BootstrapID: "bootstrap-1", AdmittedCapabilities: []string{"example.echo@1.0.0"},
			DeadlineUnixMS: time.Now().Add(15 * time.Second).UnixMilli(), Workspace: "workspace",
		},
		Request: req, Handler: allow{},
	})
	if err != nil {
		t.Fatalf("Invoke: %v (stderr %q)", err, stderrOf(out))
	}
	if out.Result.State != launch.StateSucceeded {
		t.Errorf("state %s, want succeeded", out.Result.State)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "hostsim-grandchild.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	// The sleeper ignores SIGTERM and escaped the group: it is ours to end.
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		// Reaped by init once killed; wait (bounded) until it is gone.
		for end := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(end) {
				t.Errorf("grandchild %d still exists 10 s after SIGKILL", pid)
				return
			}
		}
	})
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(argv) != 2 || argv[1] != hostMarker {
		t.Errorf("grandchild's command line %q, want the executable and %q", argv, hostMarker)
	}
}

func stderrOf(o *launch.Outcome) string {
	if o == nil {
		return ""
	}
	return string(o.Process.StderrTail)
}
