package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

var bg = context.Background()

// execSQL runs sql on a connection of its own, outside any ledger.
func execSQL(t testing.TB, dsn, sql string, args ...any) {
	t.Helper()
	c, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(bg)
	if _, err := c.Exec(bg, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func closeLedger(t testing.TB, l ledger.Ledger) {
	t.Helper()
	if err := l.Close(bg); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// Controllers that start together migrate one at a time: without the
// advisory lock, concurrent CREATE TABLEs of one schema collide.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	ledgers := make([]*postgres.Ledger, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ledgers[i], errs[i] = postgres.Open(bg, dsn, postgres.Options{Schema: schema})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer closeLedger(t, ledgers[i])
	}
	// Every controller sees what another wrote.
	sp := ledger.OperationSpec{Scope: ledger.Scope{OrganizationID: "o", ProjectID: "p"}, OperationID: "op",
		CapabilityID: "c", RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m"), EffectBudget: 1}
	if _, err := ledgers[0].CreateOperation(bg, sp); err != nil {
		t.Fatal(err)
	}
	if _, err := ledgers[n-1].Operation(bg, sp.Scope, "op"); err != nil {
		t.Fatalf("another controller's operation: %v", err)
	}
	c, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(bg)
	var rows, version int
	if err := c.QueryRow(bg, "SELECT count(*), max(version) FROM "+pgx.Identifier{schema}.Sanitize()+".schema_version").Scan(&rows, &version); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || version != postgres.SchemaVersion {
		t.Fatalf("schema_version has %d rows, version %d; want 1 row of version %d", rows, version, postgres.SchemaVersion)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	l, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	closeLedger(t, l)
	execSQL(t, dsn, "UPDATE "+pgx.Identifier{schema}.Sanitize()+".schema_version SET version = $1", postgres.SchemaVersion+1)
	_, err = postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if !errors.Is(err, postgres.ErrSchemaTooNew) || !strings.Contains(err.Error(), schema) {
		t.Fatalf("Open of a newer schema: err = %v, want ErrSchemaTooNew naming the schema", err)
	}
}

func TestOpenRefusesBadArguments(t *testing.T) {
	dsn := testDSN(t)
	for name, opts := range map[string]postgres.Options{
		"negative retries": {MaxRetries: -1},
		"long schema":      {Schema: strings.Repeat("s", 64)},
		"NUL in schema":    {Schema: "a\x00b"},
		"invalid UTF-8":    {Schema: "\xff"},
	} {
		if _, err := postgres.Open(bg, dsn, opts); !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := postgres.Open(bg, "postgres://user:secret@127.0.0.1:notaport/db", postgres.Options{}); !errors.Is(err, ledger.ErrInvalid) || strings.Contains(err.Error(), "secret") {
		t.Errorf("malformed DSN: err = %v, want ErrInvalid without the password", err)
	}
	if _, err := postgres.New(bg, nil, postgres.Options{}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("nil pool: err = %v, want ErrInvalid", err)
	}
}

// New uses the caller's pool and leaves it open on Close.
func TestNewKeepsCallersPool(t *testing.T) {
	dsn := testDSN(t)
	pool, err := pgxpool.New(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, err := postgres.New(bg, pool, postgres.Options{Schema: newSchema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ListUnknown(bg); err != nil {
		t.Fatal(err)
	}
	closeLedger(t, l)
	if err := pool.Ping(bg); err != nil {
		t.Fatalf("caller's pool after Close: %v", err)
	}
}

var testScope = ledger.Scope{OrganizationID: "org", ProjectID: "proj"}

func digest(s string) canon.Digest { return ledgertest.Digest(s) }

// readyOp creates operation op in testScope with a budget of 1000, starts
// attempt a1, and redeems a bootstrap id and admits it, so that it may
// authorize effects.
func readyOp(t testing.TB, l ledger.Ledger, op string) ledger.Fence {
	t.Helper()
	f, err := prepareOp(bg, l, testScope, op, "a1", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// prepareOp is readyOp's work, with errors returned: create (idempotent),
// start the attempt, issue a bootstrap id for it, redeem it, admit.
func prepareOp(ctx context.Context, l ledger.Ledger, s ledger.Scope, op, attempt string, budget int64) (ledger.Fence, error) {
	if _, err := l.CreateOperation(ctx, opSpec(s, op, budget)); err != nil {
		return ledger.Fence{}, err
	}
	f, err := l.StartAttempt(ctx, s, op, attempt)
	if err != nil {
		return ledger.Fence{}, err
	}
	boot, launch := "boot-"+op+"-"+attempt, digest("launch")
	if _, err := ledgertest.Issue(ctx, l, f, boot, launch); err != nil {
		return f, err
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: launch, PID: 7, SessionID: "s-" + attempt}); err != nil {
		return f, err
	}
	_, err = l.Admit(ctx, f, digest("request"))
	return f, err
}

func opSpec(s ledger.Scope, op string, budget int64) ledger.OperationSpec {
	return ledger.OperationSpec{Scope: s, OperationID: op, CapabilityID: "cap", RequestDigest: digest("request"),
		ManifestDigest: digest("manifest"), EffectBudget: budget}
}

// A ledger of every older schema version, with the records a build of
// that version wrote (through that version's own functions), is brought up
// to date at open: the migrations it lacks run, in order, and then the
// ledger works on the old records. Attempts and effects of before version
// 7 have no controller: the operation is orphaned and its authorized
// effect unknown, as every one was before leases.
func TestOlderSchemaMigrated(t *testing.T) {
	dsn := testDSN(t)
	for v := 1; v < postgres.SchemaVersion; v++ {
		t.Run(fmt.Sprintf("from=%d", v), func(t *testing.T) {
			schema := newSchema(t, dsn)
			q := pgx.Identifier{schema}.Sanitize()
			pool, err := pgxpool.New(bg, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			if err := postgres.MigrateTo(bg, pool, schema, v); err != nil {
				t.Fatal(err)
			}
			// The calls of version 1's functions, whose arguments no
			// later version changed before version 7.
			org, proj, op := []byte(testScope.OrganizationID), []byte(testScope.ProjectID), []byte("op")
			for _, c := range []struct {
				sql  string
				args []any
			}{
				{"create_operation($1, $2, $3, 'cap', $4, $5, 10, NULL, NULL)", []any{org, proj, op, string(digest("request")), string(digest("manifest"))}},
				{"start_attempt($1, $2, $3, 'a1')", []any{org, proj, op}},
				{"issue_bootstrap($1, $2, $3, 'a1', 1, 'boot', $4)", []any{org, proj, op, string(digest("launch"))}},
				{"redeem_bootstrap($1, $2, $3, 'a1', 1, 'boot', $4, 7, 's')", []any{org, proj, op, string(digest("launch"))}},
				{"admit($1, $2, $3, 'a1', 1, $4)", []any{org, proj, op, string(digest("request"))}},
				{"begin_effect($1, $2, $3, 'a1', 1, 'old', $4, 'auth_old')", []any{org, proj, op, string(digest("old"))}},
			} {
				var code string
				if err := pool.QueryRow(bg, "SELECT r_code FROM "+q+"."+c.sql, c.args...).Scan(&code); err != nil || code != "ok" {
					t.Fatalf("version %d: %s: %q, %v", v, c.sql, code, err)
				}
			}
			l, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			defer closeLedger(t, l)
			f := ledger.Fence{Scope: testScope, OperationID: "op", AttemptID: "a1", Generation: 1}
			if _, err := l.BeginEffect(bg, f, "new", digest("new")); err != nil {
				t.Fatal(err)
			}
			unknown, err := l.ListUnknown(bg)
			if err != nil || len(unknown) != 2 || unknown[0].LogicalEffectID != "new" || unknown[1].LogicalEffectID != "old" ||
				unknown[1].ControllerID != "" || unknown[1].AuthorizationID != "auth_old" {
				t.Fatalf("ListUnknown = %+v, %v; want the effects new and old, without a controller", unknown, err)
			}
			orphans, err := l.ListOperations(bg, ledger.OperationQuery{Orphaned: true})
			if err != nil || len(orphans) != 1 || orphans[0].CurrentAttemptID != "a1" || orphans[0].CurrentControllerID != "" {
				t.Fatalf("orphaned operations = %+v, %v; want op", orphans, err)
			}
			if _, err := l.Resolve(bg, testScope, "op", "old", digest("old"), ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}); err != nil {
				t.Fatalf("Resolve of the old effect: %v", err)
			}
			c, err := pgx.Connect(bg, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(bg)
			var got int
			if err := c.QueryRow(bg, "SELECT version FROM "+q+".schema_version").Scan(&got); err != nil || got != postgres.SchemaVersion {
				t.Fatalf("schema version after open = %d, %v; want %d", got, err, postgres.SchemaVersion)
			}
			checkTables(t, dsn, schema)
		})
	}
}
