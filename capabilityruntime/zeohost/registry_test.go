package zeohost_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/zeohost"
)

// TestRegistry is a controller that knows only the contract's Registry: it
// registers the process, wasm and zeohost backends under their own names
// and runs a native process runtime (this test binary, re-executed), a
// wasm module and a ZEO provider (the simulated host, through the
// Supervisor) side by side, each started with Registry.Start by its kind.
func TestRegistry(t *testing.T) {
	e := newEnv(t, nil) // closed by its cleanup, after CloseBackends
	pb, err := process.New(process.Config{})
	if err != nil {
		t.Fatal(err)
	}
	wb, err := wasm.New(wasm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var r capabilityruntime.Registry
	for _, b := range []capabilityruntime.Backend{pb, wb, e.b} {
		if err := r.Register(b.BackendName(), b); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		if err := r.CloseBackends(t.Context()); err != nil {
			t.Errorf("CloseBackends: %v", err)
		}
	}()
	// The kinds a manifest may declare all have a backend; zeohost is the
	// one extension, and no manifest can declare it.
	kinds := r.RegisteredKinds()
	if want := append(capabilityruntime.SupportedRuntimeKinds(), zeohost.Kind); !slices.Equal(kinds, want) {
		t.Fatalf("registered %v, want %v", kinds, want)
	}
	m := manifestOf("acme:zeo-demo", zeohost.Kind, "python3", nil)
	if err := m.Validate(); !errors.Is(err, capabilityruntime.ErrInvalidManifest) {
		t.Errorf("a runtime.json of kind %q: %v, want refused", zeohost.Kind, err)
	}

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]capabilityruntime.BackendSpec{
		capabilityruntime.RuntimeKindProcess: {Type: nativeType, Version: "1.0.0", Protocol: capabilityruntime.ProtocolJSONV1,
			Entrypoint: self, RootDir: filepath.Dir(self)},
		capabilityruntime.RuntimeKindWasm: installWasm(t),
		zeohost.Kind:                      spec(hostsimPath),
	}
	params := map[string]map[string]any{
		capabilityruntime.RuntimeKindProcess: {"do": "echo"},
		capabilityruntime.RuntimeKindWasm:    {"do": "echo"},
		zeohost.Kind: {zeohost.ParamCapabilityID: "example.echo@1.0.0", zeohost.ParamOperationID: "op-registry",
			zeohost.ParamArguments: map[string]any{"text": "zeo"}},
	}
	insts := map[string]capabilityruntime.BackendInstance{}
	for _, kind := range kinds {
		inst, err := r.Start(testCtx(t), kind, specs[kind])
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		defer inst.Close(t.Context())
		insts[kind] = inst
	}
	// Side by side: one call of each in flight at once.
	type answer struct {
		kind string
		resp *capabilityruntime.Response
		err  error
	}
	answers := make(chan answer, len(kinds))
	for _, kind := range kinds {
		go func() {
			resp, err := insts[kind].Execute(testCtx(t), &capabilityruntime.Request{Params: params[kind]})
			answers <- answer{kind, resp, err}
		}()
	}
	for range kinds {
		a := <-answers
		if a.err != nil || a.resp.Error != "" {
			t.Errorf("%s: %v, %v", a.kind, a.resp, a.err)
			continue
		}
		got, want := a.resp.Result["kind"], any(a.kind)
		if a.kind == zeohost.Kind {
			got, want = a.resp.Result[zeohost.ResultData], map[string]any{"text": "zeo"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s answered %v, want %v", a.kind, a.resp.Result, want)
		}
	}
	// A controlled failure looks the same under every kind.
	_, err = insts[capabilityruntime.RuntimeKindProcess].Execute(testCtx(t), &capabilityruntime.Request{Params: map[string]any{"do": "fail"}})
	if !errors.Is(err, capabilityruntime.ErrRuntimeFailure) {
		t.Errorf("process: a controlled failure gave %v", err)
	}
	_, err = insts[zeohost.Kind].Execute(testCtx(t), &capabilityruntime.Request{Params: map[string]any{
		zeohost.ParamCapabilityID: "example.fail@1.0.0", zeohost.ParamOperationID: "op-registry-fail"}})
	if !errors.Is(err, capabilityruntime.ErrRuntimeFailure) {
		t.Errorf("zeohost: a controlled failure gave %v", err)
	}
	for kind, inst := range insts {
		if err := inst.Health(testCtx(t)); err != nil {
			t.Errorf("%s: Health: %v", kind, err)
		}
	}
}

func manifestOf(name, kind, entrypoint string, platforms map[string]capabilityruntime.Platform) *capabilityruntime.Manifest {
	return &capabilityruntime.Manifest{
		APIVersion: capabilityruntime.APIVersion, Kind: capabilityruntime.Kind,
		Metadata:     capabilityruntime.ManifestMetadata{Name: name, Version: "1.0.0"},
		Runtime:      capabilityruntime.ManifestRuntime{Type: kind, Entrypoint: entrypoint},
		Capabilities: []string{"test.run"}, Platforms: platforms,
	}
}

// installWasm installs echoModule as an installed wasm runtime and returns
// its spec.
func installWasm(t *testing.T) capabilityruntime.BackendSpec {
	t.Helper()
	root := t.TempDir()
	code := echoModule(`{"result":{"kind":"wasm"}}`)
	sum := sha256.Sum256(code)
	m := manifestOf("acme:zeohost-wasm", capabilityruntime.RuntimeKindWasm, "module.wasm", map[string]capabilityruntime.Platform{
		capabilityruntime.PlatformWasm: {Artifact: "module.wasm", SHA256: "sha256:" + hex.EncodeToString(sum[:])},
	})
	m.Runtime.Protocol = capabilityruntime.ProtocolJSONV1
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, capabilityruntime.ManifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "module.wasm"), code, 0o644); err != nil {
		t.Fatal(err)
	}
	return capabilityruntime.BackendSpec{Type: m.Metadata.Name, Version: "1.0.0", Protocol: m.Runtime.Protocol,
		Entrypoint: "module.wasm", RootDir: root}
}

