package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
)

// wasmParams is the payload of the wasm rows: 1 KiB of JSON once encoded
// as a Request.
func wasmParams() map[string]any {
	p := capParams()
	body, _ := json.Marshal(capabilityruntime.Request{Params: p})
	p["blob"] = strings.Repeat("x", 1024-len(body)-len(`,"blob":""`))
	return p
}

// buildWasip1 builds pkg (relative to bench/) for GOOS=wasip1 GOARCH=wasm.
func buildWasip1(b *testing.B, dir, name, pkg string) string {
	b.Helper()
	// go test puts the bin directory of the go tool running the
	// benchmarks first on PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=wasip1", "GOARCH=wasm")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("building %s for wasip1: %v", pkg, err)
	}
	return out
}

// installWasm makes root an installed wasm runtime: module.wasm (a copy of
// module) and a runtime.json naming it with its sha256.
func installWasm(b *testing.B, root, name, module string) capabilityruntime.BackendSpec {
	b.Helper()
	code, err := os.ReadFile(module)
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256(code)
	m := capabilityruntime.Manifest{
		APIVersion: capabilityruntime.APIVersion, Kind: capabilityruntime.Kind,
		Metadata:     capabilityruntime.ManifestMetadata{Name: name, Version: "1.0.0"},
		Runtime:      capabilityruntime.ManifestRuntime{Type: capabilityruntime.RuntimeKindWasm, Entrypoint: "module.wasm"},
		Capabilities: []string{"bench.echo"},
		Platforms: map[string]capabilityruntime.Platform{
			capabilityruntime.PlatformWasm: {Artifact: "module.wasm", SHA256: hex.EncodeToString(sum[:])},
		},
	}
	raw, err := json.Marshal(m)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "module.wasm"), code, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, capabilityruntime.ManifestFile), raw, 0o644); err != nil {
		b.Fatal(err)
	}
	return capabilityruntime.BackendSpec{Type: name, Version: "1.0.0", Entrypoint: "module.wasm", RootDir: root}
}

func newWasmBackend(b *testing.B, cacheDir string) *wasm.Backend {
	b.Helper()
	w, err := wasm.New(wasm.Config{CompilationCacheDir: cacheDir})
	if err != nil {
		b.Fatal(err)
	}
	return w
}

// BenchmarkCapabilityRuntimeWasm measures the wasm backend beside the
// process backend, with one payload of 1 KiB of JSON. The one-shot rows run
// one program, bench/jsonecho (encoding/json only), built natively and for
// wasip1; the pool runs bench/capecho, which needs gRPC:
//
//   - WasmExecute: one call on a started wasm instance of jsonecho (a fresh
//     module instance per call: the module's Go runtime starts, reads
//     stdin, answers, exits);
//   - OneShot: the same call under the JSON protocol on the process
//     backend (a native jsonecho process per call);
//   - Pooled: the same call on a warm pooled gRPC worker (capecho);
//   - WasmServe: the call on a wasm instance of capecho, built on
//     capabilityruntime/serve: what linking gRPC and protobuf into a module
//     costs, since their package initialisation runs at every call;
//   - PairedOneShot, PairedPool: WasmExecute and the other row interleaved
//     in every iteration, with the ratios x-oneshot and x-pool (below 1:
//     the wasm call is faster);
//   - ColdVsCached: in every iteration, a new Backend on an empty
//     compilation cache directory starts the module (it compiles), then a
//     new Backend on the directory the first one filled starts it (it loads
//     the compiled code), each Start timed alone; x-cold is cold ÷ cached.
func BenchmarkCapabilityRuntimeWasm(b *testing.B) {
	dir := b.TempDir()
	native := buildTool(b, dir, "capecho", "./capecho", false)
	nativeEcho := buildTool(b, dir, "jsonecho", "./jsonecho", false)
	module := buildWasip1(b, dir, "jsonecho.wasm", "./jsonecho")
	serveModule := buildWasip1(b, dir, "capecho.wasm", "./capecho")
	tmp, err := os.MkdirTemp("", "capbench")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()

	procs, err := process.New(process.Config{TempDir: tmp})
	if err != nil {
		b.Fatal(err)
	}
	defer procs.Close(ctx)
	procSpec := func(protocol string) capabilityruntime.BackendSpec {
		return capabilityruntime.BackendSpec{Type: "bench:capecho", Version: "1.0.0", Protocol: protocol, Entrypoint: native, RootDir: dir}
	}
	pooled, err := procs.Start(ctx, procSpec(capabilityruntime.ProtocolV1))
	if err != nil {
		b.Fatal(err)
	}
	defer pooled.Close(ctx)
	oneShotSpec := procSpec(capabilityruntime.ProtocolJSONV1)
	oneShotSpec.Type, oneShotSpec.Entrypoint = "bench:jsonecho", nativeEcho
	oneShot, err := procs.Start(ctx, oneShotSpec)
	if err != nil {
		b.Fatal(err)
	}
	defer oneShot.Close(ctx)

	wb := newWasmBackend(b, filepath.Join(dir, "cache"))
	defer wb.Close(ctx)
	wasmInst, err := wb.Start(ctx, installWasm(b, filepath.Join(dir, "root"), "bench:jsonecho-wasm", module))
	if err != nil {
		b.Fatal(err)
	}
	defer wasmInst.Close(ctx)
	serveInst, err := wb.Start(ctx, installWasm(b, filepath.Join(dir, "serve-root"), "bench:capecho-wasm", serveModule))
	if err != nil {
		b.Fatal(err)
	}
	defer serveInst.Close(ctx)

	params := wasmParams()
	rows := map[string]func(){
		"WasmExecute": func() { executeOnce(b, wasmInst, params) },
		"OneShot":     func() { executeOnce(b, oneShot, params) },
		"Pooled":      func() { executeOnce(b, pooled, params) },
		"WasmServe":   func() { executeOnce(b, serveInst, params) },
	}
	for _, r := range rows {
		r() // warm
	}
	benchRows(b, rows, "WasmExecute", "OneShot", "Pooled", "WasmServe")
	paired := func(name, first, second, ratio string) {
		benchPaired(b, name, rows[first], rows[second], first, second, ratio)
	}
	paired("PairedOneShot", "WasmExecute", "OneShot", "x-oneshot")
	paired("PairedPool", "WasmExecute", "Pooled", "x-pool")

	b.Run("ColdVsCached", func(b *testing.B) {
		root := filepath.Join(dir, "cold-root")
		spec := installWasm(b, root, "bench:cold", module)
		startOnce := func(cache string) time.Duration {
			w := newWasmBackend(b, cache)
			defer w.Close(ctx)
			t0 := time.Now()
			inst, err := w.Start(ctx, spec)
			took := time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			inst.Close(ctx)
			return took
		}
		var cold, cached time.Duration
		for b.Loop() {
			cache, err := os.MkdirTemp(dir, "cache-")
			if err != nil {
				b.Fatal(err)
			}
			cold += startOnce(cache)
			cached += startOnce(cache)
			os.RemoveAll(cache)
		}
		b.ReportMetric(float64(cold.Nanoseconds())/float64(b.N), "cold-ns/op")
		b.ReportMetric(float64(cached.Nanoseconds())/float64(b.N), "cached-ns/op")
		b.ReportMetric(float64(cold)/float64(cached), "x-cold")
	})
}
