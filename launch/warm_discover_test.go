//go:build linux

package launch_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
)

// closure is what the stand-in host imports from outside its package
// before it loads a provider, as upstream's host imports it: the modules
// a default zygote must have loaded in every child.
var closure = []string{"zeo_core", "zeo_core.adapters", "rfc8785", "pydantic", "jsonschema",
	"zeo_core.contracts", "zeo_core.contracts.runtime", "zeo_core.tools", "zeo_core.tools.invoke",
	"zeo_core.core.managed_execution", "socket", "secrets", "logging"}

// TestWarmDefaultPreload starts a zygote with the default ZygoteConfig
// for the stand-in host (laid out as upstream's): its server preloads the
// host's discovered import closure. A child forked from it (running the
// probe in place of the host) has every module of the closure loaded
// and no module of the host package or of the provider; the host itself,
// forked warm, then succeeds.
func TestWarmDefaultPreload(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	var log logBuffer
	l := e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)

	// The probe in place of the host, in a child of a default server.
	src := string(launch.ZygoteSource)
	old := `return server.cfg["module"], argv`
	if strings.Count(src, old) != 1 {
		t.Fatalf("the server program no longer holds %q once", old)
	}
	pz, err := l.StartZygoteFrom(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding},
		[]byte(strings.Replace(src, old, `return "zeotestprobe", argv`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pz.Close() })
	st := pz.Stats()
	if !st.Discovered {
		t.Fatalf("the default preload was not discovered: stats %+v; log:\n%s", st, log.String())
	}
	probe, out := runProbe(t, e, pz.Invoke)
	if !out.Process.Warm {
		t.Fatal("the probe was not forked warm")
	}
	for _, m := range closure {
		if !slices.Contains(probe.Modules, m) {
			t.Errorf("the warm child lacks %s of the host's closure; the server preloaded %q", m, st.Preloaded)
		}
	}
	for _, m := range probe.Modules {
		if m == "demo_provider" || m == hostModule || strings.HasPrefix(m, hostModule+".") {
			t.Errorf("host or provider module %s was loaded before the fork", m)
		}
	}
	for _, m := range st.Preloaded {
		if strings.HasPrefix(m, hostModule) || m == "demo_provider" {
			t.Errorf("the server preloaded host or provider module %s", m)
		}
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Errorf("a default start warned:\n%s", log.String())
	}

	// The host itself, warm from a default server.
	z := e.zygote(t, l, launch.ZygoteConfig{})
	for range 2 {
		out, err := z.Invoke(testCtx(t), e.echo(t))
		mustSucceed(t, out, err)
		if !out.Process.Warm {
			t.Fatal("the host was not forked warm")
		}
	}
	if st := z.Stats(); !st.Discovered || st.Cold != 0 || st.Starts != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// writeHost writes a host package of the given modules (path relative
