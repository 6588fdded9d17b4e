package bolt

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// Corruption never takes the process down.
//
// bbolt trusts its file: on a damaged one it panics (an element count
// past the end of its page, a page freed twice, a page id above the high
// water mark), and a read through its memory map past the end of a
// truncated file is a fault, which the Go runtime turns into an
// unrecoverable "fatal error: fault" unless the faulting goroutine has
// asked for a panic instead (runtime/debug.SetPanicOnFault). So every
// bbolt call runs inside guard, which asks for that panic and recovers it,
// or on the committer goroutine, which asks for it once and recovers
// around each transaction; what is recovered is an error wrapping
// [ledger.ErrCorrupt].
//
// Fail-stop. The first error wrapping ledger.ErrCorrupt that a call meets
// (a recovered panic, a record that does not decode, a broken invariant)
// stops the ledger: every later call is refused with ErrCorrupt, and the
// committer writes nothing more, so that nothing is built on a damaged
// file. Close still releases the file. A panic inside bbolt can leave its
// internal locks held, so after one Close releases the file lock and the
// descriptor itself instead of asking bbolt, whose Close would wait on
// those locks forever; the memory map is then left to the process's end.

// panicError is a panic or fault recovered from bbolt.
type panicError struct{ v any }

func (e *panicError) Error() string {
	return fmt.Sprintf("bbolt failed on the file's content (%v)", e.v)
}

func (e *panicError) Unwrap() error { return ledger.ErrCorrupt }

// guard runs f, turning a panic, or a memory fault on this goroutine,
// into a *panicError.
func guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &storageError{&panicError{r}}
		}
	}()
	return f()
}

// panicked reports whether err is or wraps a recovered panic.
func panicked(err error) bool {
	var pe *panicError
	return errors.As(err, &pe)
}

// stop records err, which wraps ledger.ErrCorrupt, as the reason the
// ledger stopped (only the first is kept) and returns it.
func (l *Ledger) stop(err error) error {
	l.broken.CompareAndSwap(nil, &err)
	if panicked(err) {
		l.unsafe.Store(true)
	}
	return err
}

// stopped returns the refusal of a call op when the ledger has stopped,
// else nil.
func (l *Ledger) stopped(op string) error {
	if p := l.broken.Load(); p != nil {
		return fmt.Errorf("ledger/bolt: %s: refused: the ledger stopped when it found %s corrupt (%v); restore the file from a backup: %w", op, l.path, *p, ledger.ErrCorrupt)
	}
	return nil
}

// noteCorrupt stops the ledger when err wraps ledger.ErrCorrupt, and
// returns err.
func (l *Ledger) noteCorrupt(err error) error {
	if err != nil && errors.Is(err, ledger.ErrCorrupt) {
		l.stop(err)
	}
	return err
}
