//go:build linux

package supervise_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// TestWarmOperations runs operations with Config.Zygote: the hosts (the
// Python test host) are forked warm and their results accepted as a cold
// host's would be; a zygote of another launcher is refused by New.
func TestWarmOperations(t *testing.T) {
	python := testpyhost.Interpreter(t)
	modules := t.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	newPyLauncher := func() *launch.Launcher {
		l, err := launch.New(launch.Config{Interpreter: python, Args: []string{"-m", "zeotesthost"},
			Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Dir: t.TempDir(), WaitDelay: 500 * time.Millisecond,
			Verifier: launch.TrustEnvironment{}, AllowRootHost: true})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	ln := newPyLauncher()
	z, err := ln.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: testBinding(t),
		Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
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
