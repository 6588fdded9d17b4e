package wasm_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero/experimental/sock"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
)

// Two modules written by hand, byte by byte: one whose _start executes
// `unreachable`, one that imports a function from a module no one provides.
var (
	trapModule = []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version 1
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
		0x03, 0x02, 0x01, 0x00, // functions: one of type 0
		0x07, 0x0a, 0x01, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00, // export _start
		0x0a, 0x05, 0x01, 0x03, 0x00, 0x00, 0x0b, // code: unreachable, end
	}
	foreignImportModule = []byte{
		0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00,
		0x02, 0x09, 0x01, 0x03, 'e', 'n', 'v', 0x01, 'f', 0x00, 0x00, // import env.f
	}
)

func TestEcho(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	params := map[string]any{
		"do": "echo", "n": 15, "f": 2.5, "ok": true, "none": nil,
		"list": []any{"a", 1, []string{"x"}}, "obj": map[string]int{"size": 50},
	}
	resp, err := call(t, inst, params)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"do": "echo", "n": 15.0, "f": 2.5, "ok": true, "none": nil,
		"list": []any{"a", 1.0, []any{"x"}}, "obj": map[string]any{"size": 50.0},
	}
	if diff := cmp.Diff(want, resp.Result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if err := inst.Health(t.Context()); err != nil {
		t.Errorf("Health: %v", err)
	}
}

func TestNoStateBetweenCalls(t *testing.T) {
	// Every call is a fresh instance: a module that held 16 MiB on one call
	// starts the next with its initial memory, and nothing of the first
	// call's request is left to echo.
	_, inst := guestInstance(t, wasm.Config{})
	for i := range 3 {
		resp, err := call(t, inst, map[string]any{"do": "hog", "mib": 16})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if resp.Result["held"] != 16.0 {
			t.Fatalf("call %d: %v", i, resp.Result)
		}
	}
	resp, err := call(t, inst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Result) != 0 {
		t.Errorf("an empty request echoed %v", resp.Result)
	}
}

func TestEnvironment(t *testing.T) {
	t.Setenv("WASM_TEST_SECRET", "leaked")
	_, inst := guestInstance(t, wasm.Config{})
	resp, err := call(t, inst, map[string]any{"do": "env"})
	if err != nil {
		t.Fatal(err)
	}
	env := resp.Result["env"].([]any)
	slices.SortFunc(env, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
	want := []any{
		capabilityruntime.EnvProtocol + "=" + capabilityruntime.ProtocolJSONV1,
		capabilityruntime.EnvType + "=acme:guest",
		capabilityruntime.EnvVersion + "=1.0.0",
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"module.wasm"}, resp.Result["args"]); diff != "" {
		t.Errorf("arguments (-want +got):\n%s", diff)
	}
	if root := resp.Result["root"].([]any); len(root) != 1 || !strings.HasPrefix(root[0].(string), "error: ") {
		t.Errorf("listing / gave %v, want an error", root)
	}
}

func TestErrorResponse(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	resp, err := call(t, inst, map[string]any{"do": "fail"})
	var re *capabilityruntime.RuntimeError
	if !errors.As(err, &re) || !errors.Is(err, capabilityruntime.ErrRuntimeFailure) {
		t.Fatalf("error %v (%T), want a *capabilityruntime.RuntimeError", err, err)
	}
	if re.Message != "asked to fail" || re.Type != "acme:guest" || re.Version != "1.0.0" {
		t.Errorf("runtime error %+v", re)
	}
	if resp == nil || resp.Result["partial"] != true || resp.Error != "asked to fail" {
		t.Errorf("response %+v, want the partial result and the error", resp)
	}
}

func TestNonZeroExit(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	_, err := call(t, inst, map[string]any{"do": "exit"})
	ce := callError(t, err, wasm.ErrExitStatus)
	if ce.ExitCode != 3 || !strings.Contains(ce.Stderr, "exiting with 3") {
		t.Errorf("exit %d, stderr %q", ce.ExitCode, ce.Stderr)
	}
}

