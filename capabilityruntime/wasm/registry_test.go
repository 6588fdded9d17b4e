//go:build unix

package wasm_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
)

// TestRegistry is a controller that knows only the contract's Registry: it
// registers this module's backends under their own names, which must cover
// every kind SupportedRuntimeKinds promises, and runs the same program as a
// native one-shot process and as a wasm module side by side.
func TestRegistry(t *testing.T) {
	pb, err := process.New(process.Config{})
	if err != nil {
		t.Fatal(err)
	}
	backends := []capabilityruntime.Backend{pb, newBackend(t, wasm.Config{})}
	var r capabilityruntime.Registry
	for _, b := range backends {
		if err := r.Register(b.BackendName(), b); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if err := r.CloseBackends(t.Context()); err != nil {
			t.Errorf("CloseBackends: %v", err)
		}
	}()
	if got, want := r.RegisteredKinds(), capabilityruntime.SupportedRuntimeKinds(); !slices.Equal(got, want) {
		t.Fatalf("this module's backends launch %v; the contract promises %v", got, want)
	}

	native := filepath.Join(t.TempDir(), "guest")
	if err := buildGuest(native, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(native, 0o755); err != nil {
		t.Fatal(err)
	}
	procSpec := capabilityruntime.BackendSpec{
		Type: "acme:guest-native", Version: "1.0.0", Protocol: capabilityruntime.ProtocolJSONV1,
		Entrypoint: native, RootDir: filepath.Dir(native),
	}
	wasmSpec := install(t, "acme:guest", guest, nil)
	for kind, spec := range map[string]capabilityruntime.BackendSpec{
		capabilityruntime.RuntimeKindProcess: procSpec,
		capabilityruntime.RuntimeKindWasm:    wasmSpec,
	} {
		inst, err := r.Start(t.Context(), kind, spec)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		resp, err := call(t, inst, map[string]any{"do": "echo", "kind": kind})
		if err != nil || resp.Result["kind"] != kind {
			t.Errorf("%s: %v, %v", kind, resp, err)
		}
		_, err = call(t, inst, map[string]any{"do": "fail"})
		if !errors.Is(err, capabilityruntime.ErrRuntimeFailure) {
			t.Errorf("%s: a controlled failure gave %v", kind, err)
		}
		if err := inst.Close(t.Context()); err != nil {
			t.Errorf("%s: Close: %v", kind, err)
		}
	}
	if _, err := r.Start(t.Context(), capabilityruntime.RuntimeKindContainer, wasmSpec); !errors.Is(err, capabilityruntime.ErrUnsupportedKind) {
		t.Errorf("container kind: %v, want ErrUnsupportedKind", err)
	}
}
