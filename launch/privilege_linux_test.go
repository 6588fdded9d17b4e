package launch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// nobody is the unprivileged user the privilege tests run hosts and
// controllers as.
const nobody = 65534

// probeReport is what the simulated host's probe scenario writes.
type probeReport struct {
	UID    int   `json:"uid"`
	GID    int   `json:"gid"`
	Groups []int `json:"groups"`
	Probe  struct {
		PPID             int    `json:"ppid"`
		Environ          string `json:"environ"`
		EnvironHasSecret bool   `json:"environ_has_secret"`
		Mem              string `json:"mem"`
		FDs              string `json:"fds"`
		Forge            string `json:"forge"`
	} `json:"probe"`
}

func parseProbe(t *testing.T, out *launch.Outcome) probeReport {
	t.Helper()
	var r probeReport
	if out == nil {
		t.Fatal("no outcome: the host did not start")
	}
	if err := json.Unmarshal(out.Process.Stdout, &r); err != nil {
		t.Fatalf("probe report %q: %v (stderr %q)", out.Process.Stdout, err, out.Process.StderrTail)
	}
	return r
}

// requireRoot skips a test that must start processes as another user
// when this process cannot (it is not root).
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it starts processes as uid 65534")
	}
}

// openDir returns a new directory every user can enter (t.TempDir's
// parent is private), removed at the end of the test.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "zeo-launch-open-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRootHostRefused checks that New refuses a Config that would start a
// host as root, or with group 0, unless AllowRootHost says so.
func TestRootHostRefused(t *testing.T) {
	// A directory every user may enter: New checks that User can.
	base := launch.Config{Interpreter: hostsimPath, Dir: openDir(t), Verifier: environment.Trust{}}
	for _, u := range []*contain.User{{UID: 0, GID: nobody}, {UID: nobody, GID: 0}} {
		c := base
		c.User = u
		if _, err := launch.New(c); !errors.Is(err, launch.ErrInvalidConfig) {
			t.Errorf("User %+v without AllowRootHost: %v, want ErrInvalidConfig", *u, err)
		}
		c.AllowRootHost = true
		if _, err := launch.New(c); err != nil {
			t.Errorf("User %+v with AllowRootHost: %v", *u, err)
		}
	}
	_, err := launch.New(base)
	if root := os.Geteuid() == 0; root != errors.Is(err, launch.ErrInvalidConfig) {
		t.Errorf("no User, this process root %v: New = %v", root, err)
	}
	c := base
	c.User = &contain.User{UID: nobody, GID: nobody}
	if _, err := launch.New(c); err != nil {
		t.Errorf("an unprivileged User: %v", err)
	}
}

