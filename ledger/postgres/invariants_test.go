package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// tableInvariants are SQL queries over a ledger's tables, each returning
// one row per violation of the invariant it is named after. They read the
// tables directly, not through the ledger, so that they also catch what
// the ledger's own reads would hide. __S__ is the quoted schema.
var tableInvariants = []struct{ name, sql string }{
	{"budget debited exactly once per recorded effect, never past the budget", `
		SELECT o.op_pk FROM __S__.operations o
		LEFT JOIN (SELECT op_pk, count(*) AS n FROM __S__.effects GROUP BY op_pk) e ON e.op_pk = o.op_pk
		WHERE o.effects_used <> coalesce(e.n, 0) OR o.effects_used > o.effect_budget`},
	{"effect ordinals are 1..n", `
		SELECT op_pk FROM __S__.effects GROUP BY op_pk
		HAVING count(DISTINCT ordinal) <> count(*) OR min(ordinal) <> 1 OR max(ordinal) <> count(*)`},
	{"one authorization per logical effect", `
		SELECT authorization_id FROM __S__.effects GROUP BY authorization_id HAVING count(*) > 1`},
	{"attempt generations are 1..n and the last one is current", `
		SELECT o.op_pk FROM __S__.operations o
		LEFT JOIN (SELECT op_pk, count(*) AS n, max(generation) AS g, min(generation) AS lo FROM __S__.attempts GROUP BY op_pk) a
			ON a.op_pk = o.op_pk
		LEFT JOIN __S__.attempts cur ON cur.op_pk = o.op_pk AND cur.generation = o.generation
		WHERE coalesce(a.n, 0) <> o.generation OR (a.n > 0 AND (a.lo <> 1 OR a.g <> o.generation))
			OR (o.generation > 0 AND cur.attempt_id IS DISTINCT FROM o.attempt_id)`},
	{"effects were authorized by an admitted attempt of their operation", `
		SELECT e.op_pk, e.effect_id FROM __S__.effects e
		LEFT JOIN __S__.attempts a ON a.op_pk = e.op_pk AND a.generation = e.generation
		WHERE a.attempt_id IS DISTINCT FROM e.attempt_id OR NOT coalesce(a.admitted, false)`},
	{"admitted attempts redeemed a bootstrap id of their own", `
		SELECT a.op_pk, a.generation FROM __S__.attempts a
		WHERE a.admitted AND NOT EXISTS (SELECT 1 FROM __S__.bootstraps b
			WHERE b.op_pk = a.op_pk AND b.generation = a.generation AND b.redeemed_pid IS NOT NULL)`},
	{"effect state and outcome agree", `
		SELECT op_pk, effect_id FROM __S__.effects
		WHERE (state = 'confirmed') <> (receipt_id IS NOT NULL) OR (state = 'not_consumed') <> (reason IS NOT NULL)`},
	{"a result exactly when completed, by an admitted attempt, with its artifact in its operation", `
		SELECT o.op_pk FROM __S__.operations o
		LEFT JOIN __S__.attempts a ON a.op_pk = o.op_pk AND a.generation = o.result_generation
		LEFT JOIN __S__.artifacts r ON r.ref = o.result_ref
		WHERE (o.state = 'completed') <> (o.result_digest IS NOT NULL)
			OR (o.result_digest IS NOT NULL AND (NOT coalesce(a.admitted, false) OR r.op_pk IS DISTINCT FROM o.op_pk))`},
	{"an operation's controller is its current attempt's", `
		SELECT o.op_pk FROM __S__.operations o
		LEFT JOIN __S__.attempts cur ON cur.op_pk = o.op_pk AND cur.generation = o.generation
		WHERE o.generation > 0 AND cur.controller_id IS DISTINCT FROM o.controller_id
			OR o.generation = 0 AND o.controller_id IS NOT NULL`},
	{"an effect's controller is its authorizing attempt's", `
		SELECT e.op_pk, e.effect_id FROM __S__.effects e
		JOIN __S__.attempts a ON a.op_pk = e.op_pk AND a.generation = e.generation
		WHERE a.controller_id IS DISTINCT FROM e.controller_id`},
	{"every controller an attempt names has a lease", `
		SELECT a.op_pk, a.generation FROM __S__.attempts a
		WHERE a.controller_id IS NOT NULL
			AND NOT EXISTS (SELECT 1 FROM __S__.leases l WHERE l.controller_id = a.controller_id)`},
	{"leases are well formed", `
		SELECT controller_id FROM __S__.leases WHERE expires < acquired OR ttl_nsec < 1000000 OR ttl_nsec > 3600000000000`},
	{"every artifact is an accepted result", `
		SELECT r.ref FROM __S__.artifacts r
		WHERE NOT EXISTS (SELECT 1 FROM __S__.operations o WHERE o.result_ref = r.ref)`},
}

// checkTables runs tableInvariants over schema and fails t for every
// violation found.
func checkTables(t testing.TB, dsn, schema string) {
	t.Helper()
	if v := tableViolations(t, dsn, schema); len(v) > 0 {
		t.Errorf("invariants broken in the tables of %s:\n%s", schema, strings.Join(v, "\n"))
	}
}

