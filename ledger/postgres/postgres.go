package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// DefaultSchema is the PostgreSQL schema of the ledger when
// Options.Schema is empty.
const DefaultSchema = "zeo_ledger"

// DefaultMaxRetries is how many times a call is run again after a
// serialization failure or a deadlock when Options.MaxRetries is zero.
const DefaultMaxRetries = 8

// DefaultMaxBatch is the largest number of writes committed in one
// transaction when Options.MaxBatch is zero.
const DefaultMaxBatch = 256

// DefaultCommitters is the number of group-commit transactions in flight
// at once when Options.Committers is zero (fewer when the pool is smaller,
// see defaultCommitters). Two, not one per connection: every commit costs
// the server a WAL flush and the wake-ups of the backends waiting for it,
// so writes that share a transaction are cheaper than writes that run side
// by side, and two transactions in flight let one run its statements while
// the other waits for its flush. With 8 and 64 concurrent writers on a
// 2-core server, one transaction per pooled connection carried about 1.3
// writes each, and two carried 3 and 20 and committed markedly more
// writes per second (BENCHMARKS.md). A server with many cores and many
// concurrent writers may want more: set Options.Committers.
const DefaultCommitters = 2

// defaultCommitters is DefaultCommitters, but at most one fewer than the
// pool's connections, so that one stays for reads (a committer keeps its
// connection while writes keep coming), and at least one.
func defaultCommitters(pool *pgxpool.Pool) int {
	return max(1, min(DefaultCommitters, int(pool.Config().MaxConns)-1))
}

// maxSchemaBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1); a
// longer name would be silently truncated, and two ledgers could share it.
const maxSchemaBytes = 63

// Options configures [Open] and [New]. The zero value means all defaults.
type Options struct {
	// Schema is the PostgreSQL schema that holds the ledger's tables and
	// functions; Open creates it when it does not exist. Controllers that
	// share a ledger name the same schema; one database can hold several
	// ledgers in several schemas. Empty means DefaultSchema; names longer
	// than 63 bytes, or with U+0000 or invalid UTF-8, are refused.
	Schema string

	// MaxRetries bounds how many times a call is run again when PostgreSQL
	// rolled it back with a serialization failure (SQLSTATE 40001) or a
	// deadlock (40P01); no other error is retried. Zero means
	// DefaultMaxRetries; negative values are refused.
	MaxRetries int

	// MaxBatch is the most writes group-committed in one transaction (see
	// committer.go). Zero means DefaultMaxBatch; 1 disables group commit
	// (one transaction per write); negative values are refused.
	MaxBatch int

	// Committers is how many group-commit transactions may be in flight at
	// once, each on one pooled connection: more lets the server run more of
	// them in parallel, fewer makes batches larger and commits fewer. Zero
	// means DefaultCommitters, but at most one fewer than the pool's
	// maximum number of connections (pool_max_conns), and at least one;
	// negative values are refused.
	Committers int
}

// Ledger is a [ledger.Ledger] stored in PostgreSQL. It is safe for
// concurrent use, and any number of Ledgers, in any number of processes
// and machines, may share one database schema. Create it with [Open] or
// [New] and release it with Close.
type Ledger struct {
	pool     *pgxpool.Pool
	ownsPool bool // Close closes pool (Open made it)
	schema   string
	retries  int
	maxBatch int
	sql      statements

	reqs       chan *request  // writes for the committers
	quit       chan struct{}  // closed when no write can be queued or in flight any more
	committers sync.WaitGroup // the committer goroutines

	stats struct{ commits, writes, retries atomic.Int64 } // added to by the committers only

	mu       sync.RWMutex   // guards closed, and orders inflight.Add before Close's Wait
	closed   bool           // set by the first Close; no new calls after it
	inflight sync.WaitGroup // calls admitted and not finished

	closeOnce sync.Once     // starts the drainer goroutine
	drained   chan struct{} // closed when the last admitted call is done and the pool released
}

var _ ledger.Ledger = (*Ledger)(nil)

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value connection string, see pgxpool.ParseConfig; pool settings
// such as pool_max_conns go there too), brings the ledger's schema up to
// date and returns the ledger, which owns the connection pool. A malformed
// dsn or invalid options fail with an error wrapping [ledger.ErrInvalid];
// a schema written by a newer build with one wrapping [ErrSchemaTooNew].
// ctx bounds connecting and migrating only.
func Open(ctx context.Context, dsn string, opts Options) (*Ledger, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn's parse errors leave the password out.
		return nil, fmt.Errorf("ledger/postgres: open: %w: %w", ledger.ErrInvalid, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger/postgres: open: %w", err)
	}
	l, err := open(ctx, pool, true, opts)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return l, nil
}

