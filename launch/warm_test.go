//go:build linux

package launch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
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
	l, err := launch.New(launch.Config{
		Interpreter: e.python, Args: []string{"-m", module}, Env: env, Dir: t.TempDir(),
		Grace: time.Second, WaitDelay: 500 * time.Millisecond,
		Verifier: launch.TrustEnvironment{}, AllowRootHost: true, Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// zygote starts a zygote for l, closed when the test ends.
func (e pyEnv) zygote(t testing.TB, l *launch.Launcher, cfg launch.ZygoteConfig) *launch.Zygote {
	t.Helper()
	if cfg.Provider.Factory == "" {
		cfg.Provider = e.f.binding
	}
	if cfg.Preload == nil {
		cfg.Preload = []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}
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

// TestWarmEcho runs the Python test host warm and cold: both succeed with
// the same three frames, and only the warm one was forked.
func TestWarmEcho(t *testing.T) {
	e := newPyEnv(t)
	l := e.launcher(t, "zeotesthost", nil, e.env()...)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	for i := range 3 {
		out, err := z.Invoke(testCtx(t), e.echo(t))
		mustSucceed(t, out, err)
		if !out.Process.Warm || out.Session.Frames != 3 {
			t.Fatalf("invocation %d: warm %v, %d frames", i, out.Process.Warm, out.Session.Frames)
		}
	}
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
	t.Setenv("ZEO_PARENT_SECRET", "hunter2-parent-secret")
	leak, err := unix.Open("/dev/null", unix.O_RDONLY, 0) // no O_CLOEXEC on purpose
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	e := newPyEnv(t)
	for _, tt := range []struct {
		name string
		env  []string
	}{
		{"utf8", e.env()},
		// No locale: the interpreter coerces it (LC_CTYPE), cold and warm.
		{"coerced", []string{"PYTHONPATH=" + e.modules}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := e.launcher(t, "zeotestprobe", nil, tt.env...)
			z := e.zygote(t, l, launch.ZygoteConfig{})
			warm, wout := runProbe(t, e, z.Invoke)
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
				r.FDs, r.Env, r.CEnv, r.PID, r.PGID, r.SID, r.Modules = nil, nil, nil, 0, 0, 0, nil
				return r
			}
			if diff := cmp.Diff(norm(cold), norm(warm)); diff != "" {
				t.Errorf("cold -> warm:\n%s", diff)
			}
			if warm.Threads != 1 || warm.Tasks != 1 || warm.Dumpable != 1 {
				t.Errorf("warm threads %d, tasks %d, dumpable %d", warm.Threads, warm.Tasks, warm.Dumpable)
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
	e := newPyEnv(t)
	for _, tt := range []struct {
		exit string
		code int
	}{{"0", 0}, {"3", 3}, {"no thanks", 1}, {"raise", 1}} {
		t.Run(tt.exit, func(t *testing.T) {
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
