package postgres

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Group commit. A write is one call of one of the ledger's SQL functions;
// it does not need a transaction of its own. Options.Committers goroutines
// (committers) each take the first queued write, then every write already
// queued behind it (up to Options.MaxBatch) without waiting, and send them
// as one pipeline: one round trip, one implicit transaction (PostgreSQL
// commits a pipeline's statements together at its Sync), one commit. While
// it runs, new writes queue up and form the next batch, so the batch size
// follows the load without a timer; a lone write goes alone.
//
// Within a batch the writes run in the order of their operations' keys, so
// that two batches running at once lock operation rows in the same order
// and cannot deadlock over them; writes of one operation keep the order
// they were queued in. Each write sees the writes before it, exactly as if
// they had committed one by one in that order: the writes of a batch were
// all waiting at once, so any order is one they could have had.
//
// A refusal is an answer, not an error: the functions return it as a code
// and write nothing, so it does not disturb the batch. If a statement fails
// (an error from the server), the whole transaction is rolled back, and
// each write of the batch runs again alone, so that the failure stays with
// its write. A batch rolled back by a serialization failure or a deadlock
// runs again whole, at most Options.MaxRetries times. A connection that
// fails once the batch was sent leaves every write of it with an unknown
// outcome.
//
// A caller whose context ends while its write is queued takes it back (not
// applied); once the write is in a batch, the caller gets an unknown
// outcome, and the batch's own context is cancelled when every caller in it
// has given up, so that a hung connection does not hold a committer for
// ever.

const (
	stateQueued    int32 = iota // waiting in l.reqs
	stateTaken                  // in a batch; the caller must wait or give up on the outcome
	stateAbandoned              // the caller gave up first; never run
)

// request is one write waiting for a committer.
type request struct {
	op    string // the method, for errors
	key   opKey  // the operation, for the batch's lock order
	sql   string
	args  []any
	dest  []any
	state atomic.Int32
	batch *batch        // set before state becomes stateTaken
	err   error         // written by the committer before done is closed
	done  chan struct{} // closed by the committer
}

// opKey is an operation's key in the order batches lock operations.
type opKey struct{ org, project, op string }

func compareKeys(a, b opKey) int {
	return cmp.Or(cmp.Compare(a.org, b.org), cmp.Compare(a.project, b.project), cmp.Compare(a.op, b.op))
}

// batch is what the callers of a running batch share: its context, which
// is cancelled once all of them have given up.
type batch struct {
	cancel  context.CancelFunc
	waiting atomic.Int32
}

// giveUp records that one caller of b stopped waiting.
func (b *batch) giveUp() {
	if b.waiting.Add(-1) == 0 {
		b.cancel()
	}
}

// write queues one function call and waits for its batch to commit, or
// for ctx to end.
func (l *Ledger) write(ctx context.Context, op string, key opKey, sql string, args []any, dest ...any) error {
	r := &request{op: op, key: key, sql: sql, args: args, dest: dest, done: make(chan struct{})}
	select {
	case l.reqs <- r:
	case <-ctx.Done():
		return notApplied(ctx, op)
	}
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return notApplied(ctx, op)
		}
		r.batch.giveUp()
		return outcomeUnknown(ctx, op)
	}
}

// committer is one of the goroutines that run batches; it returns when
// l.quit is closed.
func (l *Ledger) committer() {
	defer l.committers.Done()
	// conn is the committer's connection while writes keep coming: its
	// prepared statements and the session's compiled functions stay warm.
	// It goes back to the pool whenever the queue is empty, so that an
	// idle connection is checked by the pool before its next use.
	c := &committerConn{pool: l.pool}
	defer c.put()
	queued := make([]*request, 0, l.maxBatch)
	for {
		var first *request
		select {
		case first = <-l.reqs:
		default:
			c.put()
			select {
			case first = <-l.reqs:
			case <-l.quit:
				return
			}
		}
		queued = append(queued[:0], first)
	fill:
		for len(queued) < l.maxBatch {
			select {
			case r := <-l.reqs:
				queued = append(queued, r)
			default:
				break fill
			}
		}
		l.commit(c, queued)
		clear(queued)
		// Let the writers just released run, and queue their next write,
		// before collecting the next batch (as ledger/bolt's committer
		// does): otherwise writers that write in a loop split into cohorts
		// that alternate batches.
		runtime.Gosched()
	}
}

// committerConn is a committer's pooled connection, held between batches.
type committerConn struct {
	pool *pgxpool.Pool
	conn *pgxpool.Conn // nil when none is held
}

