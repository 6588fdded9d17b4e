package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrateTo brings the ledger in schema (created if missing) to schema
// version v, as a build of that version left it: the tests make older
// ledgers with it.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, v int) error {
	return migrateTo(ctx, pool, schema, pgx.Identifier{schema}.Sanitize(), v)
}
