//go:build linux

package supervise_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// TestWarmOperations runs operations with Config.Zygote: the hosts (the
// Python test host) are forked warm and their results accepted as a cold
// host's would be; a zygote of another launcher is refused by New.
func TestWarmOperations(t *testing.T) {
	_, newPyLauncher := pyLaunchers(t, "zeotesthost")
	ln := newPyLauncher()
	z := startZygote(t, ln)
	cfg := config(t, memory.New(), ln)
	cfg.Zygote = z
	s := newSupervisor(t, cfg)
	for _, op := range []string{"op-warm-1", "op-warm-2"} {
		o, err := s.Invoke(testCtx(t), call(op, "example.echo@1.0.0", map[string]any{"text": "hello"}, 0))
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		if o.State != launch.StateSucceeded || o.Launch == nil || !o.Launch.Process.Warm {
			t.Fatalf("%s: state %s, reason %q, launch %+v", op, o.State, o.Reason, o.Launch)
		}
	}
	if st := z.Stats(); st.Forks != 2 || st.Cold != 0 {
		t.Fatalf("zygote stats %+v", st)
	}

	cfg.Launcher = newPyLauncher()
	if _, err := supervise.New(cfg); !errors.Is(err, supervise.ErrInvalidConfig) {
		t.Fatalf("a zygote of another launcher: %v", err)
	}
}

// TestWarmStarters: one Supervisor with Config.Warm runs two providers
// and a newer generation of one of them warm, each environment from a
// fork server of its own made on first use; Close closes them all.
func TestWarmStarters(t *testing.T) {
	modules, newPyLauncher := pyLaunchers(t, "zeotesthost")
	src, err := os.ReadFile(filepath.Join(modules, "demo_provider.py"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modules, "beta_provider.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	ln := newPyLauncher()
	reg := newRegistry()
	alpha, beta := variant(t, "demo_provider:factory", 1, ""), variant(t, "beta_provider:factory", 1, "beta")
	reg.admit(alpha)
	reg.admit(beta)
	cfg := config(t, memory.New(), ln)
	cfg.Provider, cfg.Providers, cfg.Warm = manifest.ProviderBinding{}, reg, &launch.ZygoteConfig{}
	s := newSupervisor(t, cfg)
	ctx := testCtx(t)
	run := func(op string, b manifest.ProviderBinding) {
		c := call(op, "example.echo@1.0.0", map[string]any{"text": op}, 0)
		c.Provider = keyOf(b)
		o, err := s.Invoke(ctx, c)
		wantState(t, o, err, launch.StateSucceeded, nil)
		if o.Launch == nil || !o.Launch.Process.Warm {
			t.Errorf("%s: not launched warm: %+v", op, o.Launch)
		}
	}
	var wg sync.WaitGroup
	for _, tt := range []struct {
		op string
		b  manifest.ProviderBinding
	}{{"op-alpha", alpha}, {"op-beta", beta}, {"op-alpha-2", alpha}, {"op-beta-2", beta}} {
		wg.Add(1)
		go func() { defer wg.Done(); run(tt.op, tt.b) }()
	}
	wg.Wait()
	reg.admit(variant(t, "demo_provider:factory", 2, "alpha, second generation"))
	run("op-alpha-gen2", alpha)
	closeSupervisor(t, s)
	if kids := leaktest.Children(t); len(kids) != 0 {
		t.Fatalf("processes left after Close (fork servers?): %v", kids)
	}
}

// TestIdleStarterClosed: a starter without invocations for StarterIdle
// is closed, its fork server with it, and made again on the next call.
func TestIdleStarterClosed(t *testing.T) {
	_, newPyLauncher := pyLaunchers(t, "zeotesthost")
	ln := newPyLauncher()
	cfg := config(t, memory.New(), ln)
	cfg.Warm, cfg.StarterIdle = &launch.ZygoteConfig{}, 300*time.Millisecond
	s := newSupervisor(t, cfg)
	ctx := testCtx(t)
	for _, op := range []string{"op-idle-1", "op-idle-2"} {
		o, err := s.Invoke(ctx, call(op, "example.echo@1.0.0", map[string]any{"text": op}, 0))
		wantState(t, o, err, launch.StateSucceeded, nil)
		if o.Launch == nil || !o.Launch.Process.Warm {
			t.Fatalf("%s: not launched warm", op)
		}
		// The fork server goes once its starter has been idle.
		waitFor(t, func() bool { return len(leaktest.Children(t)) == 0 })
	}
}

// pyLaunchers installs the Python test hosts (and their test provider
// modules) into a temporary directory, modules, and returns it with a
// function making launchers that run `python -m module` from it.
func pyLaunchers(t *testing.T, module string) (modules string, newLauncher func() *launch.Launcher) {
	t.Helper()
	python := testpyhost.Interpreter(t)
	modules = t.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	return modules, func() *launch.Launcher {
		l, err := launch.New(launch.Config{Interpreter: python, Args: []string{"-m", module},
			Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Dir: t.TempDir(), WaitDelay: 500 * time.Millisecond,
			Verifier: environment.Trust{}, AllowRootHost: true})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// startZygote starts a fork server of ln for the test binding, with what
// the echo capability imports preloaded, closed when the test ends.
func startZygote(t *testing.T, ln *launch.Launcher) *launch.Zygote {
	t.Helper()
	z, err := ln.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: testBinding(t),
		Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	return z
}