// echoModule assembles a WASI preview 1 module, a few dozen bytes, whose
// _start writes out to stdout with one fd_write and returns: compiling it
// costs nothing, where a Go module takes seconds (more under -race).
func echoModule(out string) []byte {
	uleb := func(n int) []byte {
		var b []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	sleb := func(n int) []byte { // n ≥ 0
		var b []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n == 0 && c&0x40 == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	name := func(s string) []byte { return append(uleb(len(s)), s...) }
	section := func(id byte, body ...[]byte) []byte {
		c := bytes.Join(body, nil)
		return append(append([]byte{id}, uleb(len(c))...), c...)
	}
	const base = 16 // the text's address; the iovec is at 0
	i32 := func(n int) []byte { return append([]byte{0x41}, sleb(n)...) }
	code := bytes.Join([][]byte{
		{0x00},                                // no locals
		i32(0), i32(base), {0x36, 0x02, 0x00}, // iovec.buf = base
		i32(4), i32(len(out)), {0x36, 0x02, 0x00}, // iovec.len
		i32(1), i32(0), i32(1), i32(8), {0x10, 0x00, 0x1a}, // fd_write(stdout, iovec, 1, &written); drop
		{0x0b},
	}, nil)
	return bytes.Join([][]byte{
		{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00},
		section(1, []byte{0x02, 0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00}),
		section(2, []byte{0x01}, name("wasi_snapshot_preview1"), name("fd_write"), []byte{0x00, 0x00}),
		section(3, []byte{0x01, 0x01}),
		section(5, []byte{0x01, 0x00, 0x01}),
		section(7, []byte{0x02}, name("memory"), []byte{0x02, 0x00}, name("_start"), []byte{0x00, 0x01}),
		section(10, []byte{0x01}, uleb(len(code)), code),
		section(11, []byte{0x01, 0x00}, i32(base), []byte{0x0b}, name(out)),
	}, nil)
}
