//go:build linux

package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
)

// fixtureBin is the testruntime program, built once by TestMain.
var fixtureBin string

// behaviours are the names testruntime answers to; TestMain fails the run
// when one is never used, so that no fixture rots unexercised.
var (
	behavioursMu sync.Mutex
	links        atomic.Int64 // numbers the links, so that every test's processes have their own name
)

var behaviours = map[string]bool{
	"echo": false, "stubborn": false, "crashstart": false, "neverready": false, "wrongproto": false, "unready": false,
	"garbage": false, "twodocs": false, "flood": false, "exit3": false, "spawner": false,
}

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "testruntime-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if fixtureBin, err = testbin.Build(dir, "testruntime", "github.com/zeoruntime/runtimeipc/capabilityruntime/process/internal/testruntime"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 && !testing.Short() && flagRunAll() {
		for name, used := range behaviours {
			if !used {
				fmt.Fprintf(os.Stderr, "testruntime behaviour %q is never used\n", name)
				code = 1
			}
		}
	}
	if code == 0 {
		if leaked := leakedGoroutines(); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	return code
}

// flagRunAll reports whether the whole suite ran (no -run filter).
func flagRunAll() bool {
	for _, a := range os.Args[1:] {
		if strings.HasPrefix(a, "-test.run") {
			return false
		}
	}
	return true
}

// leakedGoroutines waits up to five seconds for every goroutine of this
// package, of the contract's packages or of gRPC to end, and returns the
// stacks of those left.
func leakedGoroutines() string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		buf := make([]byte, 4<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if (strings.Contains(g, "capabilityruntime/") || strings.Contains(g, "google.golang.org/grpc")) &&
				!strings.Contains(g, "leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runtimeFile links the fixture into a fresh root directory under the
// behaviour's name and a number, so that its processes are told apart from every other
// test's by their executable path. It returns the root and the entrypoint.
func runtimeFile(t *testing.T, behaviour string) (root, entry string) {
	t.Helper()
	behavioursMu.Lock()
	_, ok := behaviours[behaviour]
	behaviours[behaviour] = true
	behavioursMu.Unlock()
	if !ok {
		t.Fatalf("unknown behaviour %q", behaviour)
	}
	root = t.TempDir()
	// testruntime reads its behaviour up to the first '.'; the number makes
	// the executable path, and the command name /proc shows, unique.
	entry = filepath.Join(root, behaviour+"."+strconv.FormatInt(links.Add(1), 10))
	if err := os.Link(fixtureBin, entry); err != nil {
		b, rerr := os.ReadFile(fixtureBin)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err := os.WriteFile(entry, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, entry
}

// testConfig is a Config with a private, short temp dir (socket paths must
// stay short) and test-sized bounds; it records the temp dir for leftovers
// checks.
func testConfig(t *testing.T) process.Config {
	t.Helper()
	dir, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return process.Config{TempDir: dir, ShutdownGrace: 2 * time.Second, StartTimeout: 20 * time.Second}
}

func newBackend(t *testing.T, cfg process.Config) *process.Backend {
	t.Helper()
	b, err := process.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		b.Close(ctx)
	})
	return b
}

func spec(root, entry, protocol string, maxWorkers int) capabilityruntime.BackendSpec {
	return capabilityruntime.BackendSpec{
		Type: "acme:" + filepath.Base(entry), Version: "1.0.0", Protocol: protocol,
		Entrypoint: entry, RootDir: root, MaxWorkers: maxWorkers,
	}
}

func start(t *testing.T, b *process.Backend, s capabilityruntime.BackendSpec) capabilityruntime.BackendInstance {
	t.Helper()
	inst, err := b.Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// processes lists, from /proc, the processes (zombies included) whose
// executable is exe.
func processes(exe string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			pids = append(pids, pid)
			continue
		}
		// A zombie has no exe link left; it still counts, by its parent and
		// its command name.
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open || len(s) < close+4 {
			continue
		}
		comm, fields := s[open+1:close], strings.Fields(s[close+2:])
		if fields[0] == "Z" && len(fields) > 1 && fields[1] == strconv.Itoa(os.Getpid()) && strings.HasPrefix(filepath.Base(exe), comm) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] != 'Z'
}

// waitFor polls cond until it holds, failing the test if it has not held by
// the test's deadline (or a minute).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	if d, ok := t.Deadline(); ok && d.Before(deadline) {
		deadline = d.Add(-5 * time.Second)
	}
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requireNoLeftovers checks that nothing of a closed instance remains: no
// process of exe, no worker directory (socket, ready file) under tempDir.
func requireNoLeftovers(t *testing.T, exe, tempDir string) {
	t.Helper()
	if pids := processes(exe); len(pids) > 0 {
		t.Errorf("processes of %s still exist after Close: %v", filepath.Base(exe), pids)
	}
	ents, err := os.ReadDir(tempDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("left behind in the temp dir: %s", e.Name())
	}
}

func pidOf(t *testing.T, resp *capabilityruntime.Response) int {
	t.Helper()
	f, ok := resp.Result["pid"].(float64)
	if !ok {
		t.Fatalf("no pid in %v", resp.Result)
	}
	return int(f)
}

func closeInstance(t *testing.T, inst capabilityruntime.BackendInstance) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return inst.Close(ctx)
}

// fixture is one test's backend, runtime file and instance.
type fixture struct {
	cfg         process.Config
	b           *process.Backend
	root, entry string
	inst        capabilityruntime.BackendInstance
}

// newFixture starts an instance of behaviour on a backend of its own, with
// testConfig tuned by tune (if not nil).
func newFixture(t *testing.T, behaviour, protocol string, maxWorkers int, tune func(*process.Config)) *fixture {
	t.Helper()
	f := &fixture{cfg: testConfig(t)}
	if tune != nil {
		tune(&f.cfg)
	}
	f.b = newBackend(t, f.cfg)
	f.root, f.entry = runtimeFile(t, behaviour)
	f.inst = start(t, f.b, spec(f.root, f.entry, protocol, maxWorkers))
	return f
}

// call executes params and fails the test on any error.
func (f *fixture) call(t *testing.T, params map[string]any) *capabilityruntime.Response {
	t.Helper()
	resp, err := f.inst.Execute(t.Context(), &capabilityruntime.Request{Params: params})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// close closes the instance and checks that nothing of it remains.
func (f *fixture) close(t *testing.T) {
	t.Helper()
	if err := closeInstance(t, f.inst); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, f.entry, f.cfg.TempDir)
}