// TestHostAsAnotherUser runs the probing host as uid and gid 65534: it has
// no supplementary groups, it cannot read this process's environment,
// memory or descriptor list, and the kernel refuses its frame with forged
// credentials (naming this process's pid), so that nothing reaches the
// session. The same probe from a root host (AllowRootHost) reads all three
// and forges the frame, which the session then refuses as foreign: that
// is what the probe would see if the protections were missing.
func TestHostAsAnotherUser(t *testing.T) {
	requireRoot(t)
	f := newFixture(t)
	run := func(u *contain.User, contain contain.Config) (*launch.Outcome, probeReport) {
		l, err := launch.New(launch.Config{Interpreter: hostsimPath, Env: []string{"ZEO_HOSTSIM_SCENARIO=probe"}, Dir: openDir(t),
			Verifier: environment.Trust{}, User: u, AllowRootHost: u == nil, Containment: contain})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := l.Invoke(testCtx(t), f.invocation(t, "echo", map[string]any{"text": "hello"}, nil))
		return out, parseProbe(t, out)
	}

	out, r := run(&contain.User{UID: nobody, GID: nobody}, contain.Config{})
	if r.UID != nobody || r.GID != nobody || len(r.Groups) != 0 {
		t.Errorf("host ran as uid %d gid %d groups %v, want %d, %d and none", r.UID, r.GID, r.Groups, nobody, nobody)
	}
	t.Logf("host as uid %d: environ %q, mem %q, fds %q, forge %q; session %d frames", nobody,
		r.Probe.Environ, r.Probe.Mem, r.Probe.FDs, r.Probe.Forge, out.Session.Frames)
	if r.Probe.PPID != os.Getpid() {
		t.Fatalf("the probe looked at pid %d, this process is %d", r.Probe.PPID, os.Getpid())
	}
	for what, got := range map[string]string{"environ": r.Probe.Environ, "mem": r.Probe.Mem, "fd list": r.Probe.FDs} {
		if got == "ok" {
			t.Errorf("a host running as uid %d read this process's %s", nobody, what)
		}
	}
	if !strings.Contains(r.Probe.Forge, "operation not permitted") {
		t.Errorf("a frame with credentials naming pid %d from a host running as uid %d: %q, want the kernel's EPERM", r.Probe.PPID, nobody, r.Probe.Forge)
	}
	if errors.Is(out.SessionErr, ipc.ErrPeerCredentials) || out.Session.Frames != 0 {
		t.Errorf("the refused forgery still reached the session: %d frames, %v", out.Session.Frames, out.SessionErr)
	}

	// A contained root host (the default containment) reads neither the
	// environment nor the memory: Landlock and its user namespace stand
	// between it and this process.
	_, r = run(nil, contain.Config{})
	if r.UID != 0 || r.Probe.Environ == "ok" || r.Probe.Mem == "ok" {
		t.Errorf("a contained root host's probe %+v: want the environ and mem reads denied", r.Probe)
	}

	// The control: an uncontained root host.
	out, r = run(nil, contain.Config{Off: contain.AllLayers})
	if r.UID != 0 || r.Probe.Environ != "ok" || r.Probe.Mem != "ok" || r.Probe.FDs != "ok" || r.Probe.Forge != "ok" {
		t.Errorf("a root host's probe %+v: want every read and the forgery to succeed (the control)", r.Probe)
	}
	if !errors.Is(out.SessionErr, ipc.ErrPeerCredentials) {
		t.Errorf("a forged frame from a root host: session ended with %v, want ErrPeerCredentials", out.SessionErr)
	}
}

// controllerEnv selects the controller helper of TestMain (see
// helperController).
const controllerEnv = "ZEO_LAUNCH_HELPER_CONTROLLER"

// controllerHostileEnv, set for a helper controller, makes it launch the
// hostile host with these actions, contained, instead of the probe.
const controllerHostileEnv = "ZEO_LAUNCH_HELPER_HOSTILE"

// controllerWarmEnv, set (to a Python interpreter) beside
// controllerHostileEnv, makes the helper controller launch the Python
// hostile host through a zygote, with controllerWarmPathEnv as its
// PYTHONPATH.
const (
	controllerWarmEnv     = "ZEO_LAUNCH_HELPER_WARM_PYTHON"
	controllerWarmPathEnv = "ZEO_LAUNCH_HELPER_WARM_PYTHONPATH"
)

// TestControllerNotDumpable runs a controller (this test binary again) as
// uid 65534, which launches the probing host as the same user: with the
// controller non-dumpable (New's default) the host cannot read the
// controller's environment, memory or descriptor list; with
// LeaveDumpable it can (the control).
func TestControllerNotDumpable(t *testing.T) {
	requireRoot(t)
	inv := newFixture(t).invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	c := newController(t, inv)
	for _, dumpable := range []bool{false, true} {
		env := []string{"ZEO_CONTROLLER_SECRET=hunter2-controller-secret"}
		if dumpable {
			env = append(env, "ZEO_LAUNCH_DUMPABLE=1")
		}
		stdout, stderr, pid := c.run(t, fmt.Sprintf("dumpable %v", dumpable), env...)
		var r probeReport
		if err := json.Unmarshal(stdout, &r); err != nil {
			t.Fatalf("controller output %q: %v\n%s", stdout, err, stderr)
		}
		if r.UID != nobody || r.Probe.PPID != pid {
			t.Fatalf("host uid %d probed pid %d; want uid %d probing the controller %d", r.UID, r.Probe.PPID, nobody, pid)
		}
		reads := []string{r.Probe.Environ, r.Probe.Mem, r.Probe.FDs}
		if !dumpable && (slices.Contains(reads, "ok") || r.Probe.EnvironHasSecret) {
			t.Errorf("a same-user host read the non-dumpable controller: environ %q (secret %v), mem %q, fds %q",
				r.Probe.Environ, r.Probe.EnvironHasSecret, r.Probe.Mem, r.Probe.FDs)
		}
		if dumpable && (slices.ContainsFunc(reads, func(s string) bool { return s != "ok" }) || !r.Probe.EnvironHasSecret) {
			t.Errorf("the control: a same-user host could not read the dumpable controller: environ %q, mem %q, fds %q",
				r.Probe.Environ, r.Probe.Mem, r.Probe.FDs)
		}
	}
}

