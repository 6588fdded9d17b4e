package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
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

	// CheckRecords makes Open run the whole of [Ledger.Check] before it
	// returns: besides the page structure, which Open always checks, every
	// record is decoded and the ledger's invariants are checked across
	// them. It takes time linear in the number of records (about 65 ms
	// for 1,000 operations of 5 effects each, a 4 MiB file, where the page
	// check takes 4 to 5 ms; see BENCHMARKS.md). Without it a record
	// that does not decode is found when a call first reads it, which
	// then stops the ledger (see the package doc, “Corruption”).
	CheckRecords bool

	// ReadOnly opens an existing file for reading only, under a shared
	// lock instead of the exclusive one: any number of read-only opens
	// can share the file, but none while an owner (a read-write Open,
	// such as a running controller) holds it, and no owner while they
	// do; Open then waits LockTimeout and fails with [ledger.ErrLocked],
	// naming the holder's pid when /proc/locks shows it. Every write is
	// refused with [ErrReadOnly]; reads, Check and Close work as usual.
	// A read-only Open never creates, upgrades or otherwise changes the
	// file: a file of an earlier format is refused with ErrReadOnly
	// until a read-write Open has upgraded it.
	ReadOnly bool
}

// ErrReadOnly is wrapped by a write through a ledger opened with
// Options.ReadOnly, and by a read-only Open of a file it would have to
// create or upgrade.
var ErrReadOnly = errors.New("ledger/bolt: opened read-only")

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
	holder   string // names this open handle; leases acquired through another are dead (lease.go)
	maxBatch int
	readOnly bool // Options.ReadOnly: every write is refused

	reqs chan *request // writes for the committer goroutine
	quit chan struct{} // closed when no write can be queued or in flight any more
	done chan struct{} // closed when the committer goroutine has returned

	mu       sync.RWMutex   // guards closed, and orders inflight.Add before Close's Wait
	closed   bool           // set by the first Close; no new calls after it
	inflight sync.WaitGroup // calls admitted and not finished (reads and writes)

	closeOnce  sync.Once // starts the drainer goroutine
	dbOnce     sync.Once // closes the bbolt file (and releases the lock)
	dbCloseErr error

	file   *os.File              // the descriptor bbolt reads through, for releaseFile (guard.go)
	broken atomic.Pointer[error] // why the ledger stopped (guard.go); nil while it serves
	unsafe atomic.Bool           // a panic inside bbolt: Close releases the file itself (guard.go)

	opCache *opCache // operation records as last committed; the committer's only (opcache.go)
	memo    *boltTx  // the committer's, reused by every write transaction (store.go)

	hooks testHooks // the tests' reach into a commit (hooks.go); unset in production

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

