package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// Effect authorization on PostgreSQL (BeginEffect then ConfirmEffect: two
// committed transactions) by W concurrent writers, each on its own
// operation, beside raw pgx doing one single-row INSERT per transaction
// (an autocommit Exec: one statement, one round trip, one commit) with the
// same writers, in the same run. Both sides get a pool of W connections,
// so no writer waits for a connection. Needs ZEO_TEST_POSTGRES_DSN:
//
//	cd bench && ZEO_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//		go test -run '^$' -bench LedgerPostgres -benchmem -count 5
func BenchmarkLedgerPostgres(b *testing.B) {
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("set ZEO_TEST_POSTGRES_DSN to a PostgreSQL database to run the PostgreSQL ledger benchmarks")
	}
	for _, w := range ledgerWriters {
		b.Run(fmt.Sprintf("writers=%d/raw-pgx-insert", w), func(b *testing.B) {
			pool, schema := benchSchema(b, dsn, w)
			if _, err := pool.Exec(context.Background(), "CREATE TABLE "+schema+".raw (k bigint PRIMARY KEY, v bytea NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			benchRawInsert(b, pool, schema, w)
		})
		b.Run(fmt.Sprintf("writers=%d/postgres-authorize", w), func(b *testing.B) {
			pool, schema := benchSchema(b, dsn, w)
			l, err := postgres.New(context.Background(), pool, postgres.Options{Schema: pgxUnquote(schema)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			before := l.Stats()
			benchAuthorize(b, l, w, nil)
			after := l.Stats()
			if n := after.Commits - before.Commits; n > 0 {
				b.ReportMetric(float64(after.Writes-before.Writes)/float64(n), "writes/commit")
			}
		})
	}
}

// benchSchema returns a pool of w connections and the quoted name of a new
// schema, both released when b ends. The pool's sessions carry the
// schema's (unquoted) name as their application_name.
func benchSchema(b *testing.B, dsn string, w int) (*pgxpool.Pool, string) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		b.Fatal(err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	name := "zeo_bench_" + hex.EncodeToString(r[:])
	// The sessions carry the schema's name, so that backendCPU finds them.
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	cfg.MaxConns, cfg.MinConns = int32(w), int32(w)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := pool.Exec(context.Background(), "CREATE SCHEMA "+quoted); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA "+quoted+" CASCADE"); err != nil {
			b.Error(err)
		}
		pool.Close()
	})
	return pool, quoted
}

// pgxUnquote undoes pgx.Identifier.Sanitize for the plain names benchSchema
// makes.
func pgxUnquote(quoted string) string { return quoted[1 : len(quoted)-1] }

