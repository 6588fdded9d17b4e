package supervise_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// pgCloseLedger opens a ledger/postgres ledger in a schema of its own,
// dropped when the test ends; it skips without ZEO_TEST_POSTGRES_DSN.
func pgCloseLedger(t *testing.T) (*postgres.Ledger, string, string) {
	t.Helper()
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("ZEO_TEST_POSTGRES_DSN is not set: no PostgreSQL to run against (.ci/run sets it)")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "zeo_supervise_" + hex.EncodeToString(b[:])
	l, err := postgres.Open(context.Background(), dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l.Close(ctx)
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return l, dsn, schema
}

// TestCloseBoundedPostgres: Close while the attempt's evidence write waits
// on a lock another PostgreSQL session holds returns at its bound with
// ErrDrainTimeout and keeps the lease; a new controller, on its own
// connection pool, takes the attempt over once the lease has expired, and
// the held write lands when the lock is released.
func TestCloseBoundedPostgres(t *testing.T) {
	// Nothing is left once the held write has landed: registered first,
	// these checks run after every cleanup that closes something. The test
	// is not parallel, so the counts are its own.
	t.Cleanup(leaktest.Goroutines(t))
	fds := leaktest.OpenFDs(t)
	t.Cleanup(func() {
		if kids := leaktest.Children(t); len(kids) != 0 {
			t.Errorf("processes left: %v", kids)
		}
		if n := leaktest.OpenFDs(t); n > fds {
			t.Errorf("%d descriptors open, %d before", n, fds)
		}
	})
	l, dsn, schema := pgCloseLedger(t)
	ctx := testCtx(t)
	s, invoked := stuckSupervisor(t, ctx, l, l, "op-stuck-pg", time.Second)
	// Another session holds a lock under which no evidence can be written
	// (reads go on), as a backend paused on a lock would.
	locker, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{schema, "evidence"}.Sanitize()+" IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := s.Close(cctx); !errors.Is(err, supervise.ErrDrainTimeout) {
		t.Fatalf("Close with a write waiting on a lock: %v", err)
	}
	if ls := leaseOf(t, l, s.ControllerID()); ls.Released {
		t.Fatalf("lease released with a write pending: %+v", ls)
	}

	// A new controller with its own pool takes the attempt over after the
	// lease expired, never before.
	l2, err := postgres.Open(ctx, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close(context.Background()) }) // after other's Close, registered below
	other := newSupervisor(t, config(t, l2, newLauncher(t, 0)))
	if rec, err := other.Recover(ctx); err != nil || len(rec.Fenced) != 0 {
		t.Fatalf("Recover while the closed controller's lease is live: %+v, %v", rec, err)
	}
	waitFor(t, func() bool { return !leaseOf(t, l2, s.ControllerID()).Live })
	rec, err := other.Recover(ctx)
	if err != nil || len(rec.Fenced) != 1 || rec.Fenced[0].OperationID != "op-stuck-pg" {
		t.Fatalf("Recover after the lease expired: %+v, %v", rec, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-invoked
	evs, err := l2.Evidence(ctx, scope, "op-stuck-pg")
	if err != nil || len(evs) != 1 {
		t.Fatalf("evidence of the held write after the lock was released: %+v, %v", evs, err)
	}
}
