package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Resource reservations on the bolt ledger: Reserve then Release of a
// serial_per_resource capability's reservation (two fsynced writes, each
// checking the holder's fence in its transaction), beside one plain
// ledger write (CreateOperation of a new operation, one fsynced write), by
// W concurrent writers, each on its own operation and resource key.
// ns/op is wall time per reservation taken and released, or per plain
// write.
//
//	cd bench && go test -run '^$' -bench CatalogueReservation -benchmem -count 5

func BenchmarkCatalogueReservation(b *testing.B) {
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d/plain-write", w), func(b *testing.B) {
			l := openBoltBench(b)
			var next atomic.Int64
			runWriters(b, w, func(int) error {
				op := fmt.Sprint("op-", next.Add(1))
				_, err := l.CreateOperation(context.Background(), ledger.OperationSpec{Scope: benchScope, OperationID: op, CapabilityID: "cap",
					RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man"))})
				return err
			})
		})
		b.Run(fmt.Sprintf("writers=%d/reserve-release", w), func(b *testing.B) {
			l := openBoltBench(b)
			c := benchCatalogue(b, l)
			prov, m := reservationCapability(b)
			ctx := context.Background()
			fences := make([]ledger.Fence, w)
			args := make([]map[string]any, w)
			for i := range w {
				op := fmt.Sprint("op-", i)
				if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: benchScope, OperationID: op, CapabilityID: "example.res@1.0.0",
					RequestDigest: canon.Sum([]byte("req")), ManifestDigest: prov.ManifestDigest, Deadline: time.Now().Add(time.Hour)}); err != nil {
					b.Fatal(err)
				}
				f, err := l.StartAttempt(ctx, benchScope, op, "a1")
				if err != nil {
					b.Fatal(err)
				}
				fences[i] = f
				args[i] = map[string]any{"account": fmt.Sprint("account-", i)}
			}
			runWriters(b, w, func(i int) error {
				if err := c.Reserve(ctx, fences[i], prov, m, args[i], 0); err != nil {
					return err
				}
				return c.Release(ctx, fences[i])
			})
		})
	}
}

// BenchmarkCatalogueReservationPaired alternates, one at a time, a plain
// write and a reservation taken and released, so that both see the same
// machine load; it reports the mean of each (plain-µs, reserve-release-µs)
// and their ratio.
func BenchmarkCatalogueReservationPaired(b *testing.B) {
	ctx := context.Background()
	l := openBoltBench(b)
	c := benchCatalogue(b, l)
	prov, m := reservationCapability(b)
	if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: benchScope, OperationID: "held", CapabilityID: "example.res@1.0.0",
		RequestDigest: canon.Sum([]byte("req")), ManifestDigest: prov.ManifestDigest, Deadline: time.Now().Add(time.Hour)}); err != nil {
		b.Fatal(err)
	}
	f, err := l.StartAttempt(ctx, benchScope, "held", "a1")
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"account": "acme"}
	var plain, reserve time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: benchScope, OperationID: fmt.Sprint("op-", i), CapabilityID: "cap",
			RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man"))}); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := c.Reserve(ctx, f, prov, m, args, 0); err != nil {
			b.Fatal(err)
		}
		if err := c.Release(ctx, f); err != nil {
			b.Fatal(err)
		}
		plain, reserve = plain+t1.Sub(t0), reserve+time.Since(t1)
	}
	b.StopTimer()
	b.ReportMetric(float64(plain.Microseconds())/float64(b.N), "plain-µs")
	b.ReportMetric(float64(reserve.Microseconds())/float64(b.N), "reserve-release-µs")
	b.ReportMetric(float64(reserve)/float64(plain), "ratio")
}

var benchScope = ledger.Scope{OrganizationID: "org", ProjectID: "proj"}

// benchCatalogue is a catalogue over l; reservations need no admission,
// so its discovery port is never asked.
func benchCatalogue(b *testing.B, l *bolt.Ledger) *catalogue.Catalogue {
	c, err := catalogue.New(catalogue.Config{Store: l, Discover: func(context.Context, manifest.ProviderBinding) (canon.Digest, error) {
		return "", errors.New("no discovery in the benchmark")
	}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func openBoltBench(b *testing.B) *bolt.Ledger {
	l, err := bolt.Open(filepath.Join(b.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// reservationCapability is a provider whose one capability is
// serial_per_resource on "account".
func reservationCapability(b *testing.B) (manifest.ProviderBinding, manifest.CapabilityManifest) {
	m, err := manifest.DecodeManifest([]byte(`{"id": "example.res@1.0.0", "description": "A reserved resource.",
	  "request_schema": {"type": "object", "properties": {"account": {"type": "string"}}},
	  "response_schema": {"type": "object"}, "examples": [], "error_codes": [],
	  "effects": {"kinds": ["write"], "concurrency": "serial_per_resource", "resource_key_fields": ["account"]},
	  "requirements": {}, "tags": [], "metadata": {}, "deprecation": {}}`))
	if err != nil {
		b.Fatal(err)
	}
	ms := []manifest.CapabilityManifest{m}
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		b.Fatal(err)
	}
	return manifest.ProviderBinding{ProtocolVersion: 1, Distribution: "dist", Version: "1.0.0", PythonVersion: "3.14.0",
		EnvironmentDigest: canon.Sum([]byte("env")), Factory: "pkg:factory", Manifests: ms, ManifestDigest: d, Generation: 1}, m
}
