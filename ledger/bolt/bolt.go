package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// DefaultLockTimeout is how long Open waits for another owner to release
// the file when Options.LockTimeout is zero.
const DefaultLockTimeout = 2 * time.Second

// DefaultMaxBatch is the largest number of writes committed in one fsynced
// transaction when Options.MaxBatch is zero.
const DefaultMaxBatch = 1024

// Options configures [Open]. The zero value means all defaults.
type Options struct {
	// LockTimeout bounds how long Open waits for the file's exclusive lock
	// while another owner holds it. Zero means DefaultLockTimeout; negative
	// values are refused. There is no way to wait forever.
	LockTimeout time.Duration

	// MaxBatch is the most writes group-committed in one transaction. Zero
	// means DefaultMaxBatch; 1 disables group commit (one fsync per write);
	// negative values are refused.
	MaxBatch int

	// FileMode is the permission of a newly created file. Zero means 0600.
	FileMode fs.FileMode
}

// Ledger is a [ledger.Ledger] stored in one bbolt file. It is safe for
// concurrent use. Create it with [Open] and release it with Close. It has
// every method of [ledger.Ledger], with the semantics documented there
// (they come from an embedded adapter shared by all backends, so go doc
// lists only the methods specific to this backend).
//
// AcceptResult copies the artifact bytes into the file before it returns,
// and Artifact returns a copy: the caller owns every slice it gives or
// gets.
type Ledger struct {
	*ledgerCore // the methods of ledger.Ledger, over runner

	db       *bbolt.DB
	path     string
	maxBatch int

	reqs chan *request // writes for the committer goroutine
	quit chan struct{} // closed when no write can be queued or in flight any more
	done chan struct{} // closed when the committer goroutine has returned

	mu       sync.RWMutex   // guards closed, and orders inflight.Add before Close's Wait
	closed   bool           // set by the first Close; no new calls after it
	inflight sync.WaitGroup // calls admitted and not finished (reads and writes)

	closeOnce  sync.Once // starts the drainer goroutine
	dbOnce     sync.Once // closes the bbolt file (and releases the lock)
	dbCloseErr error

	opCache *opCache // operation records as last committed; the committer's only (opcache.go)
	memo    *boltTx  // the committer's, reused by every write transaction (store.go)

	beforeCommit atomic.Pointer[func()]       // test hook (export_test.go); nil in production
	failFlush    atomic.Pointer[func() error] // test hook (export_test.go); nil in production

	stats struct{ commits, writes, applyNs, commitNs atomic.Int64 } // added to by the committer only
}

// Stats are cumulative counts of the committer's work since Open.
// Writes/Commits is the mean group-commit batch size; ApplyTime/Commits and
// CommitTime/Commits split the time of one commit into its CPU part and
// its I/O part. Only committed transactions count.
type Stats struct {
	// Commits is the number of write transactions committed (each fsynced).
	Commits int64
	// Writes is the number of writes those transactions carried, refused
	// writes included (a refusal is an answer the batch delivered).
	Writes int64
	// ApplyTime is the time spent running the writes inside their
	// transactions: decoding, checks, encoding and bbolt's in-memory puts.
	ApplyTime time.Duration
	// CommitTime is the time spent in bbolt's Commit: laying out the
	// dirty pages, writing them and the two fdatasyncs (data, then meta).
	CommitTime time.Duration
}

// Stats returns the committer's counters. It is safe to call concurrently
// with every other method, and after Close.
func (l *Ledger) Stats() Stats {
	return Stats{
		Commits:    l.stats.commits.Load(),
		Writes:     l.stats.writes.Load(),
		ApplyTime:  time.Duration(l.stats.applyNs.Load()),
		CommitTime: time.Duration(l.stats.commitNs.Load()),
	}
}

var _ ledger.Ledger = (*Ledger)(nil)

// ledgerCore is the adapter that implements ledger.Ledger over a runner;
// the alias keeps the embedded field unexported.
type ledgerCore = core.Ledger

// runner runs the ledger's calls in bbolt transactions: reads directly,
// writes through the committer (core.Runner).
type runner struct{ l *Ledger }

func (r runner) Read(ctx context.Context, op string, fn func(core.Tx) error) error {
	return r.l.read(ctx, op, fn)
}

