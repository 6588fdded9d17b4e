package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// One Supervisor for every provider against one Supervisor per provider
// (issue 22), same calls, in one run:
//
//	cd bench && go test -run '^$' -bench SupervisorProviders -benchtime 60x -count 5
//
// Three providers are the simulated host's demo binding as three distinct
// bindings (another factory and inventory each, so another manifest digest
// and another checked provider in the Supervisor). Every iteration runs the
// same three calls (example.echo@1.0.0, one per provider, at once) through
// the one Supervisor, which resolves each call's provider through the
// Providers port, and through three Supervisors each configured with one
// provider, in alternating order; all four Supervisors share one bolt
// ledger. x-single is the one Supervisor's time over the three's,
// cpu-x-single the same for this process's CPU (the Runtime's own; the
// hosts' is not in it).

// providerRegistry is the Providers port over fixed bindings.
type providerRegistry map[cataloguestore.ProviderKey]manifest.ProviderBinding

func (r providerRegistry) ProviderBinding(_ context.Context, _ ledger.Scope, _ string, p cataloguestore.ProviderKey, _ int64) (manifest.ProviderBinding, error) {
	b, ok := r[p]
	if !ok {
		return b, fmt.Errorf("provider %s: %w", p.Factory, ledger.ErrNotFound)
	}
	return b, nil
}

// providerVariant is base as provider factory with its own inventory.
func providerVariant(b *testing.B, base manifest.ProviderBinding, factory string) manifest.ProviderBinding {
	b.Helper()
	ms := slices.Clone(base.Manifests)
	for i := range ms {
		ms[i].Description = "provider " + factory
	}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		b.Fatal(err)
	}
	v := base
	v.Factory, v.Manifests, v.ManifestDigest = factory, ms, d
	return v
}

func BenchmarkSupervisorProviders(b *testing.B) {
	f := newSuperviseFixture(b)
	l := openBolt(b)
	reg := providerRegistry{}
	var bindings []manifest.ProviderBinding
	for _, name := range []string{"alpha_provider:factory", "beta_provider:factory", "gamma_provider:factory"} {
		v := providerVariant(b, f.binding, name)
		bindings = append(bindings, v)
		reg[cataloguestore.ProviderKey{Distribution: v.Distribution, Factory: v.Factory}] = v
	}
	newSup := func(mutate func(*supervise.Config)) *supervise.Supervisor {
		cfg := supervise.Config{Ledger: l, Launcher: f.launcher, HostPythonVersion: f.binding.PythonVersion,
			Dispatcher: receiptDispatcher{}, SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace"}
		mutate(&cfg)
		s, err := supervise.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(context.Background()); err != nil {
				b.Error(err)
			}
		})
		return s
	}
	one := newSup(func(c *supervise.Config) { c.Providers = reg })
	var singles []*supervise.Supervisor
	for _, v := range bindings {
		singles = append(singles, newSup(func(c *supervise.Config) { c.Provider = v }))
	}
	// round runs the three calls at once and adds its wall time and this
	// process's CPU (the Runtime's; the hosts are not in it) to *wall, *cpu.
	round := func(pick func(k int) (*supervise.Supervisor, supervise.Call), wall, cpu *time.Duration) {
		t0, c0 := time.Now(), processCPU()
		var wg sync.WaitGroup
		for k := range bindings {
			wg.Go(func() {
				s, c := pick(k)
				if _, err := s.Invoke(context.Background(), c); err != nil {
					b.Error(err) // not Fatal: this is not the benchmark's goroutine
				}
			})
		}
		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
		*wall += time.Since(t0)
		*cpu += processCPU() - c0
	}
	viaOne := func(k int) (*supervise.Supervisor, supervise.Call) {
		c := f.echoCall()
		c.Provider = cataloguestore.ProviderKey{Distribution: bindings[k].Distribution, Factory: bindings[k].Factory}
		return one, c
	}
	viaSingle := func(k int) (*supervise.Supervisor, supervise.Call) { return singles[k], f.echoCall() }
	// Warm both up: each Supervisor checks its providers on first use.
	var tOne, tSingle, cOne, cSingle time.Duration
	round(viaOne, &tOne, &cOne)
	round(viaSingle, &tSingle, &cSingle)
	tOne, tSingle, cOne, cSingle = 0, 0, 0, 0
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			round(viaOne, &tOne, &cOne)
			round(viaSingle, &tSingle, &cSingle)
		} else {
			round(viaSingle, &tSingle, &cSingle)
			round(viaOne, &tOne, &cOne)
		}
		i++
	}
	n := float64(3 * b.N)
	b.ReportMetric(float64(tOne.Nanoseconds())/n, "one-ns/invocation")
	b.ReportMetric(float64(tSingle.Nanoseconds())/n, "single-ns/invocation")
	b.ReportMetric(float64(tOne)/float64(tSingle), "x-single")
	b.ReportMetric(float64(cOne.Nanoseconds())/n, "one-cpu-ns/invocation")
	b.ReportMetric(float64(cSingle.Nanoseconds())/n, "single-cpu-ns/invocation")
	b.ReportMetric(float64(cOne)/float64(cSingle), "cpu-x-single")
}

