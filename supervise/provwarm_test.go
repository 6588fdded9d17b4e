//go:build linux

package supervise_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// pwLauncher installs the Python stand-in host (and provider modules,
// by name) and returns a launcher running it as the upstream host runs.
func pwLauncher(t *testing.T, providers map[string]string) *launch.Launcher {
	t.Helper()
	modules, newLauncher := pyLaunchers(t, testpyhost.HostModule)
	for name, src := range providers {
		if err := os.WriteFile(filepath.Join(modules, name+".py"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return newLauncher()
}

// standInWarm is the provider-warm setting that recognises the stand-in
// host.
func standInWarm() *supervise.ProviderWarm {
	files := map[string]canon.Digest{}
	for k, v := range testpyhost.HostFiles() {
		files[k] = canon.Digest(v)
	}
	return &supervise.ProviderWarm{Hosts: []launch.HostVersion{{Name: "stand-in", Files: files}}}
}

// awaitServers waits until s has n provider-warm servers ready.
func awaitServers(t *testing.T, s *supervise.Supervisor, n int) []supervise.ProviderWarmServer {
	t.Helper()
	for range 3000 {
		if got := s.ProviderWarmServers(); len(got) == n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%d provider-warm servers, want %d", len(s.ProviderWarmServers()), n)
	return nil
}

// TestProviderWarmTenants runs operations of two tenants of one provider
// binding: each tenant gets a provider-warm server of its own, and each
// server forked only its own tenant's hosts.
func TestProviderWarmTenants(t *testing.T) {
	ln := pwLauncher(t, nil)
	cfg := config(t, memory.New(), ln)
	cfg.ProviderWarm = standInWarm()
	s := newSupervisor(t, cfg)
	tenantB := ledger.Scope{OrganizationID: "org-b", ProjectID: scope.ProjectID}
	run := func(op string, sc ledger.Scope) *supervise.Outcome {
		c := call(op, "example.echo@1.0.0", map[string]any{"text": op}, 0)
		c.Scope = sc
		o, err := s.Invoke(testCtx(t), c)
		wantState(t, o, err, launch.StateSucceeded, nil)
		return o
	}
	// The first call of each tenant starts its server, and runs without it.
	run("op-a-0", scope)
	run("op-b-0", tenantB)
	awaitServers(t, s, 2)
	const n = 3
	for i := range n {
		for _, sc := range []ledger.Scope{scope, tenantB} {
			op := "op-" + sc.OrganizationID + "-" + string(rune('1'+i))
			if o := run(op, sc); o.Launch == nil || !o.Launch.Process.Warm {
				t.Fatalf("%s: not launched provider-warm", op)
			}
		}
	}
	servers := s.ProviderWarmServers()
	if len(servers) != 2 {
		t.Fatalf("servers %+v", servers)
	}
	a, b := servers[0], servers[1]
	if a.OrganizationID != "org-a" || b.OrganizationID != "org-b" || a.Stats.ServerPID == b.Stats.ServerPID ||
		a.Binding != b.Binding {
		t.Fatalf("servers %+v", servers)
	}
	for _, sv := range servers {
		if sv.Stats.Forks != n || sv.Stats.Cold != 0 {
			t.Fatalf("the server of %s/%s forked %d hosts (%d cold), want only its tenant's %d", sv.OrganizationID, sv.ProjectID, sv.Stats.Forks, sv.Stats.Cold, n)
		}
	}
}

// slowProvider is a provider whose echo takes a while when asked to:
// "slow <seconds>".
const slowProvider = `import time


def echo(args, ctx):
    if args["text"].startswith("slow "):
        time.sleep(float(args["text"][5:]))
    return {"text": args["text"]}


def factory():
    return {"echo": echo}
`

// TestProviderWarmNewGeneration: a new generation admitted while an
// operation of the old one runs on its provider-warm server moves new
// operations to a server of its own, while the pinned operation finishes
// on the old one; idle servers are then closed, and nothing is left.
func TestProviderWarmNewGeneration(t *testing.T) {
	// The timing a quick machine needs first; when a loaded one paused
	// long enough for a server to be closed early, again with room.
	if newGeneration(t, time.Second, 2500*time.Millisecond) {
		return
	}
	t.Log("a server was closed before the test was done with it; again with more time")
	if !newGeneration(t, 2*time.Second, 6*time.Second) {
		t.Fatal("a server was closed before the test was done with it, with 6 s of idleness allowed")
	}
}

// newGeneration runs TestProviderWarmNewGeneration with an operation
// pinned to the first generation that takes slow, and servers closed
// after idle; it reports false when a server was closed while the test
// still needed it, which only a machine too loaded for idle does.
func newGeneration(t *testing.T, slow, idle time.Duration) bool {
	ln := pwLauncher(t, map[string]string{"zeotestpwslow": slowProvider})
	reg := newRegistry()
	gen1 := variant(t, "zeotestpwslow:factory", 1, "")
	reg.admit(gen1)
	cfg := config(t, memory.New(), ln)
	cfg.Provider, cfg.Providers, cfg.ProviderWarm = manifest.ProviderBinding{}, reg, standInWarm()
	cfg.StarterIdle = idle
	s := newSupervisor(t, cfg)
	defer s.Close(testCtx(t))
	run := func(op, text string) *supervise.Outcome {
		c := call(op, "example.echo@1.0.0", map[string]any{"text": text}, 0)
		c.Provider = keyOf(gen1)
		o, err := s.Invoke(testCtx(t), c)
		wantState(t, o, err, launch.StateSucceeded, nil)
		return o
	}
	run("op-first", "hello")
	old := awaitServers(t, s, 1)[0]

	var wg sync.WaitGroup
	var slowOut *supervise.Outcome
	wg.Go(func() { slowOut = run("op-slow", fmt.Sprintf("slow %g", slow.Seconds())) })
	for range 1000 {
		if sv := s.ProviderWarmServers(); len(sv) == 1 && sv[0].Stats.Forks == 1 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	reg.admit(variant(t, "zeotestpwslow:factory", 2, "second generation"))
	run("op-new-0", "hello") // starts the new generation's server
	awaitServers(t, s, 2)
	if o := run("op-new-1", "hello"); !o.Launch.Process.Warm {
		t.Fatal("a new operation was not launched provider-warm")
	}
	wg.Wait()
	servers := s.ProviderWarmServers()
	if len(servers) != 2 || servers[0].Stats.ServerPID != old.Stats.ServerPID || !slowOut.Launch.Process.Warm {
		return false // closed early: the pinned operation started another server, or a server is gone
	}
	if servers[0].Generation != 1 || servers[1].Generation != 2 || servers[1].Stats.ServerPID == old.Stats.ServerPID ||
		servers[0].Stats.Forks != 1 || servers[1].Stats.Forks != 1 {
		t.Fatalf("servers %+v", servers)
	}
	// Idle: both servers are closed, and their processes gone.
	for range 3000 {
		if len(s.ProviderWarmServers()) == 0 && len(leaktest.Children(t)) == 0 {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("servers %+v and processes %v left after StarterIdle", s.ProviderWarmServers(), leaktest.Children(t))
	return false
}

// TestProviderWarmRefusedRunsCold: a provider whose import leaves a
// thread running is refused provider-warm, with a warning saying why, and
// its operations run cold.
func TestProviderWarmRefusedRunsCold(t *testing.T) {
	ln := pwLauncher(t, map[string]string{"zeotestpwthread": "import threading, time\n" +
		"threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\nfrom demo_provider import factory\n"})
	var log strings.Builder
	var mu sync.Mutex
	cfg := config(t, memory.New(), ln)
	cfg.Provider = variant(t, "zeotestpwthread:factory", 1, "")
	cfg.ProviderWarm = standInWarm()
	cfg.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s := newSupervisor(t, cfg)
	said := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(log.String(), "loading left 2 threads running")
	}
	for i := 0; !said(); i++ {
		if i == 200 {
			t.Fatalf("no warning says why the server was refused:\n%s", log.String())
		}
		o, err := s.Invoke(testCtx(t), call(fmt.Sprintf("op-%d", i), "example.echo@1.0.0", map[string]any{"text": "hello"}, 0))
		wantState(t, o, err, launch.StateSucceeded, nil)
		if o.Launch.Process.Warm {
			t.Fatal("launched warm")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if sv := s.ProviderWarmServers(); len(sv) != 0 {
		t.Fatalf("servers %+v", sv)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestProviderWarmCloseEndsStart: Close while a provider-warm server is
// still activating its generation (here a provider whose import never
// ends) stops that start, says nothing of a failure, and leaves no
// process. Were the start waited for, Close would block for its whole
// StartTimeout (ten minutes) and the test would time out.
func TestProviderWarmCloseEndsStart(t *testing.T) {
	ln := pwLauncher(t, map[string]string{"zeotestpwforever": "import time\ntime.sleep(3600)\nfrom demo_provider import factory\n"})
	var log strings.Builder
	var mu sync.Mutex
	cfg := config(t, memory.New(), ln)
	cfg.Provider = variant(t, "zeotestpwforever:factory", 1, "")
	cfg.ProviderWarm = standInWarm()
	cfg.ProviderWarm.Zygote.StartTimeout = 10 * time.Minute
	cfg.Logger = slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return log.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := supervise.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The call runs cold (its provider's import never ends, cold too: it
	// is stopped at its deadline); the server's start begins with it.
	c := call("op-forever", "example.echo@1.0.0", map[string]any{"text": "hello"}, 0)
	c.Deadline = time.Now().Add(3 * time.Second).Truncate(time.Millisecond)
	s.Invoke(testCtx(t), c)
	closeSupervisor(t, s)
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(log.String(), "did not start") {
		t.Fatalf("Close was logged as a failed start:\n%s", log.String())
	}
	// The killed server is reaped by its zygote's goroutine, soon after.
	for range 500 {
		if len(leaktest.Children(t)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes left after Close: %v", leaktest.Children(t))
}
