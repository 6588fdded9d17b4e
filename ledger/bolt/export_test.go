package bolt

// SetBeforeCommit installs fn to run inside every write transaction before
// the batch's functions, so that tests can hold a commit in flight.
func SetBeforeCommit(l *Ledger, fn func()) { l.beforeCommit.Store(&fn) }