// Open opens the ledger file at path and takes its exclusive lock, which
// is the single-owner lock of the ledger: while this Ledger is open, no
// other Open of the file — in this process or another — succeeds. If
// another owner holds the file, Open waits at most opts.LockTimeout and
// then fails with an error that names path and wraps [ledger.ErrLocked].
// Invalid options fail with [ledger.ErrInvalid].
//
// A new, empty ledger is created only where no file exists. An existing
// file must be a whole ledger: an empty or short one (truncated), one
// whose pages or records are damaged, or one that is not a ledger fails
// with an error wrapping [ledger.ErrCorrupt] and is left as it is, never
// started over. Open checks the file's page structure before it returns,
// and with opts.CheckRecords its records too (see [Ledger.Check]), in
// time linear in its size.
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

	creating := false
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		creating = true
	case err != nil:
		return nil, fmt.Errorf("ledger/bolt: open %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("ledger/bolt: open %s: %v is not a regular file: %w", path, fi.Mode().Type(), ledger.ErrInvalid)
	}
	if creating && opts.ReadOnly {
		return nil, fmt.Errorf("ledger/bolt: open %s: no such file, and a read-only open does not create one: %w", path, fs.ErrNotExist)
	}
	db, file, err := openDB(path, mode, lockTimeout, creating, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	// The page structure is checked before anything writes to the file:
	// a damaged freelist would hand out pages that still hold records,
	// and a damaged tree would be followed out of the file (see Check).
	steps := []func() error{
		func() error { return checkPages(file) },
		func() error { return initFile(db, opts.ReadOnly) },
	}
	if opts.CheckRecords {
		steps = append(steps, func() error { return db.View(func(tx *bbolt.Tx) error { return checkRecords(tx, "") }) })
	}
	for _, step := range steps {
		if err := guard(step); err != nil {
			return nil, errors.Join(fmt.Errorf("ledger/bolt: open %s: %w", path, err), closeDB(db, file, panicked(err)))
		}
	}
	holder := core.NewID("handle_")
	l := &Ledger{
		db:       db,
		file:     file,
		path:     path,
		holder:   holder,
		maxBatch: maxBatch,
		readOnly: opts.ReadOnly,
		opCache:  newOpCache(),
		memo:     newTx(nil, holder),
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

// openDB opens the bbolt file at path, creating it only when creating is
// set (the file did not exist), and returns it with the descriptor bbolt
// reads it through. Errors that come from the file's content wrap
// [ledger.ErrCorrupt]; a panic or a fault in bbolt is one of them.
func openDB(path string, mode fs.FileMode, lockTimeout time.Duration, creating, readOnly bool) (db *bbolt.DB, file *os.File, err error) {
	// NoSync, NoGrowSync and NoFreelistSync stay false: every commit is
	// fsynced before a write is acknowledged. ReadOnly makes bbolt open
	// the file O_RDONLY and take a shared flock.
	opts := &bbolt.Options{Timeout: lockTimeout, ReadOnly: readOnly, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		if creating {
			flag |= os.O_EXCL // another creator won the race: refuse rather than share
		} else {
			flag &^= os.O_CREATE // a file removed meanwhile is not silently recreated
		}
		f, err := os.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		if !creating {
			// bbolt initializes a file of size 0 as a new, empty database: an
			// existing ledger truncated to nothing would start empty.
			if fi, err := f.Stat(); err != nil || fi.Size() == 0 {
				f.Close()
				return nil, errors.Join(errEmptyFile, err)
			}
		}
		file = f
		return f, nil
	}}
	err = guard(func() error {
		var err error
		db, err = bbolt.Open(path, mode, opts)
		return err
	})
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case err == nil:
		return db, file, nil
	case panicked(err) && file != nil:
		// bbolt panicked inside Open and may hold its own locks: release
		// the file here (its mapping, if any, stays until the process ends).
		releaseFile(file)
		return nil, nil, fmt.Errorf("ledger/bolt: open %s: %w", path, err)
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, nil, fmt.Errorf("ledger/bolt: open %s: %s (waited %v): %w", path, lockedBy(path, readOnly), lockTimeout, ledger.ErrLocked)
	case errors.Is(err, errEmptyFile):
		return nil, nil, fmt.Errorf("ledger/bolt: open %s: the file is empty, and a ledger never is (it was truncated or is not a ledger); restore it from a backup, or remove it to start a new, empty ledger: %w", path, ledger.ErrCorrupt)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return nil, nil, fmt.Errorf("ledger/bolt: open %s: %w", path, err)
	default:
		// Everything else bbolt reports at Open is about the file's
		// content: no valid meta page, a checksum or version mismatch, a
		// file shorter than its pages.
		return nil, nil, fmt.Errorf("ledger/bolt: open %s: not a readable ledger file (%v); restore it from a backup: %w", path, err, ledger.ErrCorrupt)
	}
}

// errEmptyFile is what openDB's OpenFile hook answers for an existing
// empty file.
var errEmptyFile = errors.New("empty file")