func tableViolations(t testing.TB, dsn, schema string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var out []string
	for _, inv := range tableInvariants {
		rows, err := c.Query(ctx, strings.ReplaceAll(inv.sql, "__S__", pgx.Identifier{schema}.Sanitize()))
		if err != nil {
			t.Fatalf("%s: %v", inv.name, err)
		}
		n := 0
		for rows.Next() {
			n++
			if vals, err := rows.Values(); err == nil && n <= 3 {
				out = append(out, fmt.Sprintf("%s: %v", inv.name, vals))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", inv.name, err)
		}
		if n > 3 {
			out = append(out, fmt.Sprintf("%s: %d violations in all", inv.name, n))
		}
	}
	return out
}

// The invariant checks can fail: each tampering below, which the ledger
// never makes, is found.
func TestTableInvariantsFindTampering(t *testing.T) {
	dsn := testDSN(t)
	for _, tamper := range []struct{ name, sql string }{
		{"duplicate ordinal", "UPDATE __S__.effects SET ordinal = 1"},
		{"effect of an attempt that was not admitted", "UPDATE __S__.attempts SET admitted = false"},
		{"lost debit", "UPDATE __S__.operations SET effects_used = effects_used - 1 WHERE effects_used > 0"},
		{"effect without its attempt", "UPDATE __S__.effects SET attempt_id = 'someone else'"},
		{"effect under another controller", "UPDATE __S__.effects SET controller_id = 'c'"},
		{"operation under another controller", "UPDATE __S__.operations SET controller_id = 'c'"},
		{"lease of no ttl", "INSERT INTO __S__.leases (controller_id, acquired, expires, ttl_nsec) VALUES ('c', now(), now(), 1)"},
	} {
		t.Run(tamper.name, func(t *testing.T) {
			l := openTest(t)
			f := readyOp(t, l, "op")
			for _, id := range []string{"e1", "e2"} {
				if _, err := l.BeginEffect(bg, f, id, digest(id)); err != nil {
					t.Fatal(err)
				}
			}
			closeLedger(t, l)
			if v := tableViolations(t, dsn, l.Schema()); len(v) > 0 {
				t.Fatalf("violations before tampering: %v", v)
			}
			execSQL(t, dsn, strings.ReplaceAll(tamper.sql, "__S__", pgx.Identifier{l.Schema()}.Sanitize()))
			if v := tableViolations(t, dsn, l.Schema()); len(v) == 0 {
				t.Fatalf("tampering %q went unnoticed", tamper.sql)
			}
		})
	}
}

// The tables themselves refuse rows of a shape the ledger never writes
// (their CHECK constraints, one function call per table since schema
// version 6): each write below fails with check_violation, and the
// control writes, of shapes the ledger does write, pass.
func TestTablesRefuseBrokenRows(t *testing.T) {
	dsn := testDSN(t)
	l := openTest(t)
	f := readyOp(t, l, "op")
	if _, err := l.BeginEffect(bg, f, "e1", digest("e1")); err != nil {
		t.Fatal(err)
	}
	closeLedger(t, l)
	s := pgx.Identifier{l.Schema()}.Sanitize()
	c, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(bg)
	try := func(sql string) error {
		tx, err := c.Begin(bg)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(bg) //nolint:errcheck // nothing is kept
		tag, err := tx.Exec(bg, strings.ReplaceAll(sql, "__S__", s))
		if err == nil && tag.RowsAffected() != 1 {
			t.Fatalf("%s touched %d rows, want 1", sql, tag.RowsAffected())
		}
		return err
	}
	for _, sql := range []string{
		"UPDATE __S__.operations SET effects_used = effect_budget + 1",
		"UPDATE __S__.operations SET effects_used = -1",
		"UPDATE __S__.operations SET effect_budget = -1, effects_used = 0",
		"UPDATE __S__.operations SET state = 'paused'",
		"UPDATE __S__.operations SET state = 'completed'",
		"UPDATE __S__.operations SET result_digest = 'sha256:x'",
		"UPDATE __S__.operations SET deadline_sec = 1, deadline_nsec = NULL",
		"UPDATE __S__.operations SET deadline_sec = 1, deadline_nsec = 1000000000",
		"UPDATE __S__.operations SET attempt_id = NULL",
		"UPDATE __S__.operations SET cancel_reason = 'why'",
		"UPDATE __S__.effects SET state = 'lost'",
		"UPDATE __S__.effects SET state = 'confirmed'",
		"UPDATE __S__.effects SET receipt_id = 'r'",
		"UPDATE __S__.effects SET state = 'not_consumed'",
		"UPDATE __S__.effects SET state = 'not_consumed', reason = 'bored'",
		"UPDATE __S__.effects SET ordinal = 0",
	} {
		var pe *pgconn.PgError
		if err := try(sql); !errors.As(err, &pe) || pe.Code != "23514" {
			t.Errorf("%s: got %v, want a check_violation", sql, err)
		}
	}
	for _, sql := range []string{
		"UPDATE __S__.operations SET effects_used = effect_budget, deadline_sec = 1, deadline_nsec = 999999999",
		"UPDATE __S__.operations SET state = 'cancelled', cancel_reason = 'why'",
		"UPDATE __S__.effects SET state = 'confirmed', receipt_id = 'r'",
		"UPDATE __S__.effects SET state = 'not_consumed', reason = 'refused'",
		"UPDATE __S__.effects SET state = 'unknown'",
	} {
		if err := try(sql); err != nil {
			t.Errorf("%s: %v, want it accepted", sql, err)
		}
	}
}
