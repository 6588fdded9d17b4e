package bolt

import "sync/atomic"

// testHooks are the two points where the package's own tests reach into a
// commit; only export_test.go sets them (SetBeforeCommit, SetFailFlush).
// In production both are nil, and each costs one atomic load per batch.
type testHooks struct {
	// beforeCommit runs inside every write transaction before the
	// batch's functions, so that a test can hold a commit in flight.
	beforeCommit atomic.Pointer[func()]
	// failFlush runs when a batch writes back its operation records; its
	// error fails the write-back as a storage error would.
	failFlush atomic.Pointer[func() error]
}

// runBeforeCommit runs the beforeCommit hook, if one is set.
func (h *testHooks) runBeforeCommit() {
	if fn := h.beforeCommit.Load(); fn != nil {
		(*fn)()
	}
}

// flushFailure returns the failFlush hook, or nil.
func (h *testHooks) flushFailure() func() error {
	if fn := h.failFlush.Load(); fn != nil {
		return *fn
	}
	return nil
}