// to the PYTHONPATH directory: source) into e's modules.
func writeHost(t *testing.T, e pyEnv, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(e.modules, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWarmDiscovery starts default zygotes for hosts written to show each
// rule of the discovery: what a host module imports at its top level
// (relative imports, `from package import submodule`, class bodies, try
// blocks) is preloaded, in the host's order; what it imports in a
// function, under `if TYPE_CHECKING:` or from a forbidden package is not;
// the host's own modules are read, never imported; a relative import
// beyond the top package fails the discovery, and a failed import of a
// discovered module is skipped with a warning (without one, if optional).
func TestWarmDiscovery(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	writeHost(t, e, map[string]string{
		"shapehost/__init__.py": "import json\n",
		"shapehost/__main__.py": `from __future__ import annotations
import typing
from . import helper
from shapehost import parts
from .parts import deep
if typing.TYPE_CHECKING:
    import zeotestthread
try:
    import no_such_optional_module
except ImportError:
    pass
class K:
    import colorsys
def main():
    import demo_provider
    import zeotestthread
if __name__ == "__main__":
    import fractions
`,
		"shapehost/helper.py": "import base64\nfrom zeo_core.contracts import runtime\nimport no_such_required_module\n",
		// A parent package of a forbidden one: the name is not imported
		// through it.
		"shapehost/parts/__init__.py": "import zeotestswitch\nfrom zeo_core import adapters\n",
		"shapehost/parts/deep.py":     "from ... import no_such_relative_module\n",
		"shapehost/unused.py":         "import zeotestthread\n",
	})
	var log logBuffer
	l := e.launcher(t, "shapehost", slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
	z, err := l.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding, Forbid: []string{"colorsys"}})
	if err == nil {
		t.Cleanup(func() { z.Close() })
	}
	// parts/deep.py's relative import goes above the top-level package:
	// the discovery fails, and says so.
	if err != nil || z.Stats().Discovered || !strings.Contains(log.String(), "relative import beyond the top-level package") {
		t.Fatalf("err %v; log:\n%s", err, log.String())
	}
	if got := z.Stats().Preloaded; !slices.Equal(got, []string{"pydantic", "pydantic.main", "jsonschema"}) {
		t.Fatalf("after a failed discovery the server preloaded %q, not the fixed list", got)
	}
	z.Close()

	writeHost(t, e, map[string]string{"shapehost/parts/deep.py": "from .. import helper\n"})
	log = logBuffer{}
	z = e.zygote(t, l, launch.ZygoteConfig{Forbid: []string{"colorsys", "zeo_core.adapters"}})
	st := z.Stats()
	want := []string{"json", "typing", "base64", "zeo_core.contracts", "zeotestswitch", "zeo_core", "fractions"}
	if !st.Discovered || !slices.Equal(st.Preloaded, want) {
		t.Errorf("preloaded %q (discovered %v), want %q", st.Preloaded, st.Discovered, want)
	}
	// A failed import is reported, unless the host expects it to fail (an
	// optional import, in a try block that catches ImportError).
	if !strings.Contains(log.String(), "no_such_required_module") || !strings.Contains(log.String(), "level=WARN") ||
		strings.Contains(log.String(), "no_such_optional_module") {
		t.Errorf("the failed imports were not reported as they should:\n%s", log.String())
	}
}

// TestWarmDiscoveryFallback: a host whose imports cannot be discovered
// (it is not found, or its source does not parse), and one whose
// discovered imports leave the server unable to fork (a thread), get a
// server that preloaded the fixed list, with a warning saying why; it
// forks, never a silent cold path.
func TestWarmDiscoveryFallback(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	writeHost(t, e, map[string]string{
		"badhost/__init__.py":    "",
		"badhost/__main__.py":    "import badhost.broken\n",
		"badhost/broken.py":      "def (:\n",
		"threadhost/__init__.py": "",
		"threadhost/__main__.py": "import zeotestthread\nimport zeotestprobe\nzeotestprobe.main()\n",
	})
	for _, tt := range []struct{ module, log string }{
		{"no_such_host", "host module no_such_host is not found"},
		{"badhost", "SyntaxError"},
		{"threadhost", "2 threads run"},
	} {
		t.Run(tt.module, func(t *testing.T) {
			var log logBuffer
			l := e.launcher(t, tt.module, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
			z := e.zygote(t, l, launch.ZygoteConfig{})
			st := z.Stats()
			if st.Discovered || !slices.Equal(st.Preloaded, []string{"pydantic", "pydantic.main", "jsonschema"}) {
				t.Errorf("stats %+v, want the fixed list", st)
			}
			if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), tt.log) {
				t.Errorf("the log does not warn %q:\n%s", tt.log, log.String())
			}
			if tt.module != "threadhost" {
				return
			}
			// The thread is started in the host, cold and warm alike; the
			// child had the fixed list loaded.
			r, out := runProbe(t, e, z.Invoke)
			if !out.Process.Warm || !slices.Contains(r.Modules, "pydantic") {
				t.Fatalf("warm %v; the child had %q loaded", out.Process.Warm, r.Modules)
			}
		})
	}
}
