package bolt

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Group commit. One goroutine (commitLoop) owns the write side of the
// file. It takes the first queued write, then every write already queued
// behind it (up to maxBatch) without waiting, and runs them in order in one
// bbolt transaction, which is fsynced once. While that fsync runs, new
// writes queue up and form the next batch, so the batch size follows the
// load without a timer (unlike bbolt's DB.Batch, which waits MaxBatchDelay).
//
// After releasing a batch the committer yields (runtime.Gosched) before it
// collects the next one, and yields again for as long as the queue grew
// during the last yield (bounded: the queue holds at most maxBatch).
// close(done) makes the released writers runnable on the committer's own
// P; without the yield the committer took
// the next batch before they could write again, so writers that write in a
// loop split into two cohorts that alternated batches and each batch held
// half of them (measured with the benchmark: mean batch 4.0 with 8 writers,
// 31.7 with 64). With it they queue their next write first and join the
// next batch: 7.5 with 8 writers (+40 to +80% authorizations/s), 41 to 45
// with 64 (throughput within noise there, where the per-write cost
// dominates). Writers the other P stole from the committer's run queue
// may still be on their way when the first yield returns; yielding while
// the queue grows lets them in too (64 writers: 40-45 -> 45-52). Gosched
// is not a timer: with nothing else runnable it returns at once, so a lone
// writer waits no longer (1 writer: one more yield, about a microsecond,
// after it queued its next write).
//
// Within a batch each write sees the writes before it, exactly as if they
// had committed one by one in that order; results are released only after
// the fsync. A write refused by the ledger's rules has written nothing (the
// core contract), so it fails alone and the batch goes on. A write that
// hits a storage error may have written part of its records, so the whole
// transaction is rolled back, that write gets its error, and the rest of
// the batch runs again without it. A write may therefore run more than
// once; only the run that committed sets its result. A commit failure
// (fsync error) fails every write of the batch: it is not retried, because
// after a failed fsync the file's state is not known (PostgreSQL's
// "fsyncgate").

const (
	stateQueued    int32 = iota // waiting in l.reqs
	stateTaken                  // owned by the committer; the caller must wait
	stateAbandoned              // the caller gave up first; never run
)

type request struct {
	fn    func(core.Tx) error
	solo  func() error // instead of fn: run alone, between transactions, with the file as last committed
	state atomic.Int32
	err   error         // written by the committer before done is closed
	done  chan struct{} // closed by the committer
}

func (l *Ledger) commitLoop() {
	defer close(l.done)
	// The committer reads the memory map of the file: a fault there (a
	// truncated or damaged file) must be a panic it recovers, not the end
	// of the process (guard.go).
	debug.SetPanicOnFault(true)
	batch := make([]*request, 0, l.maxBatch)
	for {
		var first *request
		select {
		case first = <-l.reqs:
		case <-l.quit:
			return
		}
		if first.solo != nil {
			l.runSolo(first)
			continue
		}
		batch = append(batch[:0], first)
		var solo *request
	fill:
		for len(batch) < l.maxBatch {
			select {
			case r := <-l.reqs:
				if r.solo != nil {
					solo = r // after this batch, in queue order
					break fill
				}
				batch = append(batch, r)
			default:
				break fill
			}
		}
		l.commit(batch)
		for i := range batch {
			batch[i] = nil
		}
		if solo != nil {
			l.runSolo(solo)
		}
		// Let the writers just released run before collecting the next
		// batch, for as long as they keep queueing (see the comment at
		// the top).
		for n, prev := len(l.reqs), -1; n != prev && n < l.maxBatch; n = len(l.reqs) {
			prev = n
			runtime.Gosched()
		}
	}
}

// runSolo runs a solo request alone, with no transaction open.
func (l *Ledger) runSolo(r *request) {
	if !r.state.CompareAndSwap(stateQueued, stateTaken) {
		l.inflight.Done()
		return
	}
	if r.err = l.stopped("check"); r.err == nil {
		r.err = l.noteCorrupt(guard(r.solo))
	}
	l.release(r)
}

// commit runs one batch to completion and releases every request in it.
// Once the ledger has stopped (guard.go), it runs nothing: every request
// is refused, not applied.
func (l *Ledger) commit(batch []*request) {
	live := make([]*request, 0, len(batch))
	for _, r := range batch {
		if r.state.CompareAndSwap(stateQueued, stateTaken) {
			live = append(live, r)
		} else {
			l.inflight.Done()
		}
	}
	for len(live) > 0 {
		if err := l.stopped("write"); err != nil {
			for _, r := range live {
				r.err = fmt.Errorf("%w: %w", ledger.ErrNotApplied, err)
				l.release(r)
			}
			return
		}
		failed, err := l.apply(live)
		if failed >= 0 {
			r := live[failed]
			live = append(live[:failed], live[failed+1:]...)
			l.noteCorrupt(r.err)
			l.release(r)
			continue
		}
		if err != nil {
			l.noteCorrupt(err)
			if isStorage(err) { // the write-back failed: rolled back before Commit
				err = fmt.Errorf("ledger/bolt: commit %s: %w: %w", l.path, ledger.ErrNotApplied, err)
			} else {
				err = fmt.Errorf("ledger/bolt: commit %s: %w: %w", l.path, ledger.ErrOutcomeUnknown, err)
			}
			for _, r := range live {
				r.err = err
			}
		}
		for _, r := range live {
			l.noteCorrupt(r.err)
			l.release(r)
		}
		return
	}
}

// apply runs live in order in one write transaction and commits it. If a
// write hits a storage error, apply rolls back and returns its index. The
// two phases are timed apart for Stats: running the writes is the CPU part
// of the commit path, bbolt's Commit the page writes and fsyncs.
//
// A panic or fault inside bbolt (a damaged file) is recovered here as an
// error wrapping ledger.ErrCorrupt; if it came from Commit, the outcome of
// the batch is not known.
func (l *Ledger) apply(live []*request) (failed int, err error) {
	start := time.Now()
	var tx *bbolt.Tx
	committing := false
	defer func() {
		if r := recover(); r != nil {
			failed, err = -1, &panicError{r}
			if !committing {
				err = &storageError{err} // nothing was applied
			}
		}
		if tx != nil && (failed >= 0 || err != nil) {
			_ = guard(tx.Rollback) // a no-op after a failed Commit, which rolls back itself
		}
	}()
	tx, err = l.db.Begin(true)
	if err != nil {
		tx = nil
		return -1, &storageError{err} // nothing was applied
	}
	l.hooks.runBeforeCommit()
	btx := l.memo
	btx.reuse(tx)
	btx.committed = l.opCache
	btx.failFlush = l.hooks.flushFailure()
	for i, r := range live {
		r.err = run(r.fn, btx)
		if isStorage(r.err) {
			return i, r.err
		}
	}
	if err := btx.flush(); err != nil {
		return -1, err
	}
	applied := time.Now()
	committing = true
	if err := tx.Commit(); err != nil {
		l.opCache.reset() // the file's state is not known
		return -1, err
	}
	l.opCache.committed(btx.ops)
	l.stats.commits.Add(1)
	l.stats.writes.Add(int64(len(live)))
	l.stats.applyNs.Add(int64(applied.Sub(start)))
	l.stats.commitNs.Add(int64(time.Since(applied)))
	return -1, nil
}

func (l *Ledger) release(r *request) {
	close(r.done)
	l.inflight.Done()
}

func run(fn func(core.Tx) error, tx *boltTx) (err error) {
	defer recoverInto(&err)
	return fn(tx)
}
