package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// openTagged opens a ledger in a fresh schema on a pool whose sessions
// carry a unique application_name, so that the test can find them in
// pg_stat_activity, and the other session settings params names (name,
// value, …). The pool is closed when t ends.
func openTagged(t *testing.T, params ...string) (l *postgres.Ledger, app string) {
	t.Helper()
	dsn := testDSN(t)
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	app = "zeo-test-" + hex.EncodeToString(tag[:])
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	for i := 0; i+1 < len(params); i += 2 {
		cfg.ConnConfig.RuntimeParams[params[i]] = params[i+1]
	}
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	l, err = postgres.New(bg, pool, postgres.Options{Schema: newSchema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	return l, app
}

// waitLockWait waits until a session of app waits for a lock.
func waitLockWait(t *testing.T, admin *pgx.Conn, app string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	for {
		var n int
		err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", app).Scan(&n)
		if err != nil {
			t.Fatalf("waiting for %s to wait for a lock: %v", app, err)
		}
		if n > 0 {
			return
		}
	}
}

func quoted(l *postgres.Ledger) string { return pgx.Identifier{l.Schema()}.Sanitize() }

// A deadlock rolls the write back and the ledger runs it again: the
// caller sees only the outcome.
func TestDeadlockRetried(t *testing.T) {
	dsn := testDSN(t)
	// PostgreSQL breaks a deadlock in the session whose deadlock_timeout
	// runs out first once both wait; the other session's is far longer,
	// so that the ledger's is the one broken (setting them needs a
	// superuser, which these tests are).
	l, app := openTagged(t, "deadlock_timeout", "3s")
	defer closeLedger(t, l)
	f := readyOp(t, l, "op")
	admin, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)
	if _, err := admin.Exec(bg, "SET deadlock_timeout = '10min'"); err != nil {
		t.Fatal(err)
	}
	tx, err := admin.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(bg)
	// The other transaction inserts the effect's key first (uncommitted)...
	if _, err := tx.Exec(bg, `INSERT INTO `+quoted(l)+`.effects (op_pk, effect_id, request_digest, authorization_id, state, attempt_id, generation, ordinal)
		SELECT op_pk, 'e1', $1, 'auth-other', 'authorized', 'a1', 1, 1 FROM `+quoted(l)+`.operations WHERE operation_id = 'op'`, string(digest("e1"))); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		g   ledger.EffectGrant
		err error
	}
	done := make(chan answer, 1)
	go func() {
		g, err := l.BeginEffect(bg, f, "e1", digest("e1"))
		done <- answer{g, err}
	}()
	// ...BeginEffect locks the operation and waits for that key, and the
	// other transaction then asks for the operation's row: a deadlock,
	// which PostgreSQL breaks by rolling back the one that waited first.
	waitLockWait(t, admin, app)
	if _, err := tx.Exec(bg, "SELECT 1 FROM "+quoted(l)+".operations WHERE operation_id = 'op' FOR UPDATE"); err != nil {
		t.Fatalf("the other transaction was chosen as the deadlock victim: %v", err)
	}
	if err := tx.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil || a.g.Redelivery || a.g.Effect.AuthorizationID == "auth-other" {
		t.Fatalf("BeginEffect after a deadlock = %+v, %v; want a new authorization", a.g, a.err)
	}
	// Its first rerun may lock the operation before the other
	// transaction does and deadlock again; it is rerun again.
	if st := l.Stats(); st.Retries < 1 {
		t.Fatalf("Stats().Retries = %d, want at least 1", st.Retries)
	}
	checkTables(t, dsn, l.Schema())
}

