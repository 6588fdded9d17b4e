package launch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// testCgroupParent makes a cgroup for the test alone, to be the
// Launcher's Cgroup.Parent, so that what it holds is the test's own; the
// test is skipped, saying why, where this machine has no usable cgroup v2.
// Cleanup checks that the launcher left nothing in it, then removes it.
func testCgroupParent(t *testing.T) string {
	t.Helper()
	own, err := cgroup.Open(cgroup.Options{})
	if errors.Is(err, cgroup.ErrUnavailable) {
		t.Skipf("no usable delegated cgroup v2 here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	g, err := own.New("zeo-launch-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if left := cgroupChildren(t, g.Dir()); len(left) > 0 {
			t.Errorf("cgroups left under %s: %v", g.Dir(), left)
		}
		if err := g.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return g.Dir()
}

// cgroupChildren lists the cgroups directly under dir.
func cgroupChildren(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// cgroupOf is the name of pid's cgroup v2 (its last path element).
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return filepath.Base(rest)
		}
	}
	t.Fatalf("pid %d has no cgroup v2", pid)
	return ""
}

// TestSetsidGrandchildEndsWithItsHost: a cold host starts a grandchild in
// a session of its own that holds stdout and outlives SIGTERM; Invoke
// returns with the grandchild dead, stdout closed by its death (no
// ErrWaitDelay), the host's cgroup removed; contained and uncontained
// alike. Nothing leaks: descriptors, goroutines, children, cgroups.
func TestSetsidGrandchildEndsWithItsHost(t *testing.T) {
	f := newFixture(t)
	for _, off := range []contain.Layers{0, contain.AllLayers} {
		t.Run("off="+off.String(), func(t *testing.T) {
			parent := testCgroupParent(t)
			dir := t.TempDir()
			l, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: dir, Grace: 200 * time.Millisecond,
				WaitDelay: 300 * time.Millisecond, Env: []string{"ZEO_HOSTSIM_SCENARIO=grandchild-escape"},
				Verifier: environment.Trust{}, AllowRootHost: true,
				Containment: contain.Config{Off: off, Cgroup: contain.Cgroup{Parent: parent, Required: true}}})
			if err != nil {
				t.Fatal(err)
			}
			if l.Cgroups() != parent || !strings.Contains(l.ContainmentSummary(), "cgroup: one per host under "+parent) {
				t.Fatalf("Cgroups() = %q, summary %q; want %s", l.Cgroups(), l.ContainmentSummary(), parent)
			}
			inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
			if _, err := l.Invoke(testCtx(t), inv); err != nil { // the runtime's poller and timers, once
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "hostsim-grandchild.pid")); err != nil {
				t.Fatal(err)
			}
			fds, gr, ch := leaktest.OpenFDs(t), runtime.NumGoroutine(), len(leaktest.Children(t))
			out, err := l.Invoke(testCtx(t), inv)
			pid := grandchildPID(t, dir)
			if alive(pid) {
				_ = unix.Kill(pid, unix.SIGKILL)
				t.Fatalf("the setsid grandchild %d outlived Invoke", pid)
			}
			if err != nil || out.Result.State != launch.StateSucceeded {
				t.Fatalf("Invoke: %v, %+v", err, out)
			}
			if out.Process.WaitErr != nil {
				t.Errorf("WaitErr %v: stdout outlived the cgroup's kill", out.Process.WaitErr)
			}
			if left := cgroupChildren(t, parent); len(left) > 0 {
				t.Errorf("cgroups left: %v", left)
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > gr && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > gr {
				t.Errorf("%d goroutines, %d before", n, gr)
			}
			if n := leaktest.OpenFDs(t); n != fds {
				t.Errorf("%d descriptors open, %d before", n, fds)
			}
			if n := len(leaktest.Children(t)); n != ch {
				t.Errorf("%d child processes, %d before", n, ch)
			}
		})
	}
}