// benchRawInsert is the baseline: one single-row INSERT per transaction.
func benchRawInsert(b *testing.B, pool *pgxpool.Pool, schema string, w int) {
	ctx := context.Background()
	sql := "INSERT INTO " + schema + ".raw (k, v) VALUES ($1, $2)"
	val := make([]byte, 200) // about the size of one effect row
	var key atomic.Int64
	runWriters(b, w, func(int) error {
		_, err := pool.Exec(ctx, sql, key.Add(1), val)
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "insert/s")
}

// BenchmarkLedgerPostgresPaired measures the same two sides in alternating
// rounds (a round of raw inserts by every writer, then a round of
// authorizations, and again), so that load drift on a shared machine hits
// both sides of the ratio alike; ratio is authorizations/s over raw
// inserts/s. A third round does two raw inserts per op, each its own
// transaction, one after the other: an authorization's two durable
// commits at the cost of raw inserts. ceiling is its rate over the raw
// insert rate, the ratio the ledger would reach if each of its calls cost
// what a raw insert costs (0.5 when the second insert costs as much as the
// first). One op is one round of each.
func BenchmarkLedgerPostgresPaired(b *testing.B) {
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("set ZEO_TEST_POSTGRES_DSN to a PostgreSQL database to run the PostgreSQL ledger benchmarks")
	}
	for _, w := range ledgerWriters {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			ctx := context.Background()
			// One pool for both sides: two of 64 connections would pass
			// PostgreSQL's default limit of 100.
			pool, schema := benchSchema(b, dsn, w)
			if _, err := pool.Exec(ctx, "CREATE TABLE "+schema+".raw (k bigint PRIMARY KEY, v bytea NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			rawPool := pool
			l, err := postgres.New(ctx, pool, postgres.Options{Schema: pgxUnquote(schema)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(ctx)
			fences := authorizeSetup(b, l, w)
			insert := "INSERT INTO " + schema + ".raw (k, v) VALUES ($1, $2)"
			val := make([]byte, 200)
			d := canon.Sum([]byte("effect request"))
			perRound := 8 * w
			var key, effect atomic.Int64
			var rawTime, twoTime, ledgerTime time.Duration
			before := l.Stats()
			b.ResetTimer()
			for range b.N {
				rawTime += rounds(b, w, perRound, func(int) error {
					_, err := rawPool.Exec(ctx, insert, key.Add(1), val)
					return err
				})
				twoTime += rounds(b, w, perRound, func(int) error {
					if _, err := rawPool.Exec(ctx, insert, key.Add(1), val); err != nil {
						return err
					}
					_, err := rawPool.Exec(ctx, insert, key.Add(1), val)
					return err
				})
				ledgerTime += rounds(b, w, perRound, func(i int) error {
					id := fmt.Sprint("e", effect.Add(1))
					if _, err := l.BeginEffect(ctx, fences[i], id, d); err != nil {
						return err
					}
					_, err := l.ConfirmEffect(ctx, fences[i], id, d, "rcpt-"+id)
					return err
				})
			}
			b.StopTimer()
			n := float64(b.N * perRound)
			b.ReportMetric(n/rawTime.Seconds(), "insert/s")
			b.ReportMetric(n/ledgerTime.Seconds(), "auth/s")
			b.ReportMetric(rawTime.Seconds()/ledgerTime.Seconds(), "ratio")
			b.ReportMetric(rawTime.Seconds()/twoTime.Seconds(), "ceiling")
			after := l.Stats()
			if c := after.Commits - before.Commits; c > 0 {
				b.ReportMetric(float64(after.Writes-before.Writes)/float64(c), "writes/commit")
			}
		})
	}
}

// Lease renewal on PostgreSQL: RenewLease by W controllers at once, each
// renewing its own lease (one function call in a transaction of its own,
// outside the group commit), beside raw pgx doing one single-row UPDATE
// per transaction (an autocommit Exec) of a row of its own per writer, in
// alternating rounds of the same writers, as BenchmarkLedgerPostgresPaired
// does. renew/s and update/s are the rates, ratio renewals/s over raw
// updates/s; cpu-µs/renew is this process's CPU per renewal (client),
// server-cpu-µs/renew the PostgreSQL backends' (from /proc, when the
// server runs on this machine), and the same for the raw update. One op
// is one round of each.
//
//	cd bench && ZEO_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//		go test -run '^$' -bench LeaseRenew -count 5
func BenchmarkLeaseRenew(b *testing.B) {
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("set ZEO_TEST_POSTGRES_DSN to a PostgreSQL database to run the PostgreSQL ledger benchmarks")
	}
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("controllers=%d", w), func(b *testing.B) {
			ctx := context.Background()
			pool, schema := benchSchema(b, dsn, w)
			app := pgxUnquote(schema)
			if _, err := pool.Exec(ctx, "CREATE TABLE "+schema+".raw (k bigint PRIMARY KEY, expires timestamptz NOT NULL, n bigint NOT NULL)"); err != nil {
				b.Fatal(err)
			}
			l, err := postgres.New(ctx, pool, postgres.Options{Schema: app})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(ctx)
			const ttl = time.Minute
			for i := range w {
				if _, err := l.AcquireLease(ctx, fmt.Sprint("controller-", i), ttl); err != nil {
					b.Fatal(err)
				}
				if _, err := pool.Exec(ctx, "INSERT INTO "+schema+".raw VALUES ($1, now(), 0)", i); err != nil {
					b.Fatal(err)
				}
			}
			update := "UPDATE " + schema + ".raw SET expires = clock_timestamp() + interval '1 minute', n = n + 1 WHERE k = $1"
			perRound := 50 * w
			var rawTime, renewTime, rawCPU, renewCPU, rawServer, renewServer time.Duration
			server := true
			measure := func(wall, cpu, srv *time.Duration, fn func(i int) error) {
				c0 := processCPU()
				s0, ok0 := backendCPU(ctx, pool, app)
				*wall += rounds(b, w, perRound, fn)
				*cpu += processCPU() - c0
				s1, ok1 := backendCPU(ctx, pool, app)
				server = server && ok0 && ok1
				*srv += s1 - s0
			}
			b.ResetTimer()
			for range b.N {
				measure(&rawTime, &rawCPU, &rawServer, func(i int) error {
					_, err := pool.Exec(ctx, update, i)
					return err
				})
				measure(&renewTime, &renewCPU, &renewServer, func(i int) error {
					_, err := l.RenewLease(ctx, fmt.Sprint("controller-", i), ttl)
					return err
				})
			}
			b.StopTimer()
			n := float64(b.N * perRound)
			b.ReportMetric(n/rawTime.Seconds(), "update/s")
			b.ReportMetric(n/renewTime.Seconds(), "renew/s")
			b.ReportMetric(rawTime.Seconds()/renewTime.Seconds(), "ratio")
			b.ReportMetric(float64(rawCPU.Microseconds())/n, "cpu-µs/update")
			b.ReportMetric(float64(renewCPU.Microseconds())/n, "cpu-µs/renew")
			if server {
				b.ReportMetric(float64(rawServer.Microseconds())/n, "server-cpu-µs/update")
				b.ReportMetric(float64(renewServer.Microseconds())/n, "server-cpu-µs/renew")
			}
		})
	}
}