// Any other error is returned at once, typed: here a stored invariant
// broken by hand.
func TestCorruptionNotRetried(t *testing.T) {
	dsn := testDSN(t)
	l := openTest(t)
	defer closeLedger(t, l)
	readyOp(t, l, "op")
	// A current attempt without its attempt row.
	execSQL(t, dsn, "UPDATE "+quoted(l)+".operations SET generation = 2, attempt_id = 'ghost' WHERE operation_id = 'op'")
	_, err := l.Admit(bg, ledger.Fence{Scope: testScope, OperationID: "op", AttemptID: "ghost", Generation: 2}, digest("request"))
	if !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("Admit of an attempt without its row: err = %v, want ErrCorrupt", err)
	}
	if st := l.Stats(); st.Retries != 0 {
		t.Fatalf("Stats().Retries = %d, want 0", st.Retries)
	}
}

// A write that cannot reach the server is not applied, and says so; the
// same write once the server is back is applied as new.
func TestUnreachableNotApplied(t *testing.T) {
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	direct, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	f := readyOp(t, direct, "op")
	closeLedger(t, direct)

	p, cfg := proxied(t, dsn)
	p.unlimited.Store(true)
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, err := postgres.New(bg, pool, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, l)
	p.refuse.Store(true)
	pool.Reset() // no connection left: the next write needs a new one
	_, err = l.BeginEffect(bg, f, "e1", digest("e1"))
	if !errors.Is(err, ledger.ErrNotApplied) {
		t.Fatalf("BeginEffect with the server unreachable: err = %v, want ErrNotApplied", err)
	}
	p.refuse.Store(false)
	g, err := l.BeginEffect(bg, f, "e1", digest("e1"))
	if err != nil || g.Redelivery {
		t.Fatalf("BeginEffect once the server is back = %+v, %v; want a new authorization", g, err)
	}
}

// Close waits for calls in flight, bounded by its context: a call blocked
// in the database makes it return ErrCloseTimeout, and a later Close
// finishes once the call has ended.
func TestCloseTimeout(t *testing.T) {
	dsn := testDSN(t)
	l, app := openTagged(t)
	f := readyOp(t, l, "op")
	admin, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)
	tx, err := admin.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(bg)
	if _, err := tx.Exec(bg, "SELECT 1 FROM "+quoted(l)+".operations WHERE operation_id = 'op' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.BeginEffect(bg, f, "e1", digest("e1"))
		done <- err
	}()
	waitLockWait(t, admin, app)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := l.Close(ctx); !errors.Is(err, ledger.ErrCloseTimeout) {
		t.Fatalf("Close with a write in flight and a done context: err = %v, want ErrCloseTimeout", err)
	}
	if _, err := l.Operation(bg, testScope, "op"); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("Operation after Close began: err = %v, want ErrClosed", err)
	}
	if err := tx.Rollback(bg); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the write in flight: %v", err)
	}
	closeLedger(t, l)
}

// Identifiers are any valid UTF-8, U+0000 included, and are listed in
// byte order.
func TestIdentifiersAreBytes(t *testing.T) {
	l := openTest(t)
	defer closeLedger(t, l)
	s := ledger.Scope{OrganizationID: "org\x00a", ProjectID: "p"}
	for _, op := range []string{"b\x00", "a\x00z", "\u00e9", "a"} {
		sp := opSpec(s, op, 1)
		sp.CapabilityID = "cap\x00" + op
		if _, err := l.CreateOperation(bg, sp); err != nil {
			t.Fatalf("CreateOperation(%q): %v", op, err)
		}
		v, err := l.Operation(bg, s, op)
		if err != nil || v.Operation.CapabilityID != sp.CapabilityID {
			t.Fatalf("Operation(%q) = %+v, %v", op, v.Operation, err)
		}
	}
	got, err := l.ListOperations(bg, ledger.OperationQuery{Scope: s})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range got {
		ids = append(ids, o.OperationID)
	}
	want := []string{"a", "a\x00z", "b\x00", "\u00e9"}
	if len(ids) != len(want) {
		t.Fatalf("ListOperations = %q, want %q", ids, want)
	}
	for i := range ids {
		if ids[i] != want[i] {
			t.Fatalf("ListOperations = %q, want %q", ids, want)
		}
	}
}