// TestSetsidGrandchildFallback: without the cgroup layer (Cgroup.Off) the
// documented limit holds: a grandchild that leaves the process group
// (setsid) is not reached by the group kill and keeps stdout open; the
// launcher still returns, WaitDelay after the host's exit, with the
// result the host wrote and exec.ErrWaitDelay recorded, and the
// grandchild lives on.
func TestSetsidGrandchildFallback(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	l, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: dir, Grace: 200 * time.Millisecond,
		WaitDelay: 300 * time.Millisecond, Env: []string{"ZEO_HOSTSIM_SCENARIO=grandchild-escape"},
		Verifier: environment.Trust{}, AllowRootHost: true,
		Containment: contain.Config{Cgroup: contain.Cgroup{Off: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Cgroups() != "" || !strings.Contains(l.ContainmentSummary(), "cgroup: none") {
		t.Fatalf("Cgroups() = %q, summary %q with Cgroup.Off", l.Cgroups(), l.ContainmentSummary())
	}
	inv := f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	out, err := l.Invoke(testCtx(t), inv)
	pid := grandchildPID(t, dir)
	t.Cleanup(func() { unix.Kill(pid, unix.SIGKILL) })
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.State != launch.StateSucceeded || !errors.Is(out.Process.WaitErr, exec.ErrWaitDelay) {
		t.Fatalf("state %s, wait error %v", out.Result.State, out.Process.WaitErr)
	}
	if !alive(pid) {
		t.Errorf("the setsid grandchild %d ended without the cgroup layer: the documented fallback says it outlives its host", pid)
	}
}

// setsidLauncher is a launcher of the Python hostile host whose hosts
// leave a grandchild behind in a session of its own (setsid:), each host
// in a cgroup of its own under parent.
func setsidLauncher(t *testing.T, e pyEnv, parent string) *launch.Launcher {
	t.Helper()
	l, _ := setsidLauncherLog(t, e, parent)
	return l
}

// setsidLauncherLog is setsidLauncher with the launcher's log records
// kept: a failure can say why a launch went cold.
func setsidLauncherLog(t *testing.T, e pyEnv, parent string) (*launch.Launcher, *logRecords) {
	t.Helper()
	logs := &logRecords{}
	l, err := launch.New(launch.Config{Interpreter: e.python, Args: []string{"-m", "zeotesthostile"},
		Env: e.env("ZEO_HOSTSIM_HOSTILE=setsid:"), Dir: t.TempDir(), WaitDelay: 500 * time.Millisecond,
		Verifier: environment.Trust{}, AllowRootHost: true, Logger: slog.New(logs),
		Containment: contain.Config{Cgroup: contain.Cgroup{Parent: parent, Required: true}}})
	if err != nil {
		t.Fatal(err)
	}
	return l, logs
}

// TestSetsidGrandchildEndsWithWarmHost: a warm host (a zygote's child,
// with and without a spare) runs in a cgroup of its own, not its
// server's; a grandchild it starts in a session of its own is dead when
// Invoke returns, and the host's cgroup is gone. The server's cgroup
// holds the server alone (and its spare) and goes with the zygote's
// Close.
func TestSetsidGrandchildEndsWithWarmHost(t *testing.T) {
	e := newPyEnv(t)
	for _, spare := range []bool{false, true} {
		t.Run("spare="+strconv.FormatBool(spare), func(t *testing.T) {
			parent := testCgroupParent(t)
			l := setsidLauncher(t, e, parent)
			z, err := l.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding, Spare: spare})
			if err != nil {
				t.Fatal(err)
			}
			defer z.Close()
			for _, warm := range []bool{true, false} {
				var out *launch.Outcome
				if warm {
					out, _ = z.Invoke(testCtx(t), e.echo(t))
				} else {
					out, _ = l.Invoke(testCtx(t), e.echo(t))
				}
				if out == nil || out.Process.Warm != warm {
					t.Fatalf("warm %v: outcome %+v", warm, out)
				}
				var r struct {
					Actions map[string]string `json:"actions"`
				}
				if err := json.Unmarshal(out.Process.Stdout, &r); err != nil {
					t.Fatalf("warm %v: report %q: %v (stderr %q)", warm, out.Process.Stdout, err, out.Process.StderrTail)
				}
				got, ok := strings.CutPrefix(r.Actions["setsid:"], "ok ")
				pid, err := strconv.Atoi(got)
				if !ok || err != nil {
					t.Fatalf("warm %v: setsid: %q", warm, r.Actions["setsid:"])
				}
				if alive(pid) {
					_ = unix.Kill(pid, unix.SIGKILL)
					t.Errorf("warm %v: the setsid grandchild %d outlived Invoke", warm, pid)
				}
				server := cgroupOf(t, z.Stats().ServerPID)
				if left := cgroupChildren(t, parent); len(left) != 1 || left[0] != server {
					t.Errorf("warm %v: cgroups %v under the parent, want only the server's %s", warm, left, server)
				}
			}
			z.Close()
			deadline := time.Now().Add(10 * time.Second)
			for len(cgroupChildren(t, parent)) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond) // the server's cgroup goes when its exit is seen
			}
		})
	}
}

