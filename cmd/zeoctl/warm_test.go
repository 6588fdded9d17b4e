//go:build linux

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// TestInvokeWarm runs `zeoctl invoke -python PATH -warm` on the Python
// stand-in host, laid out as upstream's zeo_core.adapters.runtime_host:
// the host is forked from a zygote that preloaded the host's discovered
// imports, and the operation succeeds. -warm without -python is a usage
// error.
func TestInvokeWarm(t *testing.T) {
	t.Parallel()
	python := testpyhost.Interpreter(t)
	modules := t.TempDir()
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	// The binding names the interpreter's own version, which zeoctl checks.
	version, err := exec.Command(python, "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(exampleBinding)
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.DecodeBinding(raw)
	if err != nil {
		t.Fatal(err)
	}
	b.PythonVersion = strings.TrimSpace(string(version))
	out, err := canon.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	binding := filepath.Join(t.TempDir(), "binding.json")
	if err := os.WriteFile(binding, out, 0o644); err != nil {
		t.Fatal(err)
	}
	wantRun(t, zeoctl(t, "invoke", "-python", python, "-env", "PYTHONPATH="+modules, "-env", "LANG=C.UTF-8",
		"-binding", binding, "-capability", "example.echo@1.0.0", "-args", `{"text":"hi"}`, "-warm"), 0,
		[]string{"state      succeeded", "forked warm from the zygote"}, []string{"zygote started (server pid", "modules preloaded: the host's own imports"})
	wantRun(t, zeoctl(t, "invoke", "-simulated", "-warm"), 2, nil, []string{"-warm needs -python"})
}
