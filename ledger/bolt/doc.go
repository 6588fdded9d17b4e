// Package bolt is the embedded, durable [ledger.Ledger], stored in one
// go.etcd.io/bbolt file.
//
// Start with [Open]: Open(path, Options{}) opens or creates the file and
// owns it until Close; hand the ledger to supervise.Config.
//
// # Ownership
//
// The file's exclusive flock is the ledger's single-owner lock: the
// operating system, not a lease or a pid file, decides who owns the ledger,
// and it releases the lock when the owning process dies, however it dies
// (doc/design.md, “Embedded ledger”).
// [Open] waits at most Options.LockTimeout for the lock and then fails with
// an error that names the file and wraps [ledger.ErrLocked]; it never hangs.
//
// # Controller leases
//
// Controller leases ([ledger.Lease]) are kept in the file like every other
// record, and a renewal is a durable, group-committed write. The lock
// makes the ledger's owner the only process that can act on it, so a
// lease in the file that was not acquired through the open [Ledger] it is
// read by belongs to a process that lost the file (it exited or was
// killed): such a lease is not live, whatever its Expires says. After a
// restart, the previous process's attempts are orphaned and its
// authorized effects unknown at once, with no wait for their TTL, and
// TakeOver may fence them off. Their lease records are kept (Leases
// reports them with Live false), and their ids are never live again: a
// controller registers under a new id in every process. Liveness is judged
// by this process's clock (time.Now).
//
// # Durability and group commit
//
// Every write is fsynced before it is acknowledged (bbolt's NoSync is never
// set). Concurrent writers are group-committed: one goroutine runs every
// write queued at the moment into one transaction with one fsync, so the
// fsync cost is shared and throughput grows with concurrency. Each write's
// outcome is as if it had committed alone. See committer.go for how a write
// refused inside a batch, or a storage error, is isolated. [Ledger.Stats]
// reports the mean batch size and how a commit's time splits between
// running the writes and bbolt's page writes and fsyncs.
//
// A write whose context ends while it waits in the queue, or whose batch
// could not be written back, fails with [ledger.ErrNotApplied]: nothing of
// it reached the file. One whose context ends while its batch is being
// committed, or whose commit (fsync) fails, fails with
// [ledger.ErrOutcomeUnknown]: it may have landed. Both wrap the cause.
//
// # File format
//
// The file is format 8 (store.go): a batch of writes from many operations
// dirties few pages, because effects are keyed by a sequence number and so
// appended together, and operation records are small and binary; attempt
// evidence has a bucket of its own, so that it never weighs on those
// records, and so do the catalogue's records (the [cataloguestore.Store]
// the ledger also is), and so do the controller leases. Open upgrades a
// format 3, 4 or 5 file (the same layout without the evidence, catalogue
// and leases buckets, without the catalogue and leases buckets, or
// without the leases bucket; their records read as records without
// controllers), 6 (without record checksums) or 7 (without the checksum
// of the artifact bytes) in place, in one transaction that adds what the
// file lacks, checks every artifact's bytes against its digest, seals
// every record with its checksum and commits only if the whole ledger
// then passes [Ledger.Check]'s record check; it refuses any other format, including the earlier
// pre-release format 2, with an error that wraps [ledger.ErrCorrupt] and
// names the versions it reads; there is no migration from those. Opening
// a file of the current format reads it and writes nothing.
//
// # Integrity of every read
//
// Every record is checked when it is read, so that a damaged file gives
// [ledger.ErrCorrupt], never a wrong answer, and no decision (a scope
// check, a budget, a fence) is made on damaged data (seal.go). Every
// value, the artifact bytes included, ends with a CRC-32C (Castagnoli) of
// the bucket's name, the key and the value; the artifact bytes are also
// checked against their record's digest (sha256) by [Ledger.Check] and
// when a file is upgraded to this format, which is where they are sealed
// (a sha256 on every read would make reading a 64 KiB artifact almost
// twice as slow; the checksum costs a few microseconds). CRC-32C was
// chosen over a cryptographic hash or a 64-bit hash because the threat
// is damage, not an adversary who can write the file (who could rewrite
// any checksum): it is in the standard library, computed by the CPU's
// crc32 instruction on amd64 and arm64 (a few nanoseconds for a record of
// a few hundred bytes, next to the microseconds of a bbolt lookup), costs
// 4 bytes a record, and detects every error of up to 32 consecutive bits
// with certainty, so every single-bit flip of a record, and other damage
// with probability 1 − 2⁻³². The key is bound into it, so a record whose
// key was damaged, or one moved under another key (an organization in a
// key changed to another), fails as a damaged value does; a lookup that
// finds nothing checks the records beside the place of its key, where a
// record with a damaged key sits, so that "not found" is not an answer
// made on damage either. The page check at Open holds every page to
// bbolt's layout (keys in order, each element's bytes right after the one
// before), so a damaged element count, which would drop records without
// any record being damaged, is found too. The bit-flip campaign
// (TestBitFlipCampaign) flips one bit of every byte of a small ledger
// past its meta pages and finds no wrong answer (see BENCHMARKS.md).
//
// # Read-only inspection
//
// Options.ReadOnly opens an existing file for reading only, under a
// shared flock: any number of read-only opens share the file (zeoctl's
// inspection commands use one), but the exclusive lock of an owner — a
// running controller — excludes them, and they exclude an owner: bbolt's
// locks are whole-file flocks, and a reader of a file a writer is
// changing could see pages mid-commit. Open then fails after
// Options.LockTimeout with [ledger.ErrLocked], naming the holder's pid
// when /proc/locks gives it. To inspect a ledger beside its running
// controllers, use ledger/postgres.
//
// # Corruption (fail-stop)
//
// A damaged file never takes the process down and never starts over
// empty. Open creates a ledger only where no file exists, and checks an
// existing file's page structure from its bytes (and, with
// Options.CheckRecords, every record and the ledger's invariants, as
// [Ledger.Check] does): an empty, truncated or damaged file fails with an
// error wrapping [ledger.ErrCorrupt]. Damage found later (the file changed under the
// ledger, or a fault reading it) is also reported as ErrCorrupt, never a
// panic or a fatal memory fault: bbolt runs under recover, with faults on
// its memory map turned into panics on the goroutines that read it. The
// first such error stops the ledger: every later call is refused with
// ErrCorrupt, nothing more is written, and Close still releases the file.
// Restore the file from a backup. A record that fails its checksum (see
// “Integrity of every read”) is such an error, and it names the record:
// its bucket and key, and what did not match.
//
// # Closing (bounded fail-stop)
//
// Close stops new calls, waits for calls in flight and then releases the
// file. Its wait is bounded by its context. If the context ends while a
// write is still in flight, Close returns [ledger.ErrCloseTimeout] and does
// NOT release the lock: the hung write could still land, and a successor
// that opened the file meanwhile would then share it with a ghost writer.
// The caller must exit the process; the kernel then releases the lock and
// any successor starts from what was durably committed.
//
// # Caveats
//
// bbolt files never shrink, their format is endian-specific, and they are
// not meant for network file systems. Artifacts are stored in the same
// file, bounded by [ledger.MaxArtifactBytes] each.
package bolt
