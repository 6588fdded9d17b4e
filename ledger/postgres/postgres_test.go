package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// dsnEnv names the database the tests use; without it they skip.
const dsnEnv = "ZEO_TEST_POSTGRES_DSN"

// testDSN returns the test database's DSN, or skips t when none is set.
func testDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		t.Skipf("PostgreSQL tests skipped: set %s to a database the tests may create and drop schemas in, e.g. %s=postgres://postgres@127.0.0.1:5432/test?sslmode=disable", dsnEnv, dsnEnv)
	}
	return dsn
}

// newSchema returns the name of a schema no other test run uses, and drops
// it, with everything in it, when t ends: runs never collide and leave
// nothing behind.
func newSchema(t testing.TB, dsn string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "zeo_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dropSchema(ctx, dsn, name); err != nil {
			t.Errorf("dropping test schema %s: %v", name, err)
		}
	})
	return name
}

func dropSchema(ctx context.Context, dsn, name string) error {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	return err
}

// openTest opens a ledger in a fresh schema of the test database.
func openTest(t testing.TB) *postgres.Ledger {
	t.Helper()
	dsn := testDSN(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := postgres.Open(ctx, dsn, postgres.Options{Schema: newSchema(t, dsn)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// reopener opens empty ledgers for ledgertest. A test that opens more than
// one ledger, one after the other (the state-machine test opens one per
// rapid check, and closes it before the next), gets its schema again with
// every table emptied: migrating a new schema for each check would cost
// most of the run.
type reopener struct {
	mu      sync.Mutex
	schemas map[testing.TB]string
}

func (o *reopener) open(t *testing.T) ledger.Ledger {
	t.Helper()
	dsn := testDSN(t)
	o.mu.Lock()
	schema, again := o.schemas[t]
	if !again {
		schema = newSchema(t, dsn)
		o.schemas[t] = schema
	}
	o.mu.Unlock()
	if again {
		emptySchema(t, dsn, schema)
	}
	l, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l
}

// emptySchema truncates every table of the ledger in schema but its
// schema version.
func emptySchema(t testing.TB, dsn, schema string) {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(context.Background(), "SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_version'", schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var n string
		err := r.Scan(&n)
		return pgx.Identifier{schema, n}.Sanitize(), err
	})
	if err != nil || len(names) == 0 {
		t.Fatalf("tables of %s: %v, %v", schema, names, err)
	}
	if _, err := c.Exec(context.Background(), "TRUNCATE "+strings.Join(names, ", ")+" RESTART IDENTITY"); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	testDSN(t)
	o := &reopener{schemas: map[testing.TB]string{}}
	ledgertest.Run(t, o.open)
}

func TestDurable(t *testing.T) {
	dsn := testDSN(t)
	schemas := map[string]string{} // test directory → schema, so that reopening finds the ledger
	ledgertest.RunDurable(t, func(t *testing.T, dir string) ledger.Ledger {
		name, ok := schemas[dir]
		if !ok {
			name = newSchema(t, dsn)
			schemas[dir] = name
		}
		l, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: name})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return l
	})
}

func TestCatalogueConformance(t *testing.T) {
	testDSN(t)
	ledgertest.RunCatalogue(t, func(t *testing.T) ledgertest.CatalogueLedger { return openTest(t) })
}
