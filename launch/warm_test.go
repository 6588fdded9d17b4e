//go:build linux

package launch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// pyEnv is the Python test host installed in a directory, with a fixture
// whose provider (factory demo_provider:factory) the host serves.
type pyEnv struct {
	python  string
	modules string // the PYTHONPATH directory
	f       fixture
}

// newPyEnv installs the Python test host; it skips without python3 and
// pydantic (fails under CI=true).
func newPyEnv(t testing.TB) pyEnv {
	t.Helper()
	e := pyEnv{python: testpyhost.Interpreter(t), modules: t.TempDir(), f: newFixture(t)}
	if err := testpyhost.Install(e.modules); err != nil {
		t.Fatal(err)
	}
	// hang: a copy of echo that demo_provider never answers.
	m := e.f.byName["echo"]
	m.ID.Name = "hang"
	e.f.byName["hang"] = m
	e.f.binding.Manifests = append(e.f.binding.Manifests, m)
	d, err := manifest.InventoryDigest(e.f.binding.Manifests)
	if err != nil {
		t.Fatal(err)
	}
	e.f.binding.ManifestDigest = d
	return e
}

// env is the environment hosts get: the modules on PYTHONPATH, a UTF-8
// locale, and extra.
func (e pyEnv) env(extra ...string) []string {
	return append([]string{"PYTHONPATH=" + e.modules, "LANG=C.UTF-8"}, extra...)
}

// launcher returns a launcher running `python -m module` in a fresh
// directory, logging to log when it is set.
func (e pyEnv) launcher(t testing.TB, module string, log *slog.Logger, env ...string) *launch.Launcher {
	t.Helper()
	return e.launcherGrace(t, time.Second, module, log, env...)
}

