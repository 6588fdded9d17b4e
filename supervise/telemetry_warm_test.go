//go:build linux

package supervise_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// TestTelemetryWarm: hosts forked by a fork server (the Python test
// host's zygote) count as warm starts, and their attempts' spans say so.
func TestTelemetryWarm(t *testing.T) {
	_, newPyLauncher := pyLaunchers(t, "zeotesthost")
	ln := newPyLauncher()
	z := startZygote(t, ln)
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