// New returns the ledger in the database that pool connects to, after
// bringing its schema up to date. The caller keeps ownership of pool:
// Close does not close it, and pool must stay open until Close returns.
// Errors are those of [Open].
func New(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Ledger, error) {
	if pool == nil {
		return nil, fmt.Errorf("ledger/postgres: new: nil pool: %w", ledger.ErrInvalid)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return open(ctx, pool, false, opts)
}

func (o Options) validate() error {
	if n := len(o.Schema); n > maxSchemaBytes {
		return fmt.Errorf("ledger/postgres: schema name has %d bytes, PostgreSQL keeps at most %d: %w", n, maxSchemaBytes, ledger.ErrInvalid)
	}
	if !utf8.ValidString(o.Schema) || containsNUL(o.Schema) {
		return fmt.Errorf("ledger/postgres: schema name %q is not valid UTF-8 without U+0000: %w", o.Schema, ledger.ErrInvalid)
	}
	if o.MaxRetries < 0 || o.MaxBatch < 0 || o.Committers < 0 {
		return fmt.Errorf("ledger/postgres: MaxRetries %d, MaxBatch %d or Committers %d is negative: %w", o.MaxRetries, o.MaxBatch, o.Committers, ledger.ErrInvalid)
	}
	return nil
}

func containsNUL(s string) bool {
	for i := range len(s) {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func open(ctx context.Context, pool *pgxpool.Pool, owns bool, opts Options) (*Ledger, error) {
	schema := opts.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	if err := migrate(ctx, pool, schema, quoted); err != nil {
		return nil, err
	}
	l := &Ledger{
		pool:     pool,
		ownsPool: owns,
		schema:   schema,
		retries:  cmp.Or(opts.MaxRetries, DefaultMaxRetries),
		maxBatch: cmp.Or(opts.MaxBatch, DefaultMaxBatch),
		sql:      newStatements(quoted),
		quit:     make(chan struct{}),
		drained:  make(chan struct{}),
	}
	l.reqs = make(chan *request, l.maxBatch)
	for range cmp.Or(opts.Committers, defaultCommitters(pool)) {
		l.committers.Add(1)
		go l.committer()
	}
	return l, nil
}

// Schema returns the PostgreSQL schema the ledger lives in.
func (l *Ledger) Schema() string { return l.schema }

// enter admits a call unless ctx is done or Close has begun, in the order
// every backend checks them; every admitted call must call
// l.inflight.Done exactly once.
func (l *Ledger) enter(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger/postgres: %s: %w", op, err)
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return fmt.Errorf("ledger/postgres: %s: %w", op, ledger.ErrClosed)
	}
	l.inflight.Add(1)
	return nil
}

// Close stops accepting calls, waits for every call in flight, stops the
// committer goroutines and, if Open made the connection pool, closes it. If ctx ends first, Close
// returns an error wrapping [ledger.ErrCloseTimeout]: a write still in
// flight may yet commit, so its caller's answer is the only one to trust;
// the pool is closed when that call ends. PostgreSQL holds no lock for a
// ledger, so nothing else is kept. Close is safe to call more than once
// and concurrently.
func (l *Ledger) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.closeOnce.Do(func() {
		go func() { // the drainer: returns once the last admitted call is done
			l.inflight.Wait()
			close(l.quit)
			l.committers.Wait() // a batch whose callers all gave up may still be ending
			if l.ownsPool {
				l.pool.Close()
			}
			close(l.drained)
		}()
	})
	select {
	case <-l.drained:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ledger/postgres: close: %w (%w)", ledger.ErrCloseTimeout, context.Cause(ctx))
	}
}

// SQLSTATEs the ledger tells apart.
const (
	sqlstateSerialization = "40001"
	sqlstateDeadlock      = "40P01"
	// sqlstateCorrupt is raised by the ledger's functions when a stored
	// invariant is broken (see migrations/0001_ledger.sql).
	sqlstateCorrupt = "ZL001"
)

// notSentError marks a failure before the call reached PostgreSQL: no
// connection could be had.
type notSentError struct{ err error }

func (e notSentError) Error() string { return e.err.Error() }
func (e notSentError) Unwrap() error { return e.err }

// read runs sql and scans its one row into dest; no row is pgx.ErrNoRows.
func (l *Ledger) read(ctx context.Context, op, sql string, args []any, dest ...any) error {
	return l.run(ctx, op, func(c *pgxpool.Conn) error {
		return c.QueryRow(ctx, sql, args...).Scan(dest...)
	})
}

// run runs the read fn on a pooled connection. A run that PostgreSQL
// rolled back with a serialization failure or a deadlock runs again, at
// most l.retries times; any other error is returned at once (readErr).
// pgx.ErrNoRows is returned as is.
func (l *Ledger) run(ctx context.Context, op string, fn func(*pgxpool.Conn) error) error {
	for try := 0; ; try++ {
		err := l.once(ctx, fn)
		if err == nil || errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if try < l.retries && retryable(err) && ctx.Err() == nil {
			continue
		}
		return readErr(ctx, op, err)
	}
}

func (l *Ledger) once(ctx context.Context, fn func(*pgxpool.Conn) error) error {
	conn, err := l.pool.Acquire(ctx)
	if err != nil {
		return notSentError{err}
	}
	defer conn.Release()
	return fn(conn)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == sqlstateSerialization || pe.Code == sqlstateDeadlock)
}