// initFile creates the buckets of a new ledger, or checks that the file is
// a ledger of this build's format, upgrading a format 3 to 6 file in
// place (see upgrade). A file of the current format is only read, so
// opening one does not write. With readOnly nothing is ever written: a
// file that needs creating or upgrading is refused.
// A bbolt file with no bucket becomes a ledger only if it has never
// committed a transaction since bbolt created it (Open created it, or a
// process died right after creating it); an existing file whose buckets
// are gone is corrupt, not new. A bbolt file with buckets but no format
// stamp is someone else's file and is refused, and so is every other
// format version: earlier pre-release formats are not migrated.
func initFile(db *bbolt.DB, readOnly bool) error {
	var from string // the format to upgrade from; "" when the file is new
	current := false
	err := db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
				return fmt.Errorf("bbolt file with bucket %q and no ledger format version; not a ledger: %w", name, ledger.ErrCorrupt)
			}); err != nil {
				return err
			}
			if tx.ID() >= freshTxID {
				// bbolt writes transaction ids 0 and 1 into a new file's two
				// meta pages, so the first write transaction is 2.
				return fmt.Errorf("bbolt file at transaction %d has no bucket: the ledger's records are gone; restore it from a backup: %w", tx.ID(), ledger.ErrCorrupt)
			}
			return nil
		}
		v := meta.Get(keyFormat)
		_, upgradable := formatsUpgradable[string(v)]
		switch {
		case v == nil:
			return fmt.Errorf("bbolt file has a meta bucket but no format version; not a ledger: %w", ledger.ErrCorrupt)
		case bytes.Equal(v, formatVersion):
			current = true
			for _, name := range allBuckets {
				if tx.Bucket(name) == nil {
					return fmt.Errorf("bucket %q missing: %w", name, ledger.ErrCorrupt)
				}
			}
		case upgradable:
			from = string(v)
		default:
			return fmt.Errorf("ledger file format %q, this build reads formats \"3\" to \"7\" and %q (earlier pre-release formats are not migrated; recreate the ledger): %w", v, formatVersion, ledger.ErrCorrupt)
		}
		return nil
	})
	switch {
	case err != nil || current:
		return err
	case readOnly && from != "":
		return fmt.Errorf("ledger file format %s must be upgraded to format %s before it is opened read-only: open it once without Options.ReadOnly, which upgrades it in place: %w", from, formatVersion, ErrReadOnly)
	case readOnly:
		return fmt.Errorf("the file holds no ledger yet, and a read-only open does not create one: %w", ErrReadOnly)
	}
	return db.Update(func(tx *bbolt.Tx) error {
		if from != "" {
			return upgrade(tx, from)
		}
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("creating bucket %q: %w", name, err)
			}
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, formatVersion)
	})
}

// upgrade turns the format from file of tx into the current format: it
// creates the buckets from lacks, seals every record with its checksum
// (seal.go), the artifact bytes only after checking them against their
// records' digests, checks the whole ledger (core.CheckTx) and stamps the
// format. A format 7 file has every record but the artifact bytes sealed
// already. The caller's transaction commits all of it or nothing; a check
// that fails leaves the file as it was.
func upgrade(tx *bbolt.Tx, from string) error {
	for _, name := range formatsUpgradable[from] {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("upgrading format %s to %s: creating bucket %q: %w", from, formatVersion, name, err)
		}
	}
	if from != "7" {
		for _, name := range sealedBuckets {
			if bytes.Equal(name, bucketBlobs) {
				continue
			}
			if err := resealBucket(tx.Bucket(name), name); err != nil {
				return fmt.Errorf("upgrading format %s to %s: %w", from, formatVersion, err)
			}
		}
	}
	if err := checkArtifacts(tx, false); err != nil {
		return fmt.Errorf("upgrading format %s to %s: an artifact does not pass its check, so the file was left as it was; restore it from a backup: %w", from, formatVersion, err)
	}
	if err := resealBucket(tx.Bucket(bucketBlobs), bucketBlobs); err != nil {
		return fmt.Errorf("upgrading format %s to %s: %w", from, formatVersion, err)
	}
	if err := core.CheckTx(newTx(tx, "")); err != nil {
		return fmt.Errorf("upgrading format %s to %s: the file's records do not pass the ledger's check, so it was left as it was; restore it from a backup: %w", from, formatVersion, err)
	}
	if err := tx.Bucket(bucketMeta).Put(keyFormat, formatVersion); err != nil {
		return fmt.Errorf("upgrading format %s to %s: %w", from, formatVersion, err)
	}
	return nil
}

