package agent_test

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// hostsimPath is the simulated host executable, built once by TestMain.
var hostsimPath string

func TestMain(m *testing.M) {
	contain.Init() // the contained hosts of these tests start as this binary
	longtest.ShrinkRapid()
	os.Exit(testbin.RunWithHostsim(m, &hostsimPath))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// echoManifest is the simulated echo capability under another id (the
// simulated host answers as echo for any name it does not script), with
// the given description and tags.
func echoManifest(t testing.TB, id, description string, tags ...string) manifest.CapabilityManifest {
	t.Helper()
	var m manifest.CapabilityManifest
	for _, d := range hostsim.DemoManifests() {
		if d.ID.Name == "echo" {
			m = d
		}
	}
	cid, err := manifest.ParseCapabilityID(id)
	if err != nil {
		t.Fatal(err)
	}
	m.ID, m.Description, m.Tags = cid, description, tags
	return m
}

// binding is the simulated provider's binding with factory and ms as its
// inventory, at generation gen.
func binding(t testing.TB, factory string, gen int64, ms ...manifest.CapabilityManifest) manifest.ProviderBinding {
	t.Helper()
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	b := hostsim.DemoBinding()
	b.Factory, b.Manifests, b.ManifestDigest, b.Generation = factory, ms, d, gen
	return b
}

// world is a facade over a memory ledger and a catalogue, with the
// simulated host.
type world struct {
	f   *agent.Facade
	cat *catalogue.Catalogue
	l   *memory.Ledger
}

// launcher returns a launcher of the simulated host.
func launcher(t testing.TB) *launch.Launcher {
	t.Helper()
	ln, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: t.TempDir(), Grace: 2 * time.Second,
		WaitDelay: 500 * time.Millisecond, Verifier: environment.Trust{},
		AllowRootHost: true}) // tests run as whoever runs them, root included
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// newWorld admits each admission, in order, into a fresh catalogue.
func newWorld(t testing.TB, cfg agent.Config, admissions ...catalogue.Admission) *world {
	t.Helper()
	ctx := testCtx(t)
	l := memory.New()
	t.Cleanup(func() { l.Close(context.Background()) })
	ln := launcher(t)
	cat, err := catalogue.New(catalogue.Config{Store: l, Discover: agent.Discover(ln)})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range admissions {
		if _, err := cat.Admit(ctx, a); err != nil {
			t.Fatalf("admitting %s: %v", a.Binding.Factory, err)
		}
	}
	cfg.Catalogue = cat
	s := cfg.Supervisor
	s.Ledger, s.Launcher, s.HostPythonVersion = l, ln, hostsim.DefaultPythonVersion
	s.SeatID, s.RuntimeBindingID, s.Workspace = "seat-a", "runtime-a", "/workspace-a"
	cfg.Supervisor = s
	f, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(context.Background()); err != nil {
			t.Errorf("closing the facade: %v", err)
		}
	})
	return &world{f: f, cat: cat, l: l}
}

// noLeaks checks, when the test and its other cleanups have ended, that
// the descriptors, goroutines and child processes it started are gone
// (waiting, bounded, for goroutines and reaping to wind down).
func noLeaks(t *testing.T) {
	t.Helper()
	fds, goroutines := leaktest.OpenFDs(t), runtime.NumGoroutine()
	t.Cleanup(func() {
		var f, g int
		var kids []int
		for range 500 {
			f, g, kids = leaktest.OpenFDs(t), runtime.NumGoroutine(), leaktest.Children(t)
			if f <= fds && g <= goroutines && len(kids) == 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		buf := make([]byte, 1<<20)
		t.Errorf("left behind: descriptors %d→%d, goroutines %d→%d, children %v\n%s", fds, f, goroutines, g, kids, buf[:runtime.Stack(buf, true)])
	})
}
