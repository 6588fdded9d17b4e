//go:build linux

package supervise_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// TestTelemetryWarm: hosts forked by a fork server (the Python test
// host's zygote) count as warm starts, and their attempts' spans say so.
func TestTelemetryWarm(t *testing.T) {
	python := testpyhost.Interpreter(t)
	modules := t.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	ln, err := launch.New(launch.Config{Interpreter: python, Args: []string{"-m", "zeotesthost"},
		Env: []string{"PYTHONPATH=" + modules, "LANG=C.UTF-8"}, Dir: t.TempDir(), WaitDelay: 500 * time.Millisecond,
		Verifier: launch.TrustEnvironment{}, AllowRootHost: true})
	if err != nil {
		t.Fatal(err)
	}
	z, err := ln.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: testBinding(t),
		Preload: []string{"pydantic", "pydantic.main", "jsonschema", "zeotestcontracts"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	r := newRecorders(t)
	cfg := config(t, memory.New(), ln)
	cfg.Zygote, cfg.TracerProvider, cfg.MeterProvider = z, r.tracers, r.meters
	cfg.LeaseTTL = time.Hour
	s := newSupervisor(t, cfg)
	for _, op := range []string{"op-warm-1", "op-warm-2"} {
		o, err := s.Invoke(testCtx(t), call(op, "example.echo@1.0.0", map[string]any{"text": "hello"}, 0))
		wantState(t, o, err, launch.StateSucceeded, nil)
		if !o.Launch.Process.Warm {
			t.Fatalf("%s started cold", op)
		}
	}
	m := r.metrics(t)
	if m["zeo.runtime.host.starts{zeo.host.start=warm}"] != 2 || m["zeo.runtime.host.starts{zeo.host.start=cold}"] != 0 ||
		m["zeo.runtime.host.warm_fallbacks{zeo.host.fallback.reason=warm_launch_refused}"] != 0 {
		t.Errorf("metrics %v", m)
	}
	n := 0
	for _, sp := range r.spans.GetSpans() {
		if sp.Name != "zeo.attempt" {
			continue
		}
		n++
		if a := attrs(sp.Attributes); !strings.Contains(a, "zeo.host.start=warm") {
			t.Errorf("attempt span %s", a)
		}
	}
	if n != 2 {
		t.Errorf("%d attempt spans, want 2", n)
	}
}
