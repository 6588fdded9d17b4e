package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
)

// cEchoSource is the C echo program, bench/jsonecho written in C.
const cEchoSource = "cecho/echo.c"

// buildCEcho builds bench/cecho/echo.c natively with gcc (cc when there is
// no gcc) and for wasm32-wasi with clang and wasi-libc, into dir, and
// returns the three files (native, native linked statically, module). It skips the benchmark, saying what is missing,
// when either compiler or the WASI C library is not installed: these rows
// are not part of CI. The commands are the ones in bench/cecho/build.sh;
// CECHO_CLANG and CECHO_WASI_SYSROOT override the clang binary and the
// sysroot.
func buildCEcho(b *testing.B, dir string) (native, static, module string) {
	b.Helper()
	cc := ""
	for _, name := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(name); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		b.Skip("no gcc or cc on PATH: the C echo rows need a native C compiler")
	}
	clang := os.Getenv("CECHO_CLANG")
	if clang == "" {
		for _, name := range []string{"clang", "clang-14", "clang-15", "clang-16", "clang-17", "clang-18", "clang-19"} {
			if p, err := exec.LookPath(name); err == nil {
				clang = p
				break
			}
		}
	}
	if clang == "" {
		b.Skip("no clang on PATH: the C echo rows need clang with the wasm32 target, wasi-libc and wasm-ld " +
			"(Debian: apt-get install clang-14 lld-14 wasi-libc libclang-rt-14-dev-wasm32)")
	}
	run := func(what string, cmd *exec.Cmd) bool {
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Logf("%s: %s: %v\n%s", what, strings.Join(cmd.Args, " "), err, out)
			return false
		}
		return true
	}
	native = filepath.Join(dir, "cecho")
	if !run("native build", exec.Command(cc, "-O2", "-o", native, cEchoSource)) {
		b.Fatal("the native build of the C echo failed")
	}
	static = filepath.Join(dir, "cecho-static")
	if !run("static native build", exec.Command(cc, "-O2", "-static", "-o", static, cEchoSource)) {
		b.Skip("the C library has no static archive (libc.a) for the static one-shot row")
	}
	module = filepath.Join(dir, "cecho.wasm")
	args := []string{"--target=wasm32-wasi", "-O2", "-Wl,--strip-all", "-o", module, cEchoSource}
	if sysroot := os.Getenv("CECHO_WASI_SYSROOT"); sysroot != "" {
		args = append([]string{"--sysroot=" + sysroot}, args...)
	}
	if !run("wasm32-wasi build", exec.Command(clang, args...)) {
		b.Skip("clang cannot build for wasm32-wasi (see the log): install wasi-libc, lld and the wasm32 " +
			"compiler-rt, or set CECHO_WASI_SYSROOT to a WASI sysroot")
	}
	return native, static, module
}

// BenchmarkCapabilityRuntimeWasmC is BenchmarkCapabilityRuntimeWasm with a
// C guest: bench/cecho/echo.c, built with gcc as the one-shot native
// process and with clang for wasm32-wasi as the module, against the same
// pooled gRPC worker (capecho), one payload of 1 KiB of JSON:
//
//   - WasmExecute: one call on a started wasm instance of cecho (a fresh
//     module instance per call: wasi-libc's start, read stdin, answer,
//     exit);
//   - OneShot: the same call under the JSON protocol on the process
//     backend (a native cecho process per call, dynamically linked as gcc
//     builds it by default);
//   - OneShotStatic: the same, cecho linked statically (gcc -static): no
//     dynamic loader, the fastest native process of this program;
//   - Pooled: the same call on a warm pooled gRPC worker (capecho);
//   - PairedOneShot, PairedStatic, PairedPool: WasmExecute and the other
//     row interleaved in every iteration, alternating which goes first,
//     with the ratios x-oneshot, x-static and x-pool (below 1: the wasm
//     call is faster);
//   - Phases, PhasesUnmapped, PhasesHeapMemory, PhasesNoContextWatch:
//     where a warm call's time goes (benchWasmPhases), with the backend's
//     settings, with a mapping unmapped after every call (the backend
//     before it reused them), with wazero's default memory allocator, and
//     without wazero's per-call context watch.
//
// It skips when clang cannot build for wasm32-wasi (see buildCEcho).
func BenchmarkCapabilityRuntimeWasmC(b *testing.B) {
	dir := b.TempDir()
	nativeEcho, staticEcho, module := buildCEcho(b, dir)
	pool := buildTool(b, dir, "capecho", "./capecho", false)
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
	pooled, err := procs.Start(ctx, capabilityruntime.BackendSpec{
		Type: "bench:capecho", Version: "1.0.0", Protocol: capabilityruntime.ProtocolV1, Entrypoint: pool, RootDir: dir,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer pooled.Close(ctx)
	oneShot, err := procs.Start(ctx, capabilityruntime.BackendSpec{
		Type: "bench:cecho", Version: "1.0.0", Protocol: capabilityruntime.ProtocolJSONV1, Entrypoint: nativeEcho, RootDir: dir,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer oneShot.Close(ctx)
	oneShotStatic, err := procs.Start(ctx, capabilityruntime.BackendSpec{
		Type: "bench:cecho-static", Version: "1.0.0", Protocol: capabilityruntime.ProtocolJSONV1, Entrypoint: staticEcho, RootDir: dir,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer oneShotStatic.Close(ctx)

	wb := newWasmBackend(b, filepath.Join(dir, "cache"))
	defer wb.Close(ctx)
	wasmInst, err := wb.Start(ctx, installWasm(b, filepath.Join(dir, "root"), "bench:cecho-wasm", module))
	if err != nil {
		b.Fatal(err)
	}
	defer wasmInst.Close(ctx)

	params := wasmParams()
	rows := map[string]func(){
		"WasmExecute":   func() { executeOnce(b, wasmInst, params) },
		"OneShot":       func() { executeOnce(b, oneShot, params) },
		"OneShotStatic": func() { executeOnce(b, oneShotStatic, params) },
		"Pooled":        func() { executeOnce(b, pooled, params) },
	}
	for _, r := range rows {
		r() // warm
	}
	benchRows(b, rows, "WasmExecute", "OneShot", "OneShotStatic", "Pooled")
	paired := func(name, first, second, ratio string) {
		benchPaired(b, name, rows[first], rows[second], first, second, ratio)
	}
	paired("PairedOneShot", "WasmExecute", "OneShot", "x-oneshot")
	paired("PairedStatic", "WasmExecute", "OneShotStatic", "x-static")
	paired("PairedPool", "WasmExecute", "Pooled", "x-pool")

	// Where a warm call's time goes: benchWasmPhases, as the backend runs
	// a module, then changing one setting at a time.
	b.Run("Phases", func(b *testing.B) { benchWasmPhases(b, module, wasmInst, params, memoryPooled, true) })
	b.Run("PhasesUnmapped", func(b *testing.B) { benchWasmPhases(b, module, wasmInst, params, memoryUnmapped, true) })
	b.Run("PhasesHeapMemory", func(b *testing.B) { benchWasmPhases(b, module, wasmInst, params, memoryHeap, true) })
	b.Run("PhasesNoContextWatch", func(b *testing.B) { benchWasmPhases(b, module, wasmInst, params, memoryPooled, false) })
}
