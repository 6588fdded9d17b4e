package ledger

import "time"

// Limits every backend enforces: a call past a Max limit is refused with
// [ErrInvalid] and writes nothing.
const (
	// MaxArtifactBytes is the largest artifact AcceptResult stores (16 MiB,
	// far above the wire's 1 MiB frame limit).
	MaxArtifactBytes = 16 << 20

	// MaxLeaseTTL is the longest lease a controller may hold.
	MaxLeaseTTL = time.Hour

	// Limits of ListOperations' pages.

	// DefaultListLimit is the page size when OperationQuery.Limit is zero.
	DefaultListLimit = 100
	// MaxListLimit is the largest page size.
	MaxListLimit = 1000

	// Bounds of an AttemptEvidence. They keep one record small enough for
	// any backend to store in one row or value.

	// MaxEvidenceOutputBytes bounds AttemptEvidence.HostResult: the host's
	// stdout as the launcher keeps it (its 1 MiB result line and one byte
	// more, which tells an oversized output apart).
	MaxEvidenceOutputBytes = 1<<20 + 1
	// MaxEvidenceStderrBytes bounds AttemptEvidence.StderrTail.
	MaxEvidenceStderrBytes = 64 << 10
	// MaxEvidenceExchanges bounds SessionEvidence.Exchanges.
	MaxEvidenceExchanges = 1024
	// MaxEvidenceTextBytes bounds each free-text field of an
	// AttemptEvidence (Reason, Session.Error).
	MaxEvidenceTextBytes = 4096
)