// writeErr turns the failure of a write into the ledger's terms:
//
//   - ErrCorrupt when a function found a stored invariant broken;
//   - ErrNotApplied when the call never reached the server, or the server
//     answered it with an error (PostgreSQL then rolled the implicit
//     transaction back);
//   - ErrOutcomeUnknown otherwise: the call was sent and the connection
//     failed or was cancelled before the answer arrived, so the commit may
//     or may not have happened. Repeating the call returns the recorded
//     outcome.
//
// ctx's error, when ctx is done, is wrapped too.
func writeErr(ctx context.Context, op string, err error, retries int) error {
	var pe *pgconn.PgError
	isPG := errors.As(err, &pe)
	var ns notSentError
	var out error
	switch {
	case isPG && pe.Code == sqlstateCorrupt:
		out = fmt.Errorf("ledger/postgres: %s: %s: %w", op, pe.Message, ledger.ErrCorrupt)
	case errors.As(err, &ns) || pgconn.SafeToRetry(err):
		out = fmt.Errorf("ledger/postgres: %s: %w (not sent): %w", op, ledger.ErrNotApplied, err)
	case isPG && severity(pe) == "ERROR":
		what := "refused by the server"
		if retryable(err) {
			what = fmt.Sprintf("rolled back %d times", retries+1)
		}
		out = fmt.Errorf("ledger/postgres: %s: %w (%s): %w", op, ledger.ErrNotApplied, what, err)
	default:
		out = fmt.Errorf("ledger/postgres: %s: %w (the connection failed after the call was sent; repeat the call to learn whether it committed): %w", op, ledger.ErrOutcomeUnknown, err)
	}
	return withCtx(ctx, out)
}

func notApplied(ctx context.Context, op string) error {
	return fmt.Errorf("ledger/postgres: %s: %w: %w", op, ledger.ErrNotApplied, context.Cause(ctx))
}

func outcomeUnknown(ctx context.Context, op string) error {
	return withCtx(ctx, fmt.Errorf("ledger/postgres: %s: %w (the write was sent; repeat the call to learn whether it committed): %w", op, ledger.ErrOutcomeUnknown, context.Cause(ctx)))
}

func readErr(ctx context.Context, op string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == sqlstateCorrupt {
		return fmt.Errorf("ledger/postgres: %s: %s: %w", op, pe.Message, ledger.ErrCorrupt)
	}
	return withCtx(ctx, fmt.Errorf("ledger/postgres: %s: %w", op, err))
}

// withCtx makes err wrap ctx's error when ctx is done and err does not
// already, so that callers can test for context.Canceled and
// context.DeadlineExceeded whatever layer noticed the end first.
func withCtx(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", err, cerr)
	}
	return err
}

// severity is the error's severity in English: FATAL and PANIC end the
// session, and with it the certainty about the transaction's fate.
func severity(pe *pgconn.PgError) string {
	if pe.SeverityUnlocalized != "" {
		return pe.SeverityUnlocalized
	}
	return pe.Severity
}