func TestStderrTail(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{StderrTailBytes: 1000})
	_, err := call(t, inst, map[string]any{"do": "noise", "kib": 64}) // 1024 lines of 64 bytes
	ce := callError(t, err, wasm.ErrExitStatus)
	if len(ce.Stderr) != 1000 {
		t.Errorf("kept %d bytes of stderr, want the last 1000", len(ce.Stderr))
	}
	if !strings.HasSuffix(ce.Stderr, "noise line 00001023 "+strings.Repeat("n", 42)+"\n") {
		t.Errorf("stderr tail ends %q", ce.Stderr[max(len(ce.Stderr)-80, 0):])
	}
	if len(ce.StderrHead) != 1024 || !strings.HasPrefix(ce.StderrHead, "noise line 00000000 ") {
		t.Errorf("stderr head (%d bytes) begins %q", len(ce.StderrHead), ce.StderrHead[:min(len(ce.StderrHead), 80)])
	}

	// A short stderr is all in the tail, and there is no head.
	_, err = call(t, inst, map[string]any{"do": "exit"})
	if ce := callError(t, err, wasm.ErrExitStatus); ce.Stderr != "exiting with 3\n" || ce.StderrHead != "" {
		t.Errorf("short stderr: tail %q, head %q", ce.Stderr, ce.StderrHead)
	}
}

func TestInfiniteLoop(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"do": "loop"}})
	callError(t, err, context.DeadlineExceeded)

	why := errors.New("the operator gave up")
	ctx2, cancel2 := context.WithCancelCause(t.Context())
	go func() { time.Sleep(100 * time.Millisecond); cancel2(why) }()
	_, err = inst.Execute(ctx2, &capabilityruntime.Request{Params: map[string]any{"do": "loop"}})
	callError(t, err, why)

	// The instance is unharmed: the next call runs.
	if _, err := call(t, inst, map[string]any{"do": "echo"}); err != nil {
		t.Fatalf("after the stopped loops: %v", err)
	}
}

func TestSleepStoppedAtDeadline(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"do": "sleep", "ms": 1e9}})
	callError(t, err, context.DeadlineExceeded)
}

func TestDefaultExecuteTimeout(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{ExecuteTimeout: 300 * time.Millisecond})
	_, err := inst.Execute(context.Background(), &capabilityruntime.Request{Params: map[string]any{"do": "loop"}})
	callError(t, err, context.DeadlineExceeded)
}

func TestMemoryHog(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{MemoryLimitPages: 1024}) // 64 MiB
	if _, err := call(t, inst, map[string]any{"do": "hog", "mib": 16}); err != nil {
		t.Fatalf("16 MiB under a 64 MiB limit: %v", err)
	}
	_, err := call(t, inst, map[string]any{"do": "hog", "mib": 512})
	ce := callError(t, err, wasm.ErrExitStatus)
	if ce.ExitCode != 2 || !strings.Contains(ce.StderrHead, "out of memory") {
		t.Errorf("exit %d, stderr begins %q; want Go's out-of-memory exit", ce.ExitCode, ce.StderrHead)
	}
}

func TestStdoutFlood(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{MaxResponseBytes: 64 << 10})
	_, err := call(t, inst, map[string]any{"do": "flood"})
	callError(t, err, wasm.ErrOutputTooLarge)
}

func TestBadOutput(t *testing.T) {
	_, inst := guestInstance(t, wasm.Config{})
	_, err := call(t, inst, map[string]any{"do": "garbage"})
	ce := callError(t, err, wasm.ErrBadOutput)
	if ce.Stdout != "this is not json\n" {
		t.Errorf("stdout prefix %q", ce.Stdout)
	}
}

func TestReadFile(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	secret := filepath.Join(spec.RootDir, "secret.txt")
	if err := os.WriteFile(secret, []byte("the secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := start(t, b, spec)
	for _, path := range []string{"secret.txt", secret, "/etc/hostname", "/proc/self/environ", "runtime.json"} {
		resp, err := call(t, inst, map[string]any{"do": "read", "path": path})
		var re *capabilityruntime.RuntimeError
		if !errors.As(err, &re) || !strings.HasPrefix(re.Message, "read: ") {
			t.Errorf("reading %s: %v, %v; want the module's own read error", path, resp, err)
			continue
		}
		if strings.Contains(re.Message, "the secret") {
			t.Errorf("reading %s: %s", path, re.Message)
		}
	}
}

func TestNoNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	})
	defer wg.Wait()
	defer l.Close()

	_, inst := guestInstance(t, wasm.Config{})
	_, err = call(t, inst, map[string]any{"do": "dial", "addr": l.Addr().String()})
	var re *capabilityruntime.RuntimeError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Message, "dial: ") {
		t.Errorf("dialing %s: %v; want the module's own dial error", l.Addr(), err)
	}

	// A context that carries wazero's experimental socket configuration
	// would hand the module a listener on descriptor 3; the backend
	// withholds context values, so it gets none.
	ctx := sock.WithConfig(t.Context(), sock.NewConfig().WithTCPListener("127.0.0.1", 0))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"do": "listen"}})
	if !errors.As(err, &re) || !strings.HasPrefix(re.Message, "listen: ") {
		t.Errorf("listening with a socket configuration in the context: %v; want the module's own error", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the listener accepted %d connections", n)
	}
}

