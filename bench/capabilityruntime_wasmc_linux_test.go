package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// rusageThread is RUSAGE_THREAD: the calling thread's counters.
const rusageThread = 1

// benchMmapMemory is the wasm backend's linear memory on Linux
// (capabilityruntime/wasm, memory_unix.go), rebuilt here because the
// backend's is unexported: the maximum reserved as one anonymous
// MAP_NORESERVE mapping, grown by length; on Free either unmapped, or (the
// backend's choice for a memory used no further than 1 MiB) zeroed over
// what was used and kept for the next instance.
type benchMmapMemory struct {
	alloc  *benchMmapAllocator
	region []byte
	used   uint64
}

func (m *benchMmapMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.region)) {
		return nil
	}
	m.used = max(m.used, size)
	return m.region[:size]
}

func (m *benchMmapMemory) Free() {
	if m.region == nil {
		return
	}
	if a := m.alloc; a.reuse && m.used <= 1<<20 && a.kept == nil {
		clear(m.region[:m.used])
		a.kept = m.region
	} else {
		_ = syscall.Munmap(m.region)
	}
	m.region = nil
}

// benchMmapAllocator maps memories and, if reuse, keeps one freed mapping
// (the phases run one instance at a time).
type benchMmapAllocator struct {
	reuse bool
	kept  []byte
}

func (a *benchMmapAllocator) allocate(capacity, max uint64) experimental.LinearMemory {
	if r := a.kept; r != nil && uint64(len(r)) == max {
		a.kept = nil
		return &benchMmapMemory{alloc: a, region: r}
	}
	region, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		panic(err) // a benchmark helper: the machine has no address space left
	}
	return &benchMmapMemory{alloc: a, region: region}
}

func (a *benchMmapAllocator) close() {
	if a.kept != nil {
		_ = syscall.Munmap(a.kept)
		a.kept = nil
	}
}

// Memory allocators of benchWasmPhases.
const (
	memoryPooled   = iota // the backend's: a mapping, reused zeroed
	memoryUnmapped        // a mapping per instance, unmapped on close
	memoryHeap            // wazero's default, a Go slice
)

// benchWasmPhases is where one warm wasm call's time goes, measured with
// wazero directly on the module the backend runs, configured as the backend
// configures it (same runtime settings, module configuration, memory
// limit), in one iteration beside one whole Execute of inst:
//
//   - encode: the Request marshalled to JSON (as Execute does);
//   - config: the per-call module configuration (stdin, stdout, stderr,
//     sleep) on a configuration built once;
//   - instantiate: InstantiateModule without running _start: the module
//     instance, its globals and table, its memory allocated and its data
//     segments copied in;
//   - start: _start, the guest itself (its C library's start, reading
//     stdin, checking the JSON, writing stdout) and the WASI calls it makes;
//   - close: closing the instance, which frees its memory (zeroes it for
//     reuse, or unmaps it);
//   - parse: the Response decoded from stdout (as Execute does);
//   - execute: one whole inst.Execute, for comparison with the sum;
//   - faults: the minor page faults from instantiate to close.
//
// memory is the allocator: the backend's (memoryPooled: a mapping reserved
// at the maximum, zeroed and reused), the backend's before it reused
// mappings (memoryUnmapped), or wazero's default (memoryHeap: a Go slice
// grown by copying).
// closeOnDone is the backend's runtime setting, WithCloseOnContextDone,
// which is what stops a module at its deadline: wazero then compiles a
// check into every loop and function entry, and starts a goroutine per
// call of an exported function to watch the context; false measures the
// call without that watch (which the backend cannot do without losing the
// deadline).
func benchWasmPhases(b *testing.B, modulePath string, inst capabilityruntime.BackendInstance, params map[string]any, memory int, closeOnDone bool) {
	code, err := os.ReadFile(modulePath)
	if err != nil {
		b.Fatal(err)
	}
	bg := context.Background()
	rt := wazero.NewRuntimeWithConfig(bg, wazero.NewRuntimeConfig().
		WithMemoryLimitPages(4096).WithCloseOnContextDone(closeOnDone))
	defer rt.Close(bg)
	if _, err := wasi_snapshot_preview1.Instantiate(bg, rt); err != nil {
		b.Fatal(err)
	}
	compiled, err := rt.CompileModule(bg, code)
	if err != nil {
		b.Fatal(err)
	}
	ctx := bg
	if memory != memoryHeap {
		a := &benchMmapAllocator{reuse: memory == memoryPooled}
		defer a.close()
		ctx = experimental.WithMemoryAllocator(bg, experimental.MemoryAllocatorFunc(a.allocate))
	}
	base := wazero.NewModuleConfig().WithName("").WithArgs("module.wasm").
		WithEnv(capabilityruntime.EnvProtocol, capabilityruntime.ProtocolJSONV1).
		WithEnv(capabilityruntime.EnvType, "bench:cecho-wasm").
		WithEnv(capabilityruntime.EnvVersion, "1.0.0").
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader).
		WithStartFunctions()

	names := []string{"encode", "config", "instantiate", "start", "close", "parse", "execute"}
	var total [7]time.Duration
	// faults counts the minor page faults of this thread (the loop is
	// locked to it, and wazero runs a module on the calling goroutine) from
	// InstantiateModule to Close: the kernel handing the module zero pages
	// of its linear memory as they are first touched.
	var faults int64
	thread := func() int64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(rusageThread, &ru); err != nil {
			b.Fatal(err)
		}
		return ru.Minflt
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		body, err := json.Marshal(capabilityruntime.Request{Params: params})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		var stdout, stderr bytes.Buffer
		mcfg := base.WithStdin(bytes.NewReader(body)).WithStdout(&stdout).WithStderr(&stderr).
			WithNanosleep(func(int64) {})
		f0 := thread()
		t2 := time.Now()
		mod, err := rt.InstantiateModule(ctx, compiled, mcfg)
		if err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		_, err = mod.ExportedFunction("_start").Call(ctx)
		var exit *sys.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 0) {
			b.Fatalf("_start: %v, stderr %q", err, stderr.String())
		}
		t4 := time.Now()
		_ = mod.Close(bg)
		t5 := time.Now()
		faults += thread() - f0
		var resp capabilityruntime.Response
		if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil || len(resp.Result) != len(params) {
			b.Fatalf("stdout %q: %v", stdout.Bytes(), err)
		}
		t6 := time.Now()
		executeOnce(b, inst, params)
		t7 := time.Now()
		for i, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t5.Sub(t4), t6.Sub(t5), t7.Sub(t6)} {
			total[i] += d
		}
	}
	for i, n := range names {
		b.ReportMetric(float64(total[i].Nanoseconds())/float64(b.N), n+"-ns/op")
	}
	b.ReportMetric(float64(faults)/float64(b.N), "faults/op")
}