// resealBucket appends the checksum to every value of b, named name, a
// chunk of records at a time (a cursor must be placed again after the
// bucket changes under it).
func resealBucket(b *bbolt.Bucket, name []byte) error {
	const chunk = 1024
	var after []byte
	for {
		var keys, vals [][]byte
		c := b.Cursor()
		k, v := c.First()
		if after != nil {
			if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(keys) < chunk; k, v = c.Next() {
			keys = append(keys, bytes.Clone(k))
			vals = append(vals, seal(nil, name, k, v))
		}
		if len(keys) == 0 {
			return nil
		}
		for i, k := range keys {
			if err := b.Put(k, vals[i]); err != nil {
				return fmt.Errorf("sealing bucket %q key %q: %w", name, k, err)
			}
		}
		after = keys[len(keys)-1]
	}
}

// checkRecords checks every record's checksum (and every artifact's
// bytes), then the ledger's invariants across its records.
func checkRecords(tx *bbolt.Tx, holder string) error {
	if err := checkSums(tx); err != nil {
		return err
	}
	return core.CheckTx(newTx(tx, holder))
}

// freshTxID is the id of the first write transaction on a file bbolt has
// just created.
const freshTxID = 2

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
	if err := l.stopped(op); err != nil {
		return err
	}
	return l.noteCorrupt(guard(func() error {
		return l.db.View(func(tx *bbolt.Tx) error { return fn(newTx(tx, l.holder)) })
	}))
}

func recoverInto(err *error) {
	if r := recover(); r != nil {
		*err = &storageError{&panicError{r}}
	}
}

// write queues fn for the committer and waits until its transaction is
// fsynced. fn may run more than once (see commit); the run that committed
// is the last one.
func (l *Ledger) write(ctx context.Context, op string, fn func(core.Tx) error) error {
	if l.readOnly {
		return fmt.Errorf("ledger/bolt: %s: %s: %w (the write was not applied): %w", op, l.path, ErrReadOnly, ledger.ErrNotApplied)
	}
	return l.submit(ctx, op, &request{fn: fn, done: make(chan struct{})})
}

// Check verifies the whole ledger and returns nil, or an error wrapping
// [ledger.ErrCorrupt] that names what is broken, after which the ledger
// stops (every later call is refused with ErrCorrupt; Close still
// releases the file). It checks bbolt's page structure from the file's
// bytes (every page of the trees reachable once and inside the file, keys
// in order, the freelist consistent with them), then decodes every record
// and checks the ledger's invariants across them (ledger/internal/core's
// CheckTx: budgets, ordinals, attempts and generations, bootstrap ids and
// their index, results and their artifacts, evidence, the reconciliation
// index). Open runs the page check, and the whole check with
// Options.CheckRecords, before it returns. Check runs on the
// committer between two transactions, so it sees the file as last
// committed; writes wait for it, and it takes time linear in the file's
// size.
func (l *Ledger) Check(ctx context.Context) error {
	return l.submit(ctx, "Check", &request{done: make(chan struct{}), solo: func() error {
		if err := checkPages(l.file); err != nil {
			return fmt.Errorf("ledger/bolt: Check %s: %w", l.path, err)
		}
		return l.db.View(func(tx *bbolt.Tx) error { return checkRecords(tx, l.holder) })
	}})
}

// submit queues r for the committer and waits until it is done.
func (l *Ledger) submit(ctx context.Context, op string, r *request) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("ledger/bolt: %s: %w", op, err)
	}
	if err := l.enter(op); err != nil {
		return err
	}
	if err := l.stopped(op); err != nil {
		l.inflight.Done()
		return fmt.Errorf("%w: %w", ledger.ErrNotApplied, err)
	}
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
		if err := closeDB(l.db, l.file, l.unsafe.Load()); err != nil {
			l.dbCloseErr = fmt.Errorf("ledger/bolt: close %s: %w", l.path, err)
		}
	})
	return l.dbCloseErr
}

// closeDB closes db, or, when a panic inside bbolt may have left its
// locks held (unsafe), releases its file itself (see guard.go).
func closeDB(db *bbolt.DB, file *os.File, unsafe bool) error {
	if unsafe {
		return releaseFile(file)
	}
	return db.Close()
}
