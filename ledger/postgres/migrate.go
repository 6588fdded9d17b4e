package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrSchemaTooNew is returned by [Open] and [New] when the ledger's schema
// was migrated by a newer build than this one: this build does not know
// the tables' meaning and refuses to touch them. Upgrade this controller.
var ErrSchemaTooNew = errors.New("ledger/postgres: ledger schema is newer than this build")

// The migrations are the files migrations/NNNN_name.sql, applied in
// order; NNNN is the schema version each one brings the ledger to. They
// are never edited once released: a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// schemaPlaceholder stands for the quoted schema name in the migrations.
const schemaPlaceholder = "__SCHEMA__"

// migrations returns the embedded migrations in version order, checking
// that versions run 1, 2, … without a gap.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names { // fs.Glob returns them sorted
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != len(out)+1 {
			return nil, fmt.Errorf("ledger/postgres: migration %s: want version %04d next", base, len(out)+1)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	return out, nil
}

// SchemaVersion is the schema version this build writes and reads.
const SchemaVersion = 7

// migrate brings schema up to SchemaVersion in one transaction, under a
// transaction-scoped advisory lock keyed by the schema's name: controllers
// that open the same ledger at once take turns, and the second finds the
// work done. A session-level lock would outlive a failed transaction on a
// pooled connection; the transaction-scoped one ends with it, whatever
// happens.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema, quoted string) error {
	return migrateTo(ctx, pool, schema, quoted, SchemaVersion)
}

// migrateTo is migrate to version target, at most SchemaVersion; the
// tests use it to make ledgers as older builds left them.
func migrateTo(ctx context.Context, pool *pgxpool.Pool, schema, quoted string, target int) error {
	steps, err := migrations()
	if err != nil {
		return err
	}
	if len(steps) != SchemaVersion {
		return fmt.Errorf("ledger/postgres: %d migrations embedded for schema version %d", len(steps), SchemaVersion)
	}
	if target < 1 || target > SchemaVersion {
		return fmt.Errorf("ledger/postgres: no schema version %d", target)
	}
	steps = steps[:target]
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(schema)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoted); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+quoted+`.schema_version (
			one boolean PRIMARY KEY DEFAULT true CHECK (one),
			version integer NOT NULL)`); err != nil {
			return err
		}
		var have int
		err := tx.QueryRow(ctx, "SELECT version FROM "+quoted+".schema_version").Scan(&have)
		if errors.Is(err, pgx.ErrNoRows) {
			have = 0
		} else if err != nil {
			return err
		}
		if have > target {
			return fmt.Errorf("%w: schema %q is at version %d, this build knows versions up to %d; upgrade this controller",
				ErrSchemaTooNew, schema, have, target)
		}
		for _, m := range steps[have:] {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(m.sql, schemaPlaceholder, quoted)); err != nil {
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if have == target {
			return nil
		}
		_, err = tx.Exec(ctx, "INSERT INTO "+quoted+".schema_version (version) VALUES ($1) ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version", target)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrSchemaTooNew) {
			return err
		}
		return fmt.Errorf("ledger/postgres: migrating schema %q: %w", schema, err)
	}
	return nil
}

// lockKey is the advisory lock of a schema's migrations: a hash of its
// name, so that ledgers in different schemas migrate independently.
func lockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("runtimeipc ledger migrations\x00"))
	h.Write([]byte(schema))
	return int64(h.Sum64())
}