func (r runner) Write(ctx context.Context, op string, fn func(core.Tx) error) error {
	return r.l.write(ctx, op, fn)
}

func (r runner) Close(ctx context.Context) error { return r.l.Close(ctx) }

// Open opens (creating if needed) the ledger file at path and takes its
// exclusive lock, which is the single-owner lock of the ledger: while this
// Ledger is open, no other Open of the file — in this process or another —
// succeeds. If another owner holds the file, Open waits at most
// opts.LockTimeout and then fails with an error that names path and wraps
// [ledger.ErrLocked]. Invalid options fail with [ledger.ErrInvalid], a file
// that is not a ledger with [ledger.ErrCorrupt].
//
// Open starts one committer goroutine, which Close stops.
func Open(path string, opts Options) (*Ledger, error) {
	if path == "" {
		return nil, fmt.Errorf("ledger/bolt: open: empty path: %w", ledger.ErrInvalid)
	}
	if opts.LockTimeout < 0 {
		return nil, fmt.Errorf("ledger/bolt: open %s: LockTimeout %v is negative: %w", path, opts.LockTimeout, ledger.ErrInvalid)
	}
	if opts.MaxBatch < 0 {
		return nil, fmt.Errorf("ledger/bolt: open %s: MaxBatch %d is negative: %w", path, opts.MaxBatch, ledger.ErrInvalid)
	}
	if opts.FileMode&^fs.ModePerm != 0 {
		return nil, fmt.Errorf("ledger/bolt: open %s: FileMode %v has non-permission bits: %w", path, opts.FileMode, ledger.ErrInvalid)
	}
	lockTimeout := cmpOr(opts.LockTimeout, DefaultLockTimeout)
	maxBatch := cmpOr(opts.MaxBatch, DefaultMaxBatch)
	mode := cmpOr(opts.FileMode, 0o600)

	db, err := openDB(path, mode, lockTimeout)
	if err != nil {
		return nil, err
	}
	if err := initFile(db); err != nil {
		return nil, errors.Join(fmt.Errorf("ledger/bolt: open %s: %w", path, err), db.Close())
	}
	l := &Ledger{
		db:       db,
		path:     path,
		maxBatch: maxBatch,
		opCache:  newOpCache(),
		memo:     newTx(nil),
		reqs:     make(chan *request, maxBatch),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	l.ledgerCore = core.New(runner{l})
	go l.commitLoop()
	return l, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func openDB(path string, mode fs.FileMode, lockTimeout time.Duration) (db *bbolt.DB, err error) {
	defer func() {
		// bbolt has panicked on malformed files; a file is input, and input
		// never panics us.
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("ledger/bolt: open %s: unreadable file (%v): %w", path, r, ledger.ErrCorrupt)
		}
	}()
	// NoSync, NoGrowSync and NoFreelistSync stay false: every commit is
	// fsynced before a write is acknowledged.
	db, err = bbolt.Open(path, mode, &bbolt.Options{Timeout: lockTimeout})
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, fmt.Errorf("ledger/bolt: open %s: another owner holds the file lock (waited %v); stop that owner or use another file: %w", path, lockTimeout, ledger.ErrLocked)
	case errors.Is(err, bberrors.ErrInvalid), errors.Is(err, bberrors.ErrVersionMismatch), errors.Is(err, bberrors.ErrChecksum):
		return nil, fmt.Errorf("ledger/bolt: open %s: not a ledger file: %w: %v", path, ledger.ErrCorrupt, err)
	default:
		return nil, fmt.Errorf("ledger/bolt: open %s: %w", path, err)
	}
}

