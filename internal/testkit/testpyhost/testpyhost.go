// Package testpyhost holds a Python stand-in of the upstream host for the
// tests and benchmarks of warm launch. zeo_core is laid out and imports as
// upstream's zeo_core does: the host zeo_core.adapters.runtime_host (a
// package run by its __main__, whose modules import rfc8785 — a stand-in
// here —, pydantic, jsonschema, zeo_core.contracts.runtime, zeo_core.tools
// and zeo_core.core.managed_execution at their top level, the contracts
// building pydantic models as they are imported), speaking the protocol far
// enough to bootstrap, run a capability of demo_provider (echo, hang, fail,
// two_effects through its governed effect port) and publish. As
// upstream's, after bootstrap it activates the provider's generation
// (catalogue.installed_factory imports the provider, then
// CandidateCatalogue.activate validates the inventory, builds the registry
// and compares it with the admitted manifests), the steps a provider-warm
// server does once; zeotestlarge is a large provider (tens of
// capabilities, large schemas) whose generation costs real work. Beside it:
// zeotesthost (the same host under a short name, for tests that list their
// own preload), zeotestcontracts (the host's dependencies under one name),
// the probe host zeotestprobe (one JSON line saying what the process
// inherited), and two modules that make a zygote refuse to fork
// (zeotestthread, zeotestswitch). It is for tests only, never a real
// distribution.
package testpyhost

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

//go:embed *.py all:zeo_core
var files embed.FS

// HostModule is the stand-in host, laid out as the upstream host is: run
// it as `python -m HostModule`.
const HostModule = "zeo_core.adapters.runtime_host"

// Install writes the modules and packages into dir, which then belongs on
// the host's PYTHONPATH.
func Install(dir string) error {
	return fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || path == ".":
			return err
		case d.IsDir():
			return os.Mkdir(filepath.Join(dir, path), 0o755)
		case !strings.HasSuffix(path, ".py"):
			return nil // a cache the interpreter left, were there one
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, path), b, 0o644)
	})
}

var (
	findOnce sync.Once
	found    string
	findErr  error
)

// Interpreter returns the absolute path of the real interpreter behind
// python3 (not a shim) when it has pydantic and jsonschema. Where it has
// not, it skips tb, or fails it when the environment says CI=true: CI
// installs them (.ci/run).
func Interpreter(tb testing.TB) string {
	tb.Helper()
	findOnce.Do(func() {
		out, err := exec.Command("python3", "-c",
			"import sys, pydantic, jsonschema; print(sys.executable)").CombinedOutput()
		if err != nil {
			findErr = fmt.Errorf("python3 with pydantic and jsonschema is not available (%v: %s)", err, bytes.TrimSpace(out))
			return
		}
		found, findErr = filepath.EvalSymlinks(strings.TrimSpace(string(out)))
	})
	if findErr != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatal(findErr)
		}
		tb.Skip(findErr)
	}
	return found
}

// HostFiles returns the sha256 digests ("sha256:<hex>") of the stand-in
// host's source files that a provider-warm server pins (host.py and
// catalogue.py of HostModule), by file name.
func HostFiles() map[string]string {
	out := map[string]string{}
	for _, name := range []string{"host.py", "catalogue.py"} {
		b, err := files.ReadFile("zeo_core/adapters/runtime_host/" + name)
		if err != nil {
			panic(err) // embedded at build time: never absent
		}
		out[name] = fmt.Sprintf("sha256:%x", sha256.Sum256(b))
	}
	return out
}

// LargeProvider is the factory of the large stand-in provider
// (zeotestlarge): tens of capabilities with large schemas, or as many as
// the environment variable LargeCapabilitiesEnv says.
const LargeProvider = "zeotestlarge:factory"

// LargeCapabilitiesEnv, set to a number in the host's environment, is how
// many capabilities zeotestlarge declares (30 without it).
const LargeCapabilitiesEnv = "ZEO_TESTLARGE_CAPABILITIES"

// LargeManifests returns the manifests zeotestlarge declares, as JSON
// objects, from python with modules (a directory Install wrote) on its
// path and env (KEY=value) added to its environment.
func LargeManifests(python, modules string, env ...string) ([]json.RawMessage, error) {
	cmd := exec.Command(python, "-c", "import json, zeotestlarge; print(json.dumps(zeotestlarge.manifests()))")
	cmd.Env = append(append(os.Environ(), "PYTHONPATH="+modules), env...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing zeotestlarge's manifests: %w", err)
	}
	var ms []json.RawMessage
	if err := json.Unmarshal(out, &ms); err != nil {
		return nil, fmt.Errorf("zeotestlarge's manifests: %w", err)
	}
	return ms, nil
}
