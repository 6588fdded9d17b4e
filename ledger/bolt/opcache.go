package bolt

import "github.com/zeoruntime/runtimeipc/ledger/internal/core"

// maxCachedOps bounds the committer's cache of operation records. When a
// commit would take it past the bound it is emptied and refills from the
// file: a cold operation costs one Get and one decode, as without a cache.
const maxCachedOps = 4096

// opCache holds decoded operation records exactly as the last committed
// transaction left them, so a write does not look up and decode its
// operation's record again on every call (the fence check of every write
// reads it; at 64 writers that was about 40% of the committer's CPU inside
// a transaction). Only the committer goroutine, the file's single writer,
// uses it, so nothing else can change a record behind it.
//
// It is updated only after a transaction committed: a rolled-back
// transaction (a refused write-back, a storage error, a retried batch)
// leaves it as it was, because its records never reached the file. A failed
// Commit empties it, because the file's state is then not known. Records
// in it are shared with the memos of later transactions and are never
// modified: boltTx replaces a changed record by a new one (putOp), and Op
// hands core copies.
type opCache struct {
	m map[core.OpKey]*opRecord
}

func newOpCache() *opCache { return &opCache{m: make(map[core.OpKey]*opRecord)} }

// get returns the committed record of k, if cached. A nil cache (read-only
// transactions) has nothing.
func (c *opCache) get(k core.OpKey) (*opRecord, bool) {
	if c == nil {
		return nil, false
	}
	r, ok := c.m[k]
	return r, ok
}

// committed records the operation records of a transaction that has just
// committed: every record it read or wrote is now the file's.
func (c *opCache) committed(ops map[core.OpKey]*opRecord) {
	if len(c.m)+len(ops) > maxCachedOps {
		clear(c.m)
	}
	for k, r := range ops {
		c.m[k] = r
	}
}

// reset forgets everything, after a Commit whose outcome is not known.
func (c *opCache) reset() { clear(c.m) }