func TestTrap(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	inst := start(t, b, install(t, "acme:trap", trapModule, nil))
	_, err := call(t, inst, nil)
	ce := callError(t, err, wasm.ErrTrap)
	if !strings.Contains(ce.Detail, "unreachable") {
		t.Errorf("trap detail %q", ce.Detail)
	}
}

func TestCompileRefusals(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	for name, code := range map[string][]byte{
		"acme:foreign":  foreignImportModule,
		"acme:not-wasm": []byte("#!/bin/sh\necho hello\n"),
	} {
		_, err := b.Start(t.Context(), install(t, name, code, nil))
		if !errors.Is(err, wasm.ErrCompile) {
			t.Errorf("%s: Start gave %v, want ErrCompile", name, err)
		}
	}
}

func TestUnsupportedValue(t *testing.T) {
	b, inst := guestInstance(t, wasm.Config{})
	_, err := call(t, inst, map[string]any{"big": int64(1) << 60})
	if !errors.Is(err, wasm.ErrUnsupportedValue) {
		t.Errorf("error %v, want ErrUnsupportedValue", err)
	}
	if s := b.Stats(); s.Calls != 0 {
		t.Errorf("%d module instances ran for a refused request", s.Calls)
	}
}

func TestMaxWorkersBound(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	spec.MaxWorkers = 4
	inst := start(t, b, spec)
	// A second instance of the same type@version shares the bound.
	other := start(t, b, spec)
	var wg sync.WaitGroup
	errs := make([]error, 100)
	for i := range errs {
		in := inst
		if i%2 == 1 {
			in = other
		}
		wg.Go(func() {
			_, errs[i] = call(t, in, map[string]any{"do": "sleep", "ms": 10})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	s := b.Stats()
	if s.PeakRunning > 4 || s.PeakRunning < 1 || s.Running != 0 || s.Calls != 100 {
		t.Errorf("stats %+v: want at most 4 running at once, 100 calls, none running now", s)
	}
	t.Logf("stats %+v", s)
}

func TestWaitingForASlotEndsWithTheContext(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	spec.MaxWorkers = 1
	inst := start(t, b, spec)
	busy := make(chan error, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		_, err := inst.Execute(ctx, &capabilityruntime.Request{Params: map[string]any{"do": "loop"}})
		busy <- err
	}()
	for b.Stats().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	waitCtx, waitCancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer waitCancel()
	_, err := inst.Execute(waitCtx, &capabilityruntime.Request{})
	callError(t, err, context.DeadlineExceeded)
	if s := b.Stats(); s.Calls != 1 {
		t.Errorf("%d instances started; the waiting call must not have run", s.Calls)
	}
	cancel()
	callError(t, <-busy, context.Canceled)
}

func TestTamperedModule(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	module := filepath.Join(spec.RootDir, "module.wasm")
	tampered := slices.Clone(guest)
	tampered[len(tampered)/2] ^= 0x01
	if err := os.WriteFile(module, tampered, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := b.Start(t.Context(), spec)
	var ce *wasm.ChecksumError
	if !errors.As(err, &ce) || !errors.Is(err, wasm.ErrChecksum) {
		t.Fatalf("Start gave %v, want a *wasm.ChecksumError", err)
	}
	if ce.Module != module || ce.Want == ce.Got || len(ce.Got) != 64 {
		t.Errorf("checksum error %+v", ce)
	}
	if s := b.Stats(); s.Compiles != 0 {
		t.Errorf("%d modules compiled; a tampered module must be refused before compiling", s.Compiles)
	}
}

func TestCompiledOncePerModule(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	a1 := start(t, b, install(t, "acme:one", guest, nil))
	a2 := start(t, b, install(t, "acme:two", guest, nil)) // same bytes, another runtime
	if s := b.Stats(); s.Compiles != 1 {
		t.Errorf("%d compiles for one module", s.Compiles)
	}
	for _, inst := range []capabilityruntime.BackendInstance{a1, a2} {
		if _, err := call(t, inst, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Closing one runtime keeps the code the other uses.
	a1.Close(t.Context())
	if _, err := call(t, a2, nil); err != nil {
		t.Fatalf("after closing the other runtime: %v", err)
	}
	// Once no runtime uses it, the code is freed, and the next Start
	// compiles (here: loads from the cache directory) again.
	a2.Close(t.Context())
	start(t, b, install(t, "acme:three", guest, nil))
	if s := b.Stats(); s.Compiles != 2 {
		t.Errorf("%d compiles, want 2 after the module was freed", s.Compiles)
	}
}

func TestCompilationCacheDir(t *testing.T) {
	// The small hand-written module: what is shown is where compiled code
	// goes, and compiling the guest afresh would cost seconds (a minute
	// under the race detector).
	dir := t.TempDir()
	spec := install(t, "acme:trap", trapModule, nil)
	list := func() []string {
		var files []string
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return nil
		})
		return files
	}
	b1 := newBackend(t, wasm.Config{CompilationCacheDir: dir})
	start(t, b1, spec)
	first := list()
	if len(first) == 0 {
		t.Fatal("compiling wrote nothing into the compilation cache directory")
	}
	b1.Close(t.Context())

	// A restarted controller: a new Backend on the same directory loads
	// the compiled code and adds nothing to the directory.
	b2 := newBackend(t, wasm.Config{CompilationCacheDir: dir})
	inst := start(t, b2, spec)
	if _, err := call(t, inst, nil); !errors.Is(err, wasm.ErrTrap) {
		t.Fatalf("the module loaded from the cache: %v, want its trap", err)
	}
	if diff := cmp.Diff(first, list()); diff != "" {
		t.Errorf("the cache directory changed on a cached start (-before +after):\n%s", diff)
	}
}

func TestSpecConflict(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	start(t, b, spec)
	spec.MaxWorkers = 3
	if _, err := b.Start(t.Context(), spec); !errors.Is(err, wasm.ErrSpecConflict) {
		t.Errorf("Start with another MaxWorkers: %v, want ErrSpecConflict", err)
	}
}

func TestInvalidSpecs(t *testing.T) {
	b := newBackend(t, wasm.Config{MaxModuleBytes: int64(len(guest)) + 10})
	good := func(t *testing.T) capabilityruntime.BackendSpec { return install(t, "acme:guest", guest, nil) }
	cases := map[string]func(t *testing.T) capabilityruntime.BackendSpec{
		"no type": func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.Type = ""; return s },
		"gRPC protocol": func(t *testing.T) capabilityruntime.BackendSpec {
			s := good(t)
			s.Protocol = capabilityruntime.ProtocolV1
			return s
		},
		"negative":      func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.MaxWorkers = -1; return s },
		"no root":       func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.RootDir = ""; return s },
		"relative root": func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.RootDir = "store/x"; return s },
		"no entrypoint": func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.Entrypoint = ""; return s },
		"climbing out": func(t *testing.T) capabilityruntime.BackendSpec {
			s := good(t)
			s.Entrypoint = "../module.wasm"
			return s
		},
		"another version": func(t *testing.T) capabilityruntime.BackendSpec { s := good(t); s.Version = "2.0.0"; return s },
		"no manifest": func(t *testing.T) capabilityruntime.BackendSpec {
			s := good(t)
			os.Remove(filepath.Join(s.RootDir, capabilityruntime.ManifestFile))
			return s
		},
		"invalid manifest": func(t *testing.T) capabilityruntime.BackendSpec {
			return install(t, "acme:guest", guest, func(m *capabilityruntime.Manifest) { m.Capabilities = nil })
		},
		"process kind": func(t *testing.T) capabilityruntime.BackendSpec {
			return install(t, "acme:guest", guest, func(m *capabilityruntime.Manifest) {
				m.Runtime.Type, m.Runtime.Protocol = capabilityruntime.RuntimeKindProcess, ""
			})
		},
		"no wasm platform": func(t *testing.T) capabilityruntime.BackendSpec {
			return install(t, "acme:guest", guest, func(m *capabilityruntime.Manifest) {
				m.Platforms = map[string]capabilityruntime.Platform{"linux-amd64": m.Platforms[capabilityruntime.PlatformWasm]}
			})
		},
		"another artifact": func(t *testing.T) capabilityruntime.BackendSpec {
			return install(t, "acme:guest", guest, func(m *capabilityruntime.Manifest) {
				p := m.Platforms[capabilityruntime.PlatformWasm]
				p.Artifact = "other.wasm"
				m.Platforms[capabilityruntime.PlatformWasm] = p
			})
		},
		"no checksum": func(t *testing.T) capabilityruntime.BackendSpec {
			return install(t, "acme:guest", guest, func(m *capabilityruntime.Manifest) {
				m.Platforms[capabilityruntime.PlatformWasm] = capabilityruntime.Platform{Artifact: "module.wasm"}
			})
		},
		"module too large": func(t *testing.T) capabilityruntime.BackendSpec {
			s := good(t)
			f, _ := os.OpenFile(filepath.Join(s.RootDir, "module.wasm"), os.O_WRONLY|os.O_APPEND, 0)
			f.Write(make([]byte, 11))
			f.Close()
			return s
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := b.Start(t.Context(), mk(t)); !errors.Is(err, wasm.ErrInvalidSpec) {
				t.Errorf("Start gave %v, want ErrInvalidSpec", err)
			}
		})
	}
	if s := b.Stats(); s.Compiles != 0 {
		t.Errorf("%d modules compiled for refused specs", s.Compiles)
	}
}

func TestInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]wasm.Config{
		"workers":  {DefaultMaxWorkers: -1},
		"pages":    {MemoryLimitPages: wasm.MaxMemoryLimitPages + 1},
		"timeout":  {ExecuteTimeout: -time.Second},
		"response": {MaxResponseBytes: -1},
		"stderr":   {StderrTailBytes: -1},
		"module":   {MaxModuleBytes: -1},
		"cache":    {CompilationCacheDir: "relative/cache"},
	} {
		if _, err := wasm.New(cfg); !errors.Is(err, wasm.ErrInvalidConfig) {
			t.Errorf("%s: New gave %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestCloseInstance(t *testing.T) {
	b := newBackend(t, wasm.Config{})
	spec := install(t, "acme:guest", guest, nil)
	spec.MaxWorkers = 2
	inst := start(t, b, spec)
	other := start(t, b, spec)
	running := make(chan error, 1)
	go func() {
		_, err := call(t, inst, map[string]any{"do": "loop"})
		running <- err
	}()
	for b.Stats().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := inst.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	callError(t, <-running, wasm.ErrClosed)
	if _, err := call(t, inst, nil); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Execute after Close: %v", err)
	}
	if err := inst.Health(t.Context()); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Health after Close: %v", err)
	}
	if err := inst.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The other instance of the same runtime is not affected.
	if _, err := call(t, other, nil); err != nil {
		t.Errorf("the other instance after Close: %v", err)
	}
}