// launcherGrace is launcher with grace as the Grace.
func (e pyEnv) launcherGrace(t testing.TB, grace time.Duration, module string, log *slog.Logger, env ...string) *launch.Launcher {
	t.Helper()
	l, err := launch.New(launch.Config{
		Interpreter: e.python, Args: []string{"-m", module}, Env: env, Dir: t.TempDir(),
		Grace: grace, WaitDelay: 500 * time.Millisecond,
		Verifier: environment.Trust{}, AllowRootHost: true, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// hostModule is the stand-in host, laid out and importing as the
// upstream host does.
const hostModule = testpyhost.HostModule

// probePreload is the preload of zygotes of the probe host, whose own
// imports are the standard library's: the stand-in host's dependencies.
var probePreload = []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}

// zygote starts a zygote for l, closed when the test ends. cfg.Preload
// nil is the default, the host's discovered imports.
func (e pyEnv) zygote(t testing.TB, l *launch.Launcher, cfg launch.ZygoteConfig) *launch.Zygote {
	t.Helper()
	if cfg.Provider.Factory == "" {
		cfg.Provider = e.f.binding
	}
	z, err := l.StartZygote(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}

// echo is an invocation of example.echo with a nonce fixed through the
// environment, so that frames can be compared byte for byte.
func (e pyEnv) echo(t testing.TB) launch.Invocation {
	return e.f.invocation(t, "echo", map[string]any{"text": "hello"}, nil)
}

// mustSucceed fails t unless out is a success.
func mustSucceed(t testing.TB, out *launch.Outcome, err error) {
	t.Helper()
	if err != nil {
		if out != nil {
			t.Fatalf("%v\nstdout %q\nstderr %s", err, out.Process.Stdout, out.Process.StderrTail)
		}
		t.Fatal(err)
	}
	if out.Result.State != launch.StateSucceeded {
		t.Fatalf("state %s, stdout %q, stderr %s", out.Result.State, out.Process.Stdout, out.Process.StderrTail)
	}
}

// echoWarm invokes echo n times through z: each must succeed, forked,
// in a session of three frames.
func (e pyEnv) echoWarm(t testing.TB, z *launch.Zygote, n int) {
	t.Helper()
	for i := range n {
		out, err := z.Invoke(testCtx(t), e.echo(t))
		mustSucceed(t, out, err)
		if !out.Process.Warm || out.Session.Frames != 3 {
			t.Fatalf("invocation %d: warm %v, %d frames", i, out.Process.Warm, out.Session.Frames)
		}
	}
}

// TestWarmEcho runs the Python test host warm and cold: both succeed with
// the same three frames, and only the warm one was forked.
func TestWarmEcho(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	e.echoWarm(t, z, 3)
	out, err := l.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	if out.Process.Warm {
		t.Fatal("Launcher.Invoke launched warm")
	}
	if st := z.Stats(); st.Starts != 1 || st.Forks != 3 || st.Cold != 0 || st.ServerPID == 0 {
		t.Fatalf("stats %+v", st)
	}
}

// pyProbe is what zeotestprobe saw at its start.
type pyProbe struct {
	FDs        map[string]string `json:"fds"`
	FDFlags    map[string]bool   `json:"fd_flags"`
	Env        []string          `json:"env"`
	CEnv       []string          `json:"c_env"`
	PID        int               `json:"pid"`
	PGID       int               `json:"pgid"`
	SID        int               `json:"sid"`
	PPID       int               `json:"ppid"`
	UID        int               `json:"uid"`
	GID        int               `json:"gid"`
	Groups     []int             `json:"groups"`
	ParentEnv  string            `json:"parent_environ"`
	Argv       []string          `json:"argv"`
	OrigArgv   []string          `json:"orig_argv"`
	Path0      string            `json:"path0"`
	Cwd        string            `json:"cwd"`
	MainFile   string            `json:"main_file"`
	MainSpec   string            `json:"main_spec"`
	Modules    []string          `json:"modules"`
	Threads    int               `json:"threads"`
	Tasks      int               `json:"tasks"`
	Handlers   map[string]any    `json:"handlers"`
	Mask       []int             `json:"mask"`
	Dumpable   int               `json:"dumpable"`
	PDeathSig  int               `json:"pdeathsig"`
	Stdin      string            `json:"stdin"`
	LineBuf    bool              `json:"stdout_line_buffering"`
	Encoding   string            `json:"stdout_encoding"`
	ContextLen int               `json:"context_len"`
}

// runProbe runs the probe host through run and decodes its report; the
// invocation itself fails (a report is not a HostResult).
func runProbe(t *testing.T, e pyEnv, run func(context.Context, launch.Invocation) (*launch.Outcome, error)) (pyProbe, *launch.Outcome) {
	t.Helper()
	out, err := run(testCtx(t), e.echo(t))
	if out == nil {
		t.Fatal(err)
	}
	var r pyProbe
	if jerr := json.Unmarshal(out.Process.Stdout, &r); jerr != nil {
		t.Fatalf("probe: %v (%v); stdout %q, stderr %s", jerr, err, out.Process.Stdout, out.Process.StderrTail)
	}
	return r, out
}

// fdKinds names each descriptor's kind, without inode numbers.
func fdKinds(fds map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range fds {
		kind, _, _ := strings.Cut(v, "[")
		out[k] = kind
	}
	return out
}

// TestWarmChildInherits plants a secret in this process's environment and
// an inheritable descriptor in its table, then runs the probe host warm
// and cold: the warm child holds exactly FDs 0–4 of the same kinds and
// flags, exactly the environment sent (in os.environ and at the C level),
// its own session and group, no provider module, and everything else a
// fresh `python -m` holds (argument vector, sys.path[0], __main__, signal
// dispositions and mask, stdio) as the cold one does.
func TestWarmChildInherits(t *testing.T) {
	plantParentSecrets(t)
	e := newPyEnv(t)
	for _, tt := range []struct {
		name string
		env  []string
		cfg  launch.ZygoteConfig
	}{
		{"utf8", e.env(), launch.ZygoteConfig{Preload: probePreload}},
		// No locale: the interpreter coerces it (LC_CTYPE), cold and warm.
		{"coerced", []string{"PYTHONPATH=" + e.modules}, launch.ZygoteConfig{Preload: probePreload}},
		// A spare that copied its pages while it waited, then took the
		// invocation.
		{"spare", e.env(), launch.ZygoteConfig{Preload: probePreload, Spare: true, PreTouch: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := e.launcher(t, "zeotestprobe", nil, tt.env...)
			z := e.zygote(t, l, tt.cfg)
			warm, wout := runProbe(t, e, z.Invoke)
			// A spare takes an invocation only once it is ready: run until
			// one did.
			for i := 0; tt.cfg.Spare && z.Stats().Spares == 0; i++ {
				if i == 100 {
					t.Fatalf("no invocation went to the spare: %+v", z.Stats())
				}
				time.Sleep(20 * time.Millisecond)
				warm, wout = runProbe(t, e, z.Invoke)
			}
			cold, cout := runProbe(t, e, l.Invoke)
			if !wout.Process.Warm || cout.Process.Warm {
				t.Fatalf("warm %v, cold %v", wout.Process.Warm, cout.Process.Warm)
			}
			want := map[string]string{"0": "/memfd:zeo-launch-stdin (deleted)", "1": "pipe:", "2": "pipe:",
				"3": "/memfd:zeo-launch-context (deleted)", "4": "socket:"}
			if diff := cmp.Diff(want, fdKinds(warm.FDs)); diff != "" {
				t.Errorf("warm descriptors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(cold.FDFlags, warm.FDFlags); diff != "" {
				t.Errorf("descriptor flags, cold -> warm:\n%s", diff)
			}
			sent := slices.Sorted(slices.Values(tt.env))
			if tt.name == "utf8" && !slices.Equal(warm.Env, sent) {
				t.Errorf("warm environment %q, sent %q", warm.Env, sent)
			}
			if !slices.Equal(warm.Env, cold.Env) || !slices.Equal(warm.CEnv, warm.Env) {
				t.Errorf("environment: warm %q (C level %q), cold %q", warm.Env, warm.CEnv, cold.Env)
			}
			if warm.PID != wout.Process.PID || warm.PGID != warm.PID || warm.SID != warm.PID {
				t.Errorf("warm pid %d (launcher saw %d), pgid %d, sid %d", warm.PID, wout.Process.PID, warm.PGID, warm.SID)
			}
			if slices.Contains(warm.Modules, "demo_provider") || slices.Contains(warm.Modules, "zeotesthost") {
				t.Errorf("host or provider modules were loaded before the fork: %q", warm.Modules)
			}
			if !slices.Contains(warm.Modules, "pydantic") || !slices.Contains(warm.Modules, "zeotestcontracts") ||
				slices.Contains(cold.Modules, "pydantic") {
				t.Errorf("the preload did not reach the warm child alone: warm %d modules, cold %d", len(warm.Modules), len(cold.Modules))
			}
			// What a fresh `python -m` holds, cold and warm alike.
			norm := func(r pyProbe) pyProbe {
				r.FDs, r.Env, r.CEnv, r.PID, r.PGID, r.SID, r.PPID, r.Modules = nil, nil, nil, 0, 0, 0, 0, nil
				return r
			}
			if diff := cmp.Diff(norm(cold), norm(warm)); diff != "" {
				t.Errorf("cold -> warm:\n%s", diff)
			}
			if warm.Threads != 1 || warm.Tasks != 1 || warm.Dumpable != 1 || warm.PDeathSig != 0 {
				t.Errorf("warm threads %d, tasks %d, dumpable %d, parent-death signal %d", warm.Threads, warm.Tasks, warm.Dumpable, warm.PDeathSig)
			}
			for _, r := range [][]byte{wout.Process.Stdout, wout.Process.StderrTail} {
				if bytes.Contains(r, []byte("hunter2")) {
					t.Fatal("this process's environment reached the host")
				}
			}
		})
	}
}

// TestWarmExitsAsTheInterpreter: a host that exits with a code, with a
// message, or with an uncaught exception ends with the same status and
// stderr warm as cold.
func TestWarmExitsAsTheInterpreter(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	for _, tt := range []struct {
		exit string
		code int
	}{{"0", 0}, {"3", 3}, {"no thanks", 1}, {"raise", 1}} {
		t.Run(tt.exit, func(t *testing.T) {
			t.Parallel()
			l := e.launcher(t, "zeotestprobe", nil, e.env("ZEO_PROBE_EXIT="+tt.exit)...)
			z := e.zygote(t, l, launch.ZygoteConfig{})
			_, warm := runProbe(t, e, z.Invoke)
			_, cold := runProbe(t, e, l.Invoke)
			if warm.Process.ExitCode != tt.code || cold.Process.ExitCode != tt.code || !warm.Process.Warm {
				t.Fatalf("exit: warm %d (warm %v), cold %d; want %d", warm.Process.ExitCode, warm.Process.Warm, cold.Process.ExitCode, tt.code)
			}
			if !bytes.Equal(warm.Process.StderrTail, cold.Process.StderrTail) {
				t.Errorf("stderr differs:\nwarm %s\ncold %s", warm.Process.StderrTail, cold.Process.StderrTail)
			}
		})
	}
}

// TestWarmMatchesCold runs the echo through a recording peer, warm and
// cold: the frames are byte-identical (but for the bootstrap's pid), and
// so are stdout, stderr and the exit status.
func TestWarmMatchesCold(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	nonce := strings.Repeat("5d", 32)
	l := e.launcher(t, hostModule, nil, e.env("ZEO_TESTHOST_NONCE="+nonce)...)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	var warm, cold rawPeer
	inv := e.echo(t)
	wout, werr := z.InvokeWithPeer(testCtx(t), inv, warm.serve)
	cout, cerr := l.InvokeWithPeer(testCtx(t), inv, cold.serve)
	mustSucceed(t, wout, werr)
	mustSucceed(t, cout, cerr)
	if !wout.Process.Warm || cout.Process.Warm || len(cold.bodies) != 3 {
		t.Fatalf("warm %v, cold %v, %d frames", wout.Process.Warm, cout.Process.Warm, len(cold.bodies))
	}
	pid := func(p int) []byte { return []byte(`"pid":` + strconv.Itoa(p) + `}`) }
	if len(warm.bodies) != len(cold.bodies) {
		t.Fatalf("%d frames warm, %d cold", len(warm.bodies), len(cold.bodies))
	}
	for i := range cold.bodies {
		w := bytes.Replace(warm.bodies[i], pid(wout.Process.PID), []byte(`"pid":PID}`), 1)
		c := bytes.Replace(cold.bodies[i], pid(cout.Process.PID), []byte(`"pid":PID}`), 1)
		if !bytes.Equal(w, c) {
			t.Errorf("frame %d differs:\nwarm %s\ncold %s", i+1, warm.bodies[i], cold.bodies[i])
		}
	}
	if !bytes.Equal(wout.Process.Stdout, cout.Process.Stdout) || wout.Process.ExitCode != cout.Process.ExitCode ||
		!bytes.Equal(wout.Process.StderrTail, cout.Process.StderrTail) {
		t.Errorf("warm stdout %q exit %d stderr %q; cold stdout %q exit %d stderr %q",
			wout.Process.Stdout, wout.Process.ExitCode, wout.Process.StderrTail,
			cout.Process.Stdout, cout.Process.ExitCode, cout.Process.StderrTail)
	}
}

// TestWarmDeadline: a warm host that ignores SIGTERM and leaves a
// straggler in its group is stopped at the deadline, killed after the
// grace period, and its whole group is gone, whether the kernel signals
// the group through the pidfd or the server does (kernels before 6.9).
func TestWarmDeadline(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcherGrace(t, 300*time.Millisecond, hostModule, nil, e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	for _, kernel := range []bool{true, false} {
		z.SetGroupSignals(kernel)
		var out *launch.Outcome
		var err error
		// A deadline 1 s ahead, and 4 s when a loaded machine did not let
		// the host reach its capability in time.
		for _, deadline := range []time.Duration{time.Second, 4 * time.Second} {
			args := map[string]any{"text": "stubborn spawn"}
			inv := e.f.invocation(t, "hang", args, nil)
			admitted := make(chan struct{})
			inv.Handler = &signalHandler{admit: admitted}
			inv.Context.DeadlineUnixMS = time.Now().Add(deadline).UnixMilli()
			out, err = z.Invoke(testCtx(t), inv)
			select {
			case <-admitted:
			default:
				if deadline == time.Second {
					t.Logf("the host did not reach its capability within %v; again with a later deadline", deadline)
					continue
				}
				t.Fatalf("the host never reached its capability; stderr %s", out.Process.StderrTail)
			}
			break
		}
		var re *launch.ResultError
		if !errors.Is(err, launch.ErrSignaled) || !errors.As(err, &re) {
			t.Fatalf("kernel group signals %v: err = %v, stdout %q", kernel, err, out.Process.Stdout)
		}
		p := out.Process
		if !p.Warm || p.Stopped != launch.StopDeadline || !p.Killed || re.Signal != syscall.SIGKILL {
			t.Fatalf("kernel group signals %v: warm %v, stopped %q, killed %v, signal %v", kernel, p.Warm, p.Stopped, p.Killed, re.Signal)
		}
		// SIGKILL was sent to the whole group; its members die as soon as
		// the kernel delivers it.
		for _, pid := range leaktest.GroupMembers(t, p.PID) {
			waitDead(t, pid)
		}
	}
}

// signalHandler allows everything and closes admit at invoke.admit.
type signalHandler struct {
	handler
	admit chan struct{}
	once  sync.Once
}

func (h *signalHandler) Admit(ctx context.Context, r ipc.AdmitRequest) (ipc.Decision, error) {
	h.once.Do(func() { close(h.admit) })
	return h.handler.Admit(ctx, r)
}

// TestWarmServerCrash kills the server while its host runs: the
// invocation fails at once as a protocol error (ErrExitUnknown, not at
// its deadline), the host is killed, and the next invocation is warm
// again, from a fresh server.
func TestWarmServerCrash(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	server := z.Stats().ServerPID
	inv := e.f.invocation(t, "hang", map[string]any{"text": "hello"}, nil)
	admitted := make(chan struct{})
	inv.Handler = &signalHandler{admit: admitted}
	go func() {
		<-admitted
		unix.Kill(server, unix.SIGKILL)
	}()
	out, err := z.Invoke(testCtx(t), inv)
	if !errors.Is(err, launch.ErrExitUnknown) || !errors.Is(err, launch.ErrBadResult) {
		t.Fatalf("err = %v", err)
	}
	if !out.Process.Warm || out.Process.Stopped != launch.StopNone {
		t.Fatalf("warm %v, stopped %q: the call waited for the deadline", out.Process.Warm, out.Process.Stopped)
	}
	waitDead(t, out.Process.PID)
	out, err = z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	if st := z.Stats(); !out.Process.Warm || st.Starts != 2 || st.ServerPID == server {
		t.Fatalf("after the crash: warm %v, stats %+v", out.Process.Warm, st)
	}
}

// TestWarmServerHangs stops the server (SIGSTOP): a fork request it does
// not answer within ReplyTimeout launches cold; a host whose exit it does
// not report in time fails as a protocol error. Each time the hung server
// is killed and the next invocation gets a fresh one.
func TestWarmServerHangs(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	// Long enough for a loaded machine to answer a fork in time.
	z := e.zygote(t, l, launch.ZygoteConfig{ReplyTimeout: time.Second})

	server := z.Stats().ServerPID
	unix.Kill(server, unix.SIGSTOP)
	out, err := z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	if out.Process.Warm || z.Stats().Cold != 1 {
		t.Fatalf("a hung server forked: warm %v, stats %+v", out.Process.Warm, z.Stats())
	}
	waitDead(t, server)

	out, err = z.Invoke(testCtx(t), e.echo(t)) // a fresh server
	mustSucceed(t, out, err)
	server = z.Stats().ServerPID
	inv := e.echo(t)
	admitted := make(chan struct{})
	inv.Handler = &signalHandler{admit: admitted}
	go func() {
		<-admitted
		unix.Kill(server, unix.SIGSTOP)
	}()
	out, err = z.Invoke(testCtx(t), inv)
	if !errors.Is(err, launch.ErrExitUnknown) || !out.Process.Warm {
		t.Fatalf("err = %v, warm %v", err, out.Process.Warm)
	}
	waitDead(t, server)
	if st := z.Stats(); st.Starts != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWarmRestarts: an invocation whose binding names another environment
// digest gets a fresh server, and so do the one after MaxForks hosts and
// one whose binding names another provider package; each replaced server
// ends.
func TestWarmRestarts(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{MaxForks: 2})
	first := z.Stats().ServerPID
	out, err := z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	inv := e.echo(t)
	inv.Context.Provider.EnvironmentDigest = canon.Digest("sha256:" + strings.Repeat("1", 64))
	out, err = z.Invoke(testCtx(t), inv)
	mustSucceed(t, out, err)
	second := z.Stats().ServerPID
	if !out.Process.Warm || second == first {
		t.Fatalf("after the environment changed: warm %v, server %d (was %d)", out.Process.Warm, second, first)
	}
	waitDead(t, first)
	for range 2 {
		out, err = z.Invoke(testCtx(t), inv)
		mustSucceed(t, out, err)
	}
	third := z.Stats().ServerPID
	if st := z.Stats(); third == second || st.Starts != 3 || st.Forks != 4 || st.Cold != 0 {
		t.Fatalf("after MaxForks: stats %+v (servers %d, %d)", st, first, second)
	}
	waitDead(t, second)

	// Another provider package in the same environment: its server must
	// not have had the old one's package in its forbidden list only.
	if err := os.WriteFile(filepath.Join(e.modules, "other_provider.py"), []byte("from demo_provider import factory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inv.Context.Provider.Factory = "other_provider:factory"
	out, err = z.Invoke(testCtx(t), inv)
	mustSucceed(t, out, err)
	if st := z.Stats(); !out.Process.Warm || st.ServerPID == third || st.Starts != 4 {
		t.Fatalf("after the provider package changed: warm %v, stats %+v", out.Process.Warm, st)
	}
	waitDead(t, third)
}

// logBuffer collects log text, safe for concurrent writers.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *logBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *logBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestWarmRefusals: the server never forks while host or provider code is
// loaded, another thread runs or a switch of the host was flipped. A
// preload that leaves it so fails StartZygote; a switch flipped later
// makes it refuse, and that invocation launches cold, saying so in the
// log, while the next one gets a fresh server.
func TestWarmRefusals(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	for _, tt := range []struct {
		name string
		cfg  launch.ZygoteConfig
		want string
		is   error
	}{
		{"host module", launch.ZygoteConfig{Preload: []string{hostModule + ".host"}}, "host or provider code", launch.ErrInvalidConfig},
		{"provider", launch.ZygoteConfig{Preload: []string{"demo_provider.sub"}}, "host or provider code", launch.ErrInvalidConfig},
		{"imported by a preload", launch.ZygoteConfig{Preload: []string{"zeotestcontracts"}, Forbid: []string{"jsonschema"}},
			"host or provider modules are loaded: jsonschema", launch.ErrZygoteStart},
		{"thread", launch.ZygoteConfig{Preload: []string{"zeotestthread"}}, "2 threads run", launch.ErrZygoteStart},
		{"missing", launch.ZygoteConfig{Preload: []string{"no_such_module"}}, "No module named 'no_such_module'", launch.ErrZygoteStart},
	} {
		_, err := l.StartZygote(testCtx(t), func() launch.ZygoteConfig { tt.cfg.Provider = e.f.binding; return tt.cfg }())
		if !errors.Is(err, tt.is) || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %v saying %q", tt.name, err, tt.is, tt.want)
		}
	}

	var log logBuffer
	l = e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{Preload: []string{"zeotestcontracts", "zeotestswitch"}, Switches: []string{"zeotestswitch"}})
	out, err := z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	first := z.Stats().ServerPID
	// zeotestswitch latches on SIGUSR1, which interrupts the server's poll.
	unix.Kill(first, unix.SIGUSR1)
	out, err = z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	if out.Process.Warm || !strings.Contains(log.String(), "process-wide state of module zeotestswitch changed") {
		t.Fatalf("warm %v after the switch flipped; log:\n%s", out.Process.Warm, log.String())
	}
	waitDead(t, first)
	out, err = z.Invoke(testCtx(t), e.echo(t))
	mustSucceed(t, out, err)
	if st := z.Stats(); !out.Process.Warm || st.Starts != 2 || st.Cold != 1 {
		t.Fatalf("after the refusal: warm %v, stats %+v", out.Process.Warm, st)
	}
}

// TestWarmNoLeaks runs leakCampaign(16) warm invocations, four at a time, then closes the zygote: this process's descriptors, goroutines
// and child processes are back to where they started, and no host, spare
// or server is left.
func TestWarmNoLeaks(t *testing.T) {
	warmNoLeaks(t, "warm", 10*time.Minute, nil, false)
}

// TestWarmEgressNoLeaks is TestWarmNoLeaks with invocations allowed the
// network (network_hosts set): each host's egress listener and proxy end
// with it.
func TestWarmEgressNoLeaks(t *testing.T) {
	warmNoLeaks(t, "warm egress", 10*time.Minute, nil, true)
}

// warmNoLeaks runs leakCampaign(16) invocations through a zygote
// with a spare (provider-warm with pw when it is set), four at a time,
// each with deadline, then closes the zygote and checks that this
// process's descriptors, goroutines and child processes are back to where
// they started and that no host or server is left; what names the
// invocations in messages.
func warmNoLeaks(t *testing.T, what string, deadline time.Duration, pw *launch.ProviderWarm, egress bool) {
	n := leakCampaign(t, 16)
	const parallel = 4
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	inv := e.echo(t)
	inv.Context.DeadlineUnixMS = time.Now().Add(deadline).UnixMilli()
	if egress {
		inv.Context.NetworkAllowed = true
		inv.Context.NetworkHosts = []string{"api.example.com"}
	}
	ctx := context.Background() // each invocation is bounded by its deadline
	// One cold warm-up: the runtime's poller and timers are created once.
	if _, err := l.Invoke(ctx, inv); err != nil {
		t.Fatal(err)
	}
	fds0, gr0, ch0 := leaktest.OpenFDs(t), runtime.NumGoroutine(), leaktest.Children(t)
	z, err := l.StartZygote(ctx, launch.ZygoteConfig{Provider: e.f.binding, ProviderWarm: pw, Spare: true})
	if err != nil {
		t.Fatal(err)
	}
	server := z.Stats().ServerPID
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	pids := map[int]bool{}
	next := make(chan int)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				out, err := z.Invoke(ctx, inv)
				mu.Lock()
				switch {
				case err != nil || out.Result.State != launch.StateSucceeded:
					failures = append(failures, fmt.Sprintf("invocation %d: %v", i, err))
				case !out.Process.Warm:
					failures = append(failures, fmt.Sprintf("invocation %d was not warm", i))
				default:
					pids[out.Process.PID] = true
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	st := z.Stats()
	z.Close()
	if len(failures) > 0 {
		t.Fatalf("%d of %d failed; first: %s", len(failures), n, failures[0])
	}
	if len(pids) != n || st.Forks != n || st.Cold != 0 || st.Starts != 1 {
		t.Fatalf("%d distinct pids over %d invocations; stats %+v", len(pids), n, st)
	}
	waitDead(t, server)
	var fds, gr int
	var ch []int
	for range 200 {
		fds, gr, ch = leaktest.OpenFDs(t), runtime.NumGoroutine(), leaktest.Children(t)
		if fds <= fds0 && gr <= gr0 && len(ch) <= len(ch0) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d %s invocations, %d at a time, in %v (%v each); fds %d→%d, goroutines %d→%d, children %d→%d",
		n, what, parallel, elapsed, elapsed/time.Duration(n), fds0, fds, gr0, gr, len(ch0), len(ch))
	if fds > fds0 || gr > gr0 || len(ch) > len(ch0) {
		t.Fatalf("leak after %d %s invocations: fds %d→%d, goroutines %d→%d, children %v→%v", n, what, fds0, fds, gr0, gr, ch0, ch)
	}
	for pid := range pids {
		if alive(pid) {
			t.Fatalf("host %d is still alive", pid)
		}
	}
}

// TestWarmServerLies runs servers patched to lie once each: a pidfd of
// another process, a child reported ended while it runs, a wrong exit
// code, an unknown message. Each lie loses the server: an invocation
// whose host was not handed over launches cold, one whose host runs
// fails as ErrExitUnknown with its host killed.
func TestWarmServerLies(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	var uts unix.Utsname
	unix.Uname(&uts)
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(uts.Release[:]), "%d.%d", &major, &minor)
	exitCodes := major > 6 || major == 6 && minor >= 15 // PIDFD_INFO_EXIT
	for _, tt := range []struct {
		name, old, new string
		cold           bool   // the invocation launches cold
		log            string // what the log says
	}{
		{"another pidfd", `theirs = os.pidfd_open(pid)`, `theirs = os.pidfd_open(os.getpid())`, true, "names pid"},
		{"ended while running", `self.adopt(pid, os.pidfd_open(pid), m["id"], False, extra)`,
			`self.adopt(pid, os.pidfd_open(pid), m["id"], False, extra); _send(self.ctrl, {"op": "exit", "pid": pid, "code": 0})`,
			false, "which its pidfd shows running"},
		{"wrong exit code", `"code": os.waitstatus_to_exitcode(status)`, `"code": os.waitstatus_to_exitcode(status) + 1`,
			false, "whose pidfd says"},
		{"unknown message", `_MAX_LISTED // 16]]})`, `_MAX_LISTED // 16]]}); _send(self.ctrl, {"op": "bogus"})`,
			true, `unexpected \"bogus\" message`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "wrong exit code" && !exitCodes {
				t.Skipf("kernel %d.%d keeps no exit code in a pidfd (Linux 6.15)", major, minor)
			}
			src := string(launch.ZygoteSource)
			if strings.Count(src, tt.old) != 1 {
				t.Fatalf("the server program no longer holds %q once", tt.old)
			}
			var log logBuffer
			l := e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
			z, err := l.StartZygoteFrom(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding,
				Preload: []string{"zeotestcontracts"}}, []byte(strings.Replace(src, tt.old, tt.new, 1)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { z.Close() })
			server := z.Stats().ServerPID
			out, err := z.Invoke(testCtx(t), e.echo(t))
			if tt.cold {
				mustSucceed(t, out, err)
				if out.Process.Warm {
					t.Fatal("launched warm from a lying server")
				}
			} else if !errors.Is(err, launch.ErrExitUnknown) || !out.Process.Warm {
				t.Fatalf("err = %v, warm %v", err, out != nil && out.Process.Warm)
			}
			if out.Process.Warm {
				waitDead(t, out.Process.PID)
			}
			waitDead(t, server)
			if !strings.Contains(log.String(), tt.log) {
				t.Fatalf("the log does not say %q:\n%s", tt.log, log.String())
			}
		})
	}
}

// TestWarmHostAsAnotherUser starts a zygote with Config.User (uid 65534)
// from the system interpreter: the server's program is given to that user,
// the warm host runs as it with no supplementary groups, and it cannot
// read its parent, the server, which marked itself non-dumpable.
func TestWarmHostAsAnotherUser(t *testing.T) {
	requireRoot(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("needs %s, which uid %d can run: %v", python, nobody, err)
	}
	modules := openDir(t)
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	e := pyEnv{python: python, modules: modules, f: newFixture(t)}
	l, err := launch.New(launch.Config{Interpreter: python, Args: []string{"-m", "zeotestprobe"}, Env: e.env(),
		Dir: openDir(t), Verifier: environment.Trust{}, User: &contain.User{UID: nobody, GID: nobody}})
	if err != nil {
		t.Fatal(err)
	}
	z := e.zygote(t, l, launch.ZygoteConfig{Preload: []string{"json"}})
	r, out := runProbe(t, e, z.Invoke)
	if !out.Process.Warm || r.UID != nobody || r.GID != nobody || len(r.Groups) != 0 {
		t.Fatalf("warm %v: host ran as uid %d gid %d groups %v, want %d, %d and none", out.Process.Warm, r.UID, r.GID, r.Groups, nobody, nobody)
	}
	t.Logf("a warm host as uid %d reading its parent's environment: %q", nobody, r.ParentEnv)
	if r.PPID != z.Stats().ServerPID || r.ParentEnv == "ok" {
		t.Fatalf("the host (parent %d; server %d) read its parent's environment: %q", r.PPID, z.Stats().ServerPID, r.ParentEnv)
	}
}