// TestCgroupRefused: Required where the layer is unavailable, a limit
// whose controller the parent does not enable, and Off with a limit are
// refused at New with their errors; BestEffortLimits drops the limit.
func TestCgroupRefused(t *testing.T) {
	cfg := func(c contain.Cgroup) launch.Config {
		return launch.Config{Interpreter: hostsimPath, Dir: t.TempDir(), Verifier: environment.Trust{},
			AllowRootHost: true, Containment: contain.Config{Cgroup: c}}
	}
	_, err := launch.New(cfg(contain.Cgroup{Required: true, Parent: t.TempDir()}))
	if !errors.Is(err, launch.ErrCgroupUnavailable) || !errors.Is(err, launch.ErrInvalidConfig) {
		t.Errorf("Required with a Parent outside cgroup2: %v, want ErrCgroupUnavailable", err)
	}
	if _, err := launch.New(cfg(contain.Cgroup{Off: true, Pids: 5})); !errors.Is(err, launch.ErrInvalidConfig) {
		t.Errorf("Off with a limit: %v, want ErrInvalidConfig", err)
	}
	parent := testCgroupParent(t)
	enabled, err := os.ReadFile(filepath.Join(filepath.Dir(parent), "cgroup.subtree_control"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enabled), "pids") {
		t.Skipf("%s enables pids: the limit is available", filepath.Dir(parent))
	}
	// The test's parent enables no controller for its children.
	_, err = launch.New(cfg(contain.Cgroup{Parent: parent, Pids: 16}))
	if !errors.Is(err, launch.ErrCgroupLimitUnavailable) || !strings.Contains(err.Error(), "pids.max") {
		t.Errorf("pids.max without the pids controller: %v, want ErrCgroupLimitUnavailable naming pids.max", err)
	}
	l, err := launch.New(cfg(contain.Cgroup{Parent: parent, Pids: 16, BestEffortLimits: true}))
	if err != nil {
		t.Fatalf("BestEffortLimits: %v", err)
	}
	if s := l.ContainmentSummary(); strings.Contains(s, "pids.max") {
		t.Errorf("summary %q names a dropped limit", s)
	}
}

// TestCgroupPidsStopsForkBomb: with the pids controller enabled, a host's
// fork bomb stops at the cgroup's pids.max, the process rlimit left
// unset.
func TestCgroupPidsStopsForkBomb(t *testing.T) {
	parent := testCgroupParent(t)
	avail, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if !strings.Contains(string(avail), "pids") {
		root, _ := os.ReadFile(filepath.Join(filepath.Dir(parent), "cgroup.controllers"))
		t.Skipf("cgroup v2 here offers no pids controller (%s cgroup.controllers: %q): "+
			"pids is bound to a cgroup v1 hierarchy on this machine, so no cgroup v2 limit can stop a fork bomb",
			filepath.Dir(parent), strings.TrimSpace(string(root)))
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
		t.Skipf("enabling pids for the children of %s: %v", parent, err)
	}
	got := hostileRun(t, contain.Config{Limits: contain.Limits{Processes: -1},
		Cgroup: contain.Cgroup{Parent: parent, Required: true, Pids: 16}}, nil, false, "forkbomb:200")
	if !strings.Contains(got["forkbomb:200"], "resource temporarily unavailable") {
		t.Errorf("forkbomb under pids.max 16: %q, want it stopped (EAGAIN)", got["forkbomb:200"])
	}
}

// TestWarmChildThatCannotEnterItsCgroup: a forked child whose move into
// its host's cgroup fails (simulated: the server program writes an
// invalid pid, which the kernel refuses) never runs the host: it exits
// 126 saying why on the host's stderr, and its cgroup is removed.
func TestWarmChildThatCannotEnterItsCgroup(t *testing.T) {
	e := newPyEnv(t)
	parent := testCgroupParent(t)
	source := bytes.Replace(launch.ZygoteSource, []byte(`os.write(fd, b"0")`), []byte(`os.write(fd, b"-1")`), 1)
	if bytes.Equal(source, launch.ZygoteSource) {
		t.Fatal("the server program no longer moves its child with os.write(fd, b\"0\")")
	}
	l, logs := setsidLauncherLog(t, e, parent)
	z, err := l.StartZygoteFrom(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding}, source)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	out, err := z.Invoke(testCtx(t), e.echo(t))
	if out == nil || !out.Process.Warm {
		t.Fatalf("outcome %+v, %v\nthe launcher's log: %q", out, err, logs.all())
	}
	if out.Process.ExitCode != 126 || len(out.Process.Stdout) != 0 ||
		!strings.Contains(string(out.Process.StderrTail), "could not enter its cgroup") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want 126, nothing, and why", out.Process.ExitCode, out.Process.Stdout, out.Process.StderrTail)
	}
	server := cgroupOf(t, z.Stats().ServerPID)
	if left := cgroupChildren(t, parent); len(left) != 1 || left[0] != server {
		t.Errorf("cgroups %v under the parent, want only the server's %s", left, server)
	}
	z.Close()
	deadline := time.Now().Add(10 * time.Second)
	for len(cgroupChildren(t, parent)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}
