package catalogue_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/manifest"
)

var (
	scopeA = ledger.Scope{OrganizationID: "org-a", ProjectID: "project-a"}
	scopeB = ledger.Scope{OrganizationID: "org-b", ProjectID: "project-b"}
	bg     = context.Background()
)

// backend is a store the catalogue runs on: each test runs on every one
// (PostgreSQL when ZEO_TEST_POSTGRES_DSN names a database).
type backend struct {
	name string
	open func(t *testing.T) catalogue.Store
	// second opens another handle on the same store as s, when the
	// backend has several (PostgreSQL: another pool, as a second
	// controller would).
	second func(t *testing.T, s catalogue.Store) catalogue.Store
}

const dsnEnv = "ZEO_TEST_POSTGRES_DSN"

// demoProvider is the simulated provider's key.
var demoProvider = cataloguestore.ProviderKey{Distribution: hostsim.DefaultDistribution, Factory: hostsim.DemoFactory}

func farFuture() time.Time { return time.Now().Add(time.Hour) }

func backends(t *testing.T) []backend {
	out := []backend{
		{name: "memory", open: func(t *testing.T) catalogue.Store {
			l := memory.New()
			t.Cleanup(func() { l.Close(bg) })
			return l
		}},
		{name: "bolt", open: func(t *testing.T) catalogue.Store { return openBolt(t) }},
	}
	if dsn := os.Getenv(dsnEnv); dsn != "" {
		out = append(out, backend{name: "postgres",
			open: func(t *testing.T) catalogue.Store { return openPostgres(t, dsn, newSchema(t, dsn)) },
			second: func(t *testing.T, s catalogue.Store) catalogue.Store {
				return openPostgres(t, dsn, s.(*postgres.Ledger).Schema())
			}})
	} else {
		t.Logf("PostgreSQL backend skipped: set %s to run it", dsnEnv)
	}
	return out
}

func openBolt(t *testing.T) *bolt.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(t.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(bg) })
	return l
}

func openPostgres(t *testing.T, dsn, schema string) *postgres.Ledger {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	l, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	t.Cleanup(func() { l.Close(bg) })
	return l
}

// newSchema returns a schema no other run uses, dropped when t ends.
func newSchema(t *testing.T, dsn string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "zeo_test_cat_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

// eachBackend runs fn as one subtest per backend.
func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// agreeing is a discovery port that reports what the binding says, as a
// host whose installation matches it does; the tests with real host
// processes use launch's Describe instead.
func agreeing(_ context.Context, b manifest.ProviderBinding) (canon.Digest, error) {
	return b.ManifestDigest, nil
}

func newCatalogue(t *testing.T, s catalogue.Store) *catalogue.Catalogue {
	t.Helper()
	c, err := catalogue.New(catalogue.Config{Store: s, Discover: agreeing, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// manifestOf decodes one manifest in upstream's lax form.
func manifestOf(t testing.TB, src string) manifest.CapabilityManifest {
	t.Helper()
	m, err := manifest.DecodeManifest([]byte(src))
	if err != nil {
		t.Fatalf("manifest %s: %v", src, err)
	}
	return m
}

// capManifest is a capability the simulated host runs as echo, with the
// given concurrency (and resource key fields), credentials and services.
func capManifest(t testing.TB, id, concurrency string, keyFields []string, credentials, services []string) manifest.CapabilityManifest {
	t.Helper()
	m := manifestOf(t, `{"id": "`+id+`", "description": "A capability of the catalogue's tests.",
	  "request_schema": {"type": "object", "properties": {"text": {"type": "string"}, "account": {"type": "string"}}, "required": ["text"]},
	  "response_schema": {"type": "object"},
	  "examples": [{"request": {"text": "hello"}}], "error_codes": [],
	  "effects": {"kinds": ["read"]}, "requirements": {}, "tags": ["test"], "metadata": {}, "deprecation": {}}`)
	m.Effects.Concurrency = manifest.ConcurrencyMode(concurrency)
	m.Effects.ResourceKeyFields = keyFields
	m.Requirements.Credentials, m.Requirements.Services = credentials, services
	if len(credentials) > 0 {
		m.Effects.Kinds = []manifest.EffectKind{manifest.EffectRead, manifest.EffectExternalCommunication}
	}
	return m
}

// binding is the simulated provider (its distribution and factory) at
// generation gen with manifests ms.
func binding(t testing.TB, gen int64, ms ...manifest.CapabilityManifest) manifest.ProviderBinding {
	t.Helper()
	b := hostsim.DemoBinding()
	d, err := manifest.InventoryDigest(ms)
	if err != nil {
		t.Fatal(err)
	}
	b.Manifests, b.ManifestDigest, b.Generation = ms, d, gen
	return b
}

// otherProvider is binding under another distribution and factory.
func otherProvider(t testing.TB, gen int64, ms ...manifest.CapabilityManifest) manifest.ProviderBinding {
	b := binding(t, gen, ms...)
	b.Distribution, b.Factory = "other-dist", "other.pkg:factory"
	return b
}

func everyone(orgs ...string) []catalogue.Audience {
	var out []catalogue.Audience
	for _, o := range orgs {
		out = append(out, catalogue.Audience{OrganizationID: o})
	}
	return out
}

func mustAdmit(t testing.TB, c *catalogue.Catalogue, a catalogue.Admission) catalogue.Generation {
	t.Helper()
	g, err := c.Admit(bg, a)
	if err != nil {
		t.Fatalf("Admit %s generation %d: %v", a.Binding.Distribution, a.Binding.Generation, err)
	}
	return g
}

func wantIs(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

func diff(t testing.TB, what string, got, want any, opts ...cmp.Option) {
	t.Helper()
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Fatalf("%s mismatch (-want +got):\n%s", what, d)
	}
}

// newOperation creates operation op in scope with the pinned manifest
// digest and starts its first attempt, as a Supervisor would.
func newOperation(t testing.TB, s catalogue.Store, scope ledger.Scope, op string, plan catalogue.Plan, deadline time.Time) ledger.Fence {
	t.Helper()
	_, err := s.CreateOperation(bg, ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: plan.Pin.CapabilityID,
		RequestDigest: canon.Sum([]byte(op)), ManifestDigest: plan.Pin.ManifestDigest, Deadline: deadline})
	if err != nil {
		t.Fatalf("CreateOperation %s: %v", op, err)
	}
	f, err := s.StartAttempt(bg, scope, op, "a1")
	if err != nil {
		t.Fatalf("StartAttempt %s: %v", op, err)
	}
	return f
}