// Takeover after SIGKILL on PostgreSQL (issue 22):
//
//	cd bench && ZEO_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//		go test -run '^$' -bench Takeover -benchtime 30x
//
// Every iteration starts a controller process (takeoverctl) with a lease
// of takeoverTTL, which invokes one operation and stops in its first
// effect's dispatch; it is then killed with SIGKILL. A Supervisor of this
// process with TakeoverInterval takeoverTTL/4 measures the time from the
// kill to its takeover of that operation's attempt (the log record of
// ledger.TakeOver having fenced it). The time is the killed lease's
// remaining life (between ttl − ttl/3, just before a renewal, and ttl;
// here near ttl, since the controller reaches its dispatch soon after
// acquiring its lease), plus up to one takeover interval, plus one
// Recover pass; its bound is
// ttl + ttl/4 + a pass. On ledger/bolt a killed process's file lock passes
// at once and the next controller takes over at its first Recover: there
// is nothing to measure there.
const takeoverTTL = time.Second

// takeoverLog signals each takeover the Supervisor logs, by operation.
type takeoverLog struct {
	mu   sync.Mutex
	seen map[string]chan time.Time
}

func (h *takeoverLog) wait(op string) chan time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan time.Time, 1)
	h.seen[op] = c
	return c
}

func (h *takeoverLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *takeoverLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *takeoverLog) WithGroup(string) slog.Handler                { return h }
func (h *takeoverLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "supervise: recover: took over") {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "operation" {
			h.mu.Lock()
			if c := h.seen[a.Value.String()]; c != nil {
				c <- r.Time
			}
			h.mu.Unlock()
		}
		return true
	})
	return nil
}

func BenchmarkTakeover(b *testing.B) {
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("set ZEO_TEST_POSTGRES_DSN to a PostgreSQL database to run the PostgreSQL takeover benchmark")
	}
	ctx := context.Background()
	f := newSuperviseFixture(b)
	ctl := buildTool(b, b.TempDir(), "takeoverctl", "./takeoverctl", false)
	pool, quoted := benchSchema(b, dsn, 4)
	l, err := postgres.New(ctx, pool, postgres.Options{Schema: pgxUnquote(quoted)})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	h := &takeoverLog{seen: map[string]chan time.Time{}}
	s, err := supervise.New(supervise.Config{Ledger: l, Launcher: f.launcher, Provider: f.binding, HostPythonVersion: f.binding.PythonVersion,
		SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace",
		LeaseTTL: takeoverTTL, TakeoverInterval: takeoverTTL / 4, Logger: slog.New(h)})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	if _, err := s.Recover(ctx); err != nil { // registers, and starts the takeover loop
		b.Fatal(err)
	}
	var times []time.Duration
	i := 0
	for b.Loop() {
		i++
		op := fmt.Sprint("op-takeover-", i)
		taken := h.wait(op)
		cmd := exec.Command(ctl, "-dsn", dsn, "-schema", pgxUnquote(quoted), "-host", f.hostsim,
			"-binding", "../testdata/examples/binding.json", "-op", op, "-ttl", takeoverTTL.String())
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || line != "dispatching\n" {
			cmd.Process.Kill()
			cmd.Wait()
			b.Fatalf("controller: %q, %v", line, err)
		}
		killed := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		cmd.Wait()
		select {
		case at := <-taken:
			times = append(times, at.Sub(killed))
		case <-time.After(10 * takeoverTTL):
			b.Fatalf("%s not taken over within %v of the kill", op, 10*takeoverTTL)
		}
	}
	slices.Sort(times)
	p := func(q float64) float64 {
		return float64(times[min(len(times)-1, int(q*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(float64(times[0].Microseconds())/1000, "min-ms")
	b.ReportMetric(float64(takeoverTTL.Milliseconds()), "ttl-ms")
	b.ReportMetric(p(0.5)/float64(takeoverTTL.Milliseconds()), "p50-x-ttl")
	b.ReportMetric(p(0.99)/float64(takeoverTTL.Milliseconds()), "p99-x-ttl")
}
