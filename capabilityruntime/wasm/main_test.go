package wasm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// guestPackage is the test program, built for wasip1 by TestMain.
const guestPackage = "github.com/zeoruntime/runtimeipc/capabilityruntime/wasm/testdata/guest"

var (
	// guest is the module built from testdata/guest: one program whose
	// behaviour is the request's "do" parameter, so that the tests compile
	// one module (compiling a Go module takes seconds, many more under the
	// race detector) and load it from cacheDir afterwards.
	guest []byte
	// cacheDir is the compilation cache every test backend shares unless a
	// test is about the cache itself.
	cacheDir string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "wasm-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "guest.wasm")
	if err := buildGuest(out, "wasip1", "wasm"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if guest, err = os.ReadFile(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cacheDir = filepath.Join(dir, "cache")
	return m.Run()
}

// buildGuest builds the guest program for goos/goarch into out.
func buildGuest(out, goos, goarch string) error {
	// go test puts the bin directory of the go tool running the tests
	// first on the test binary's PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("go tool not found on PATH: %w", err)
	}
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, guestPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building the guest for %s/%s: %w", goos, goarch, err)
	}
	return nil
}

// install writes an installed runtime directory: runtime.json, whose
// wasm32-wasi entry names module.wasm with the sha256 of code, and
// module.wasm holding code. edit, if not nil, changes the manifest first.
// It returns the spec that starts it.
func install(t *testing.T, name string, code []byte, edit func(*capabilityruntime.Manifest)) capabilityruntime.BackendSpec {
	t.Helper()
	root := t.TempDir()
	sum := sha256.Sum256(code)
	m := &capabilityruntime.Manifest{
		APIVersion: capabilityruntime.APIVersion,
		Kind:       capabilityruntime.Kind,
		Metadata:   capabilityruntime.ManifestMetadata{Name: name, Version: "1.0.0"},
		Runtime: capabilityruntime.ManifestRuntime{
			Type: capabilityruntime.RuntimeKindWasm, Entrypoint: "module.wasm", Protocol: capabilityruntime.ProtocolJSONV1,
		},
		Capabilities: []string{"test.run"},
		Platforms: map[string]capabilityruntime.Platform{
			capabilityruntime.PlatformWasm: {Artifact: "module.wasm", SHA256: "sha256:" + hex.EncodeToString(sum[:])},
		},
	}
	if edit != nil {
		edit(m)
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, capabilityruntime.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "module.wasm"), code, 0o644); err != nil {
		t.Fatal(err)
	}
	return capabilityruntime.BackendSpec{
		Type: name, Version: "1.0.0", Protocol: m.Runtime.Protocol,
		Entrypoint: m.Runtime.Entrypoint, RootDir: root,
	}
}

// newBackend returns a Backend that the test's cleanup closes, after which
// no goroutine may be left. A Config without a CompilationCacheDir gets the
// shared one.
func newBackend(t *testing.T, cfg wasm.Config) *wasm.Backend {
	t.Helper()
	if cfg.CompilationCacheDir == "" {
		cfg.CompilationCacheDir = cacheDir
	}
	check := leaktest.Goroutines(t)
	b, err := wasm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(context.Background()); err != nil {
			t.Errorf("closing the backend: %v", err)
		}
		check()
	})
	return b
}

func start(t *testing.T, b *wasm.Backend, spec capabilityruntime.BackendSpec) capabilityruntime.BackendInstance {
	t.Helper()
	inst, err := b.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// guestInstance starts the guest on a backend of its own.
func guestInstance(t *testing.T, cfg wasm.Config) (*wasm.Backend, capabilityruntime.BackendInstance) {
	t.Helper()
	b := newBackend(t, cfg)
	return b, start(t, b, install(t, "acme:guest", guest, nil))
}

// call runs params with a minute's deadline, so that a broken stop fails
// the test instead of hanging it.
func call(t *testing.T, inst capabilityruntime.BackendInstance, params map[string]any) (*capabilityruntime.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return inst.Execute(ctx, &capabilityruntime.Request{Params: params})
}

// callError asserts that err is a *wasm.CallError wrapping want.
func callError(t *testing.T, err error, want error) *wasm.CallError {
	t.Helper()
	ce, ok := errors.AsType[*wasm.CallError](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *wasm.CallError", err, err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Fatalf("error %v does not wrap %v", err, want)
	}
	return ce
}
