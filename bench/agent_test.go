package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// Search catalogue shape: providers × capabilities each.
const (
	searchProviders   = 20
	searchPerProvider = 500
)

var searchWords = []string{"mail", "calendar", "invoice", "ticket", "report", "drive", "contact", "payment", "chat", "task"}

// searchCatalogue admits 10,000 capabilities (20 providers of 500) into
// store: every tenth word of the vocabulary in ids, descriptions and tags,
// so that one word matches about a tenth of the catalogue. One provider in
// ten is admitted to another organization: the searching scope must skip
// it.
func searchCatalogue(b *testing.B, store catalogue.Store) *catalogue.Catalogue {
	b.Helper()
	ctx := context.Background()
	discover := func(_ context.Context, pb manifest.ProviderBinding) (canon.Digest, error) {
		return pb.ManifestDigest, nil
	}
	cat, err := catalogue.New(catalogue.Config{Store: store, Discover: discover})
	if err != nil {
		b.Fatal(err)
	}
	var echo manifest.CapabilityManifest
	for _, m := range hostsim.DemoManifests() {
		if m.ID.Name == "echo" {
			echo = m
		}
	}
	for p := range searchProviders {
		ms := make([]manifest.CapabilityManifest, searchPerProvider)
		for i := range ms {
			n := p*searchPerProvider + i
			w, v := searchWords[n%len(searchWords)], searchWords[(n/len(searchWords))%len(searchWords)]
			m := echo
			m.ID = manifest.CapabilityID{Namespace: fmt.Sprintf("vendor%03d.%s", p, w), Name: fmt.Sprintf("op%05d", n), Version: "1.0.0"}
			m.Description = fmt.Sprintf("Does %s things with %s records for capability number %d, with a longer sentence as real descriptions have.", v, w, n)
			m.Tags = []string{w, "topic-" + v, fmt.Sprintf("group%d", n%37)}
			m.Metadata = map[string]any{"title": fmt.Sprintf("%s %s %d", w, v, n)}
			ms[i] = m
		}
		d, err := manifest.InventoryDigest(ms)
		if err != nil {
			b.Fatal(err)
		}
		pb := hostsim.DemoBinding()
		pb.Factory, pb.Manifests, pb.ManifestDigest = fmt.Sprintf("vendor%03d:factory", p), ms, d
		org := "org-search"
		if p%10 == 9 { // 2 of 20 providers
			org = "org-other"
		}
		if _, err := cat.Admit(ctx, catalogue.Admission{Binding: pb, Audience: []catalogue.Audience{{OrganizationID: org}}}); err != nil {
			b.Fatal(err)
		}
	}
	return cat
}

// BenchmarkAgentSearch measures one page of agent.Facade.Search over a
// catalogue of 10,000 capabilities (9,000 visible to the scope), on the
// bolt and memory ledgers, and reports p50 and p99 per page in µs. view is
// the floor every search pays: the catalogue's view of the scope (one
// revision read from the store and the visibility filter).
func BenchmarkAgentSearch(b *testing.B) {
	for _, backend := range []string{"bolt", "memory"} {
		var store catalogue.Store
		switch backend {
		case "bolt":
			l, err := bolt.Open(filepath.Join(b.TempDir(), "ledger.db"), bolt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			store = l
		default:
			store = memory.New()
		}
		cat := searchCatalogue(b, store)
		f, err := agent.New(agent.Config{Catalogue: cat, Supervisor: supervise.Config{Ledger: store}})
		if err != nil {
			b.Fatal(err)
		}
		scope := ledger.Scope{OrganizationID: "org-search", ProjectID: "p"}
		ctx := context.Background()
		// A cursor in the middle of the whole list.
		mid := agent.SearchRequest{Limit: agent.MaxPageSize}
		for range 45 {
			page, err := f.Search(ctx, scope, mid)
			if err != nil {
				b.Fatal(err)
			}
			mid.Cursor = page.NextCursor
		}
		cases := []struct {
			name string
			req  agent.SearchRequest
		}{
			{"all-first-page", agent.SearchRequest{Limit: agent.MaxPageSize}},
			{"all-middle-page", mid},
			{"one-word", agent.SearchRequest{Query: "invoice", Limit: agent.MaxPageSize}},
			{"two-words", agent.SearchRequest{Query: "invoice MAIL", Limit: agent.MaxPageSize}},
			{"rare-word", agent.SearchRequest{Query: "group7", Limit: agent.MaxPageSize}},
			{"exact-id", agent.SearchRequest{Query: "vendor008.invoice.op04202@1.0.0", Limit: agent.MaxPageSize}},
			{"no-match", agent.SearchRequest{Query: "zzz", Limit: agent.MaxPageSize}},
		}
		b.Run(backend+"/view", func(b *testing.B) {
			var t timings
			for b.Loop() {
				t.start()
				_, err := cat.View(ctx, scope)
				t.stop()
				if err != nil {
					b.Fatal(err)
				}
			}
			t.report(b)
		})
		for _, c := range cases {
			b.Run(backend+"/"+c.name, func(b *testing.B) {
				b.ReportAllocs()
				var t timings
				var n int
				for b.Loop() {
					t.start()
					page, err := f.Search(ctx, scope, c.req)
					t.stop()
					if err != nil {
						b.Fatal(err)
					}
					n = len(page.Capabilities)
				}
				t.report(b)
				b.ReportMetric(float64(n), "results")
			})
		}
	}
}

// timings collects the wall and thread-CPU time of each call. On a shared
// machine the wall time includes waiting for a core; the thread's CPU time
// is the call's own work (the OS thread is locked between start and stop).
type timings struct {
	wall, cpu  []time.Duration
	t0         time.Time
	cpuAtStart time.Duration
}

func (t *timings) start() {
	runtime.LockOSThread()
	t.cpuAtStart = threadCPU()
	t.t0 = time.Now()
}

func (t *timings) stop() {
	t.wall = append(t.wall, time.Since(t.t0))
	t.cpu = append(t.cpu, threadCPU()-t.cpuAtStart)
	runtime.UnlockOSThread()
}

// report reports the p50 and p99 of each, in µs.
func (t *timings) report(b *testing.B) {
	p := func(ds []time.Duration, q float64) float64 {
		slices.Sort(ds)
		return float64(ds[int(q*float64(len(ds)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(p(t.wall, 0.5), "p50-µs")
	b.ReportMetric(p(t.wall, 0.99), "p99-µs")
	b.ReportMetric(p(t.cpu, 0.5), "cpu-p50-µs")
	b.ReportMetric(p(t.cpu, 0.99), "cpu-p99-µs")
}