// What the lease check costs an authorization: BeginEffect then
// ConfirmEffect by W writers, each on its own operation, in alternating
// rounds on operations whose attempt has no controller (StartAttempt) and
// on operations launched for a controller holding a live lease
// (LaunchAttempt with ControllerID), whose every new effect looks the
// lease up in the statement that debits. ratio is owned authorizations/s
// over unowned ones.
//
//	cd bench && ZEO_TEST_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//		go test -run '^$' -bench LedgerPostgresOwned -benchtime 20x -count 5
func BenchmarkLedgerPostgresOwned(b *testing.B) {
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		b.Skip("set ZEO_TEST_POSTGRES_DSN to a PostgreSQL database to run the PostgreSQL ledger benchmarks")
	}
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			ctx := context.Background()
			pool, schema := benchSchema(b, dsn, w)
			l, err := postgres.New(ctx, pool, postgres.Options{Schema: pgxUnquote(schema)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(ctx)
			unowned := authorizeSetup(b, l, w)
			if _, err := l.AcquireLease(ctx, "controller", time.Hour); err != nil {
				b.Fatal(err)
			}
			owned := make([]ledger.Fence, w)
			scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
			for i := range w {
				op, launch := fmt.Sprint("owned-", i), canon.Sum([]byte("launch"))
				f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{
					Operation: ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
						RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man")), EffectBudget: 1 << 40},
					AttemptID: "a1", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: launch, ControllerID: "controller"})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: launch, PID: 1, SessionID: "s"}); err != nil {
					b.Fatal(err)
				}
				if _, err := l.Admit(ctx, f, canon.Sum([]byte("req"))); err != nil {
					b.Fatal(err)
				}
				owned[i] = f
			}
			d := canon.Sum([]byte("effect request"))
			perRound := 8 * w
			var effect atomic.Int64
			authorize := func(fences []ledger.Fence) func(i int) error {
				return func(i int) error {
					id := fmt.Sprint("e", effect.Add(1))
					if _, err := l.BeginEffect(ctx, fences[i], id, d); err != nil {
						return err
					}
					_, err := l.ConfirmEffect(ctx, fences[i], id, d, "rcpt-"+id)
					return err
				}
			}
			var unownedTime, ownedTime time.Duration
			b.ResetTimer()
			for range b.N {
				unownedTime += rounds(b, w, perRound, authorize(unowned))
				ownedTime += rounds(b, w, perRound, authorize(owned))
			}
			b.StopTimer()
			n := float64(b.N * perRound)
			b.ReportMetric(n/unownedTime.Seconds(), "unowned-auth/s")
			b.ReportMetric(n/ownedTime.Seconds(), "owned-auth/s")
			b.ReportMetric(unownedTime.Seconds()/ownedTime.Seconds(), "ratio")
		})
	}
}