func TestCloseBackendLeavesOthersAlone(t *testing.T) {
	b1, inst1 := guestInstance(t, wasm.Config{})
	_, inst2 := guestInstance(t, wasm.Config{})
	running := make(chan error, 1)
	go func() {
		_, err := call(t, inst1, map[string]any{"do": "loop"})
		running <- err
	}()
	for b1.Stats().Running == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := b1.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	callError(t, <-running, wasm.ErrClosed)
	if _, err := call(t, inst1, nil); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Execute on a closed backend: %v", err)
	}
	if err := inst1.Health(t.Context()); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Health on a closed backend: %v", err)
	}
	if _, err := b1.Start(t.Context(), install(t, "acme:late", guest, nil)); !errors.Is(err, wasm.ErrClosed) {
		t.Errorf("Start on a closed backend: %v", err)
	}
	if err := b1.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	resp, err := call(t, inst2, map[string]any{"do": "echo", "still": "here"})
	if err != nil || resp.Result["still"] != "here" {
		t.Errorf("the other backend after Close: %v, %v", resp, err)
	}
}

// TestGoModuleDataMerged checks the rewrite Start applies to the guest that
// every other test runs: Go's linker emits one data segment per run of
// non-zero bytes, and they become one, with the same memory image.
func TestGoModuleDataMerged(t *testing.T) {
	before, after := wasm.CheckMergedData(t, guest)
	if before < 100 || after != 1 {
		t.Errorf("data segments: %d before, %d after; want Go's many merged into one", before, after)
	}
	t.Logf("data segments: %d before, %d after", before, after)
}
