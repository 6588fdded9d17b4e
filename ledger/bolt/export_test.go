package bolt

// SetBeforeCommit installs fn to run inside every write transaction before
// the batch's functions, so that tests can hold a commit in flight.
func SetBeforeCommit(l *Ledger, fn func()) { l.hooks.beforeCommit.Store(&fn) }

// SetFailFlush installs fn to run when a batch writes back its operation
// records; a non-nil error from fn fails the write-back as a storage error
// would.
func SetFailFlush(l *Ledger, fn func() error) { l.hooks.failFlush.Store(&fn) }

// QueuedWrites returns how many writes wait for the committer.
func QueuedWrites(l *Ledger) int { return len(l.reqs) }

// Seal returns payload sealed as the record stored under key in bucket.
func Seal(bucket, key, payload []byte) []byte { return seal(nil, bucket, key, payload) }