// controller is this test binary copied where uid 65534 can run it as a
// helper controller (controllerEnv), with the invocation it launches.
type controller struct{ bin, dir, invPath string }

// newController copies the test binary into a directory every user can
// read and writes inv there for the controller to launch.
func newController(t *testing.T, inv launch.Invocation) controller {
	t.Helper()
	c := controller{dir: openDir(t)}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c.bin = filepath.Join(c.dir, "launch.test")
	if err := copyFile(self, c.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		Context launch.LaunchContext
		Request []byte
	}{inv.Context, inv.Request})
	if err != nil {
		t.Fatal(err)
	}
	c.invPath = filepath.Join(c.dir, "invocation.json")
	if err := os.WriteFile(c.invPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// run runs the controller as uid 65534 with env added to what it needs,
// and returns its stdout, its stderr and its pid; a failed run fails the
// test, naming what.
func (c controller) run(t *testing.T, what string, env ...string) (stdout []byte, stderr string, pid int) {
	t.Helper()
	cmd := exec.CommandContext(testCtx(t), c.bin, "-test.run=^$")
	cmd.Env = append([]string{controllerEnv + "=" + c.invPath, "ZEO_HOSTSIM_PATH=" + hostsimPath, "ZEO_LAUNCH_DIR=" + c.dir}, env...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("controller as uid %d (%s): %v\n%s", nobody, what, err, errBuf.String())
	}
	return stdout, errBuf.String(), cmd.Process.Pid
}

// helperController is the controller of TestControllerNotDumpable: it
// launches the probing host for the invocation in the file named by
// controllerEnv and writes the host's stdout to its own.
func helperController() int {
	b, err := os.ReadFile(os.Getenv(controllerEnv))
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	var in struct {
		Context launch.LaunchContext
		Request []byte
	}
	if err := json.Unmarshal(b, &in); err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	cfg := launch.Config{Interpreter: os.Getenv("ZEO_HOSTSIM_PATH"), Env: []string{"ZEO_HOSTSIM_SCENARIO=probe"},
		Dir: os.Getenv("ZEO_LAUNCH_DIR"), Verifier: environment.Trust{}, LeaveDumpable: os.Getenv("ZEO_LAUNCH_DUMPABLE") == "1",
		// What is tested is the controller's dumpability alone: a contained
		// host (Landlock, its own user namespace) could read neither.
		Containment: contain.Config{Off: contain.AllLayers}}
	if actions, ok := os.LookupEnv(controllerHostileEnv); ok {
		// TestContainedEgressUnprivileged: the hostile host, every layer on.
		cfg.Env = []string{"ZEO_HOSTSIM_SCENARIO=hostile", "ZEO_HOSTSIM_HOSTILE=" + actions}
		cfg.Containment = contain.Config{}
	}
	python, warm := os.LookupEnv(controllerWarmEnv)
	if warm {
		// TestContainedEgressWarmUnprivileged: the Python hostile host,
		// forked by a zygote.
		cfg.Interpreter, cfg.Args = python, []string{"-m", "zeotesthostile"}
		cfg.Env = []string{"PYTHONPATH=" + os.Getenv(controllerWarmPathEnv), "LANG=C.UTF-8",
			"ZEO_HOSTSIM_HOSTILE=" + os.Getenv(controllerHostileEnv)}
	}
	l, err := launch.New(cfg)
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	invoke := l.Invoke
	if warm {
		z, err := l.StartZygote(ctx, launch.ZygoteConfig{Provider: in.Context.Provider})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			return 1
		}
		defer z.Close()
		invoke = z.Invoke
	}
	out, err := invoke(ctx, launch.Invocation{Context: in.Context, Request: in.Request, Handler: &handler{}})
	if warm && out != nil {
		fmt.Fprintf(os.Stderr, "warm=%v\n", out.Process.Warm)
	}
	if out == nil {
		os.Stderr.WriteString(err.Error())
		return 1
	}
	os.Stdout.Write(out.Process.Stdout)
	return 0
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