// get returns the held connection, acquiring one if none is held.
func (c *committerConn) get(ctx context.Context) (*pgxpool.Conn, error) {
	if c.conn == nil {
		conn, err := c.pool.Acquire(ctx)
		if err != nil {
			return nil, notSentError{err}
		}
		c.conn = conn
	}
	return c.conn, nil
}

// done gives the connection back after a failure that may have left it
// closed or inside a transaction (the pool then discards it).
func (c *committerConn) done(err error) {
	if err != nil && c.conn != nil && (c.conn.Conn().IsClosed() || c.conn.Conn().PgConn().TxStatus() != 'I') {
		c.put()
	}
}

// put returns the held connection to the pool.
func (c *committerConn) put() {
	if c.conn != nil {
		c.conn.Release()
		c.conn = nil
	}
}

// commit runs one batch to completion and releases every request in it.
func (l *Ledger) commit(c *committerConn, queued []*request) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &batch{cancel: cancel}
	live := make([]*request, 0, len(queued))
	for _, r := range queued {
		r.batch = b
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	b.waiting.Store(int32(len(live)))
	slices.SortStableFunc(live, func(x, y *request) int { return compareKeys(x.key, y.key) })
	var err error
	for try := 0; ; try++ {
		var failed bool
		failed, err = runBatch(ctx, c, live)
		if err == nil {
			l.stats.commits.Add(1)
			l.stats.writes.Add(int64(len(live)))
			break
		}
		if try < l.retries && retryable(err) && ctx.Err() == nil {
			l.stats.retries.Add(1)
			continue
		}
		if failed && len(live) > 1 {
			// One statement failed and took the others with it: run
			// each alone, so that the failure stays with its write.
			for _, r := range live {
				l.release(r, l.runAlone(ctx, c, r))
			}
			return
		}
		err = writeErr(ctx, live[0].op, err, try)
		break
	}
	for _, r := range live {
		l.release(r, err)
	}
}

// runAlone runs one request in a transaction of its own, with the retries
// of a batch.
func (l *Ledger) runAlone(ctx context.Context, c *committerConn, r *request) error {
	for try := 0; ; try++ {
		_, err := runBatch(ctx, c, []*request{r})
		if err == nil {
			l.stats.commits.Add(1)
			l.stats.writes.Add(1)
			return nil
		}
		if !(try < l.retries && retryable(err) && ctx.Err() == nil) {
			return writeErr(ctx, r.op, err, try)
		}
		l.stats.retries.Add(1)
	}
}

func (l *Ledger) release(r *request, err error) {
	r.err = err
	close(r.done)
}

// runBatch sends live as one pipeline on the committer's connection and
// reads every answer. failed is true when the server refused a statement
// (it then rolled the whole transaction back); err is nil only once the
// transaction committed.
func runBatch(ctx context.Context, c *committerConn, live []*request) (failed bool, err error) {
	conn, err := c.get(ctx)
	if err != nil {
		return false, err
	}
	defer func() { c.done(err) }()
	if len(live) == 1 {
		r := live[0]
		err := conn.QueryRow(ctx, r.sql, r.args...).Scan(r.dest...)
		return isStatementErr(err), err
	}
	return sendBatch(ctx, conn, live)
}

func sendBatch(ctx context.Context, conn *pgxpool.Conn, live []*request) (failed bool, err error) {
	var b pgx.Batch
	for _, r := range live {
		b.Queue(r.sql, r.args...)
	}
	br := conn.SendBatch(ctx, &b)
	for _, r := range live {
		if err := br.QueryRow().Scan(r.dest...); err != nil {
			return isStatementErr(err), errors.Join(err, br.Close())
		}
	}
	// The pipeline's Sync commits; Close reads its answer.
	return false, br.Close()
}

// isStatementErr reports whether the server answered a statement with an
// error that rolled back the transaction and left the session usable.
func isStatementErr(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && severity(pe) == "ERROR"
}

// Stats are cumulative counts of the committers' work since the ledger was
// opened. Writes/Commits is the mean group-commit batch size.
type Stats struct {
	// Commits is the number of write transactions committed.
	Commits int64
	// Writes is the number of writes those transactions carried, refused
	// writes included (a refusal is an answer the batch delivered).
	Writes int64
	// Retries is the number of transactions run again after PostgreSQL
	// rolled them back with a serialization failure or a deadlock.
	Retries int64
}

// Stats returns the committers' counters. It is safe to call concurrently
// with every other method, and after Close.
func (l *Ledger) Stats() Stats {
	return Stats{Commits: l.stats.commits.Load(), Writes: l.stats.writes.Load(), Retries: l.stats.retries.Load()}
}
