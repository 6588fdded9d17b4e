package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

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
	// A read-only open never creates the file.
	if err := checkLedgerFile(where, readOnly); err != nil {
		return nil, err
	}
	l, err := bolt.Open(where, bolt.Options{LockTimeout: 2 * time.Second, ReadOnly: readOnly})
	switch {
	case errors.Is(err, ledger.ErrCorrupt) && !looksLikeBolt(where):
		return nil, fmt.Errorf("%s is not a ledger file: it does not begin as a bolt database does (check -ledger; zeoctl invoke -ledger PATH or zeoctl demo -ledger PATH creates a ledger)", where)
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

// checkLedgerFile refuses a bolt ledger path bolt would refuse less
// clearly: one whose directory is missing (bolt creates the file, never
// its directory) or is not a directory, one naming a directory, and,
// with mustExist, one naming nothing. Each message names the path once.
func checkLedgerFile(path string, mustExist bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory, not a ledger file: give -ledger a file path", path)
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("ledger: %w", err)
	}
	dir := filepath.Dir(path)
	switch di, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the ledger's directory %s does not exist: create it first (zeoctl creates the ledger file, never its directory)", dir)
	case err != nil:
		return fmt.Errorf("ledger: %w", err)
	case !di.IsDir():
		return fmt.Errorf("the ledger's directory %s is not a directory", dir)
	case mustExist:
		return fmt.Errorf("there is no ledger file %s (zeoctl invoke -ledger PATH or zeoctl demo -ledger PATH creates one)", path)
	}
	return nil
}

// boltMagic is the number a bolt database's meta pages carry after their
// 16-byte page header.
const boltMagic = 0xED0CDAED

// looksLikeBolt reports whether the file at path begins as a bolt
// database does (its first meta page's magic number, in either byte
// order), so that a file that is not a ledger at all is told apart from
// a damaged ledger.
func looksLikeBolt(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return true // cannot tell: leave bolt's own answer
	}
	defer f.Close()
	var head [20]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return binary.LittleEndian.Uint32(head[16:]) == boltMagic || binary.BigEndian.Uint32(head[16:]) == boltMagic
}

func openPostgres(ctx context.Context, dsn string) (ledger.Ledger, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		// url's error quotes the DSN, password and all.
		return nil, fmt.Errorf("opening the ledger: the -ledger DSN is not a URL")
	}
	schema, rest, err := cutQueryParam(u.RawQuery, schemaParam)
	if err != nil {
		return nil, fmt.Errorf("opening the ledger: the -ledger DSN's %s: %w", schemaParam, err)
	}
	u.RawQuery = rest
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	l, err := postgres.Open(ctx, u.String(), postgres.Options{Schema: schema})
	if err != nil {
		if cerr := connectError(err); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("opening the ledger at %s: %w", displayLedger(dsn), err)
	}
	return l, nil
}

// cutQueryParam returns the value of the parameter key in the URL query
// raw (the first, when given more than once) and raw without every
// occurrence of it. The other parameters are kept byte for byte:
// re-encoding them would turn an escaped space into "+", which the
// PostgreSQL driver does not read as a space (options=-c%20name%3Dvalue
// would reach the server as "+name").
func cutQueryParam(raw, key string) (value, rest string, err error) {
	var kept []string
	found := false
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if k, err = url.QueryUnescape(k); err != nil {
			return "", "", err
		}
		if k != key {
			kept = append(kept, part)
			continue
		}
		if !found {
			if value, err = url.QueryUnescape(v); err != nil {
				return "", "", err
			}
			found = true
		}
	}
	return value, strings.Join(kept, "&"), nil
}

// connectError rewrites a failure to reach the PostgreSQL server, which
// postgres.Open reports from inside its first step (the schema
// migration), as what it is: where zeoctl could not connect, why, and
// what to do. It returns nil for every other error.
func connectError(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return nil
	}
	where := fmt.Sprintf("the PostgreSQL server at %s (user %s, database %s)", net.JoinHostPort(ce.Config.Host, strconv.Itoa(int(ce.Config.Port))), ce.Config.User, ce.Config.Database)
	var pe *pgconn.PgError
	var oe *net.OpError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("%s refused the connection: %s (SQLSTATE %s); check the user, password and database -ledger names", where, pe.Message, pe.Code)
	case errors.As(err, &oe):
		return fmt.Errorf("cannot connect to %s: %v; start the server, or point -ledger at the host and port it listens on", where, oe.Err)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("cannot connect to %s: no answer within %v; check that the server is up and reachable from here", where, openTimeout)
	}
	return fmt.Errorf("cannot connect to %s: %v", where, errors.Unwrap(ce))
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