// initFile creates the buckets of a new ledger, or checks that the file is
// a ledger of this build's format, upgrading a format 3 file in place (the
// same transaction creates the evidence bucket and stamps format 4). An
// empty bbolt file becomes a ledger; a bbolt file with buckets but no
// format stamp is someone else's file and is refused, and so is every
// other format version: earlier pre-release formats are not migrated.
func initFile(db *bbolt.DB) error {
	return db.Update(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			switch v := meta.Get(keyFormat); {
			case v == nil:
				return fmt.Errorf("bbolt file has a meta bucket but no format version; not a ledger: %w", ledger.ErrCorrupt)
			case bytes.Equal(v, formatUpgradable):
				if _, err := tx.CreateBucketIfNotExists(bucketEvidence); err != nil {
					return fmt.Errorf("upgrading format %s to %s: creating bucket %q: %w", formatUpgradable, formatVersion, bucketEvidence, err)
				}
				if err := meta.Put(keyFormat, formatVersion); err != nil {
					return fmt.Errorf("upgrading format %s to %s: %w", formatUpgradable, formatVersion, err)
				}
			case !bytes.Equal(v, formatVersion):
				return fmt.Errorf("ledger file format %q, this build reads formats %q and %q (earlier pre-release formats are not migrated; recreate the ledger): %w", v, formatUpgradable, formatVersion, ledger.ErrCorrupt)
			}
		} else if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			return fmt.Errorf("bbolt file with bucket %q and no ledger format version; not a ledger: %w", name, ledger.ErrCorrupt)
		}); err != nil {
			return err
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %q: %w", name, err)
			}
		}
		meta := tx.Bucket(bucketMeta)
		if meta.Get(keyFormat) == nil {
			return meta.Put(keyFormat, formatVersion)
		}
		return nil
	})
}

// Path returns the file the ledger was opened on.
func (l *Ledger) Path() string { return l.path }

// enter admits a call unless Close has begun; every admitted call must
// call l.inflight.Done exactly once.
func (l *Ledger) enter(op string) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return fmt.Errorf("ledger/bolt: %s: %w", op, ledger.ErrClosed)
	}
	l.inflight.Add(1)
	return nil
}

// read runs fn in a read-only transaction. Reads do not wait for the
// committer; they see every acknowledged write.
func (l *Ledger) read(ctx context.Context, op string, fn func(core.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger/bolt: %s: %w", op, err)
	}
	if err := l.enter(op); err != nil {
		return err
	}
	defer l.inflight.Done()
	return l.db.View(func(tx *bbolt.Tx) (err error) {
		defer recoverInto(&err)
		return fn(newTx(tx))
	})
}

func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = &storageError{fmt.Errorf("internal error (%v): %w", r, ledger.ErrCorrupt)}
	}
}

// write queues fn for the committer and waits until its transaction is
// fsynced. fn may run more than once (see commit); the run that committed
// is the last one.
func (l *Ledger) write(ctx context.Context, op string, fn func(core.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger/bolt: %s: %w", op, err)
	}
	if err := l.enter(op); err != nil {
		return err
	}
	r := &request{fn: fn, done: make(chan struct{})}
	select {
	case l.reqs <- r:
	case <-ctx.Done():
		l.inflight.Done()
		return fmt.Errorf("ledger/bolt: %s: %w: %w", op, ledger.ErrNotApplied, ctx.Err())
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
			return fmt.Errorf("ledger/bolt: %s: %w: %w", op, ledger.ErrNotApplied, ctx.Err())
		}
		return fmt.Errorf("ledger/bolt: %s: %w (the write may have committed; repeat the call to learn it): %w", op, ledger.ErrOutcomeUnknown, ctx.Err())
	}
	return r.err
}

// Close stops accepting calls, waits for every call in flight (queued
// writes are committed, not dropped), stops the committer and closes the
// file, which releases the lock. If ctx ends first, Close returns an error
// wrapping [ledger.ErrCloseTimeout] and keeps the file open and locked:
// a write still in flight could land after the lock was released, so the
// ledger fails stop instead; the process must exit (the operating system
// then releases the lock). A later Close may still finish the job once
// the writes have landed. Close is safe to call more than once.
func (l *Ledger) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.closeOnce.Do(func() {
		go func() { // the drainer; returns once the last admitted call is done
			l.inflight.Wait()
			close(l.quit)
		}()
	})
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("ledger/bolt: close %s: %w (%w)", l.path, ledger.ErrCloseTimeout, context.Cause(ctx))
	}
	l.dbOnce.Do(func() {
		if err := l.db.Close(); err != nil {
			l.dbCloseErr = fmt.Errorf("ledger/bolt: close %s: %w", l.path, err)
		}
	})
	return l.dbCloseErr
}
