package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// closeTimeout bounds the wait for a ledger's writes in flight at exit.
const closeTimeout = 30 * time.Second

// openTimeout bounds connecting to a PostgreSQL ledger and migrating its
// schema.
const openTimeout = 30 * time.Second

// schemaParam is the DSN query parameter that names the ledger's schema;
// zeoctl takes it out of the DSN before connecting.
const schemaParam = "ledger_schema"

// isDSN reports whether a -ledger value names a PostgreSQL ledger rather
// than a bolt file.
func isDSN(where string) bool {
	return strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://")
}

// openLedger opens the ledger -ledger names: a postgres:// (or
// postgresql://) DSN, whose ledger_schema parameter names the schema
// (default postgres.DefaultSchema), or else a bolt ledger file, created
// if needed.
func openLedger(ctx context.Context, where string) (ledger.Ledger, error) {
	return openLedgerMode(ctx, where, false)
}

// openLedgerReadOnly opens the ledger where names for inspection: a bolt
// file read-only, under a shared lock (bolt.Options.ReadOnly), so that
// any number of inspections share it; a controller holding the file
// exclusively makes it fail at once with who holds it. A PostgreSQL
// ledger is opened as openLedger does: it has many readers anyway.
func openLedgerReadOnly(ctx context.Context, where string) (ledger.Ledger, error) {
	return openLedgerMode(ctx, where, true)
}

func openLedgerMode(ctx context.Context, where string, readOnly bool) (ledger.Ledger, error) {
	if isDSN(where) {
		return openPostgres(ctx, where)
	}
	l, err := bolt.Open(where, bolt.Options{LockTimeout: 2 * time.Second, ReadOnly: readOnly})
	switch {
	case errors.Is(err, ledger.ErrLocked) && readOnly:
		return nil, fmt.Errorf("opening the ledger read-only: %w", err)
	case errors.Is(err, ledger.ErrLocked):
		return nil, fmt.Errorf("%w: another process (a controller, or another zeoctl) owns this ledger; stop it or wait for it to finish", err)
	case errors.Is(err, bolt.ErrReadOnly):
		return nil, fmt.Errorf("opening the ledger read-only: %w; run 'zeoctl ledger upgrade -ledger %s' once", err, where)
	case err != nil:
		return nil, fmt.Errorf("opening the ledger: %w", err)
	}
	return l, nil
}

func openPostgres(ctx context.Context, dsn string) (ledger.Ledger, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url's error quotes the DSN, password and all.
		return nil, fmt.Errorf("opening the ledger: the -ledger DSN is not a URL")
	}
	q := u.Query()
	schema := q.Get(schemaParam)
	q.Del(schemaParam)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	l, err := postgres.Open(ctx, u.String(), postgres.Options{Schema: schema})
	if err != nil {
		return nil, fmt.Errorf("opening the ledger at %s: %w", displayLedger(dsn), err)
	}
	return l, nil
}

// ledgerKind names the backend -ledger where selects.
func ledgerKind(where string) string {
	if isDSN(where) {
		return "PostgreSQL"
	}
	return "bolt"
}

// displayLedger is where for people: a DSN without its password.
func displayLedger(where string) string {
	if !isDSN(where) {
		return where
	}
	u, err := url.Parse(where)
	if err != nil {
		return "(a PostgreSQL DSN)"
	}
	return u.Redacted()
}

// closeLedger closes l, bounded; a failure is joined to err.
// closeSupervisor closes s within closeTimeout, before its ledger is
// closed: its lease is released only once nothing of it can still write.
// A failure is stored in *err unless err is nil or holds one already.
func closeSupervisor(s *supervise.Supervisor, err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := s.Close(ctx); cerr != nil && err != nil && *err == nil {
		*err = fmt.Errorf("closing the supervisor: %w", cerr)
	}
}

func closeLedger(l ledger.Ledger, err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := l.Close(ctx); cerr != nil && *err == nil {
		*err = fmt.Errorf("closing the ledger: %w", cerr)
	}
}
