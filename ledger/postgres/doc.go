// Package postgres is the [ledger.Ledger] on PostgreSQL, for several
// controllers — processes on one or many machines — that share one ledger.
// Every guarantee of the embedded ledger holds across them: one winner per
// fence, one authorization per logical effect, a budget never exceeded, a
// result accepted once. It uses github.com/jackc/pgx/v5 (pgxpool) and
// passes [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run].
//
// Start with [Open] (a DSN) or [New] (a pgxpool.Pool of yours); hand the
// ledger to every controller's supervise.Config.
//
// # Schema and migrations
//
// The ledger lives in one PostgreSQL schema (Options.Schema, default
// "zeo_ledger"): tables for operations, attempts, bootstrap ids, effects,
// artifacts and controller leases, and one SQL function per write. [Open]
// creates the schema and brings it to [SchemaVersion] with the migrations
// embedded in this package, in one transaction that holds a
// transaction-scoped advisory lock, so controllers starting together take
// turns and the second finds the work done; a ledger of any older version
// migrates forward. A schema of a newer version is refused with
// [ErrSchemaTooNew]; nothing is touched. Controllers of a build older than
// the schema must be stopped before a newer build opens it: version 7
// replaces functions whose results changed, which the older build's
// statements no longer match. The SQL function issue_bootstrap (schema
// version 1) stays for the builds that called it; this build issues
// bootstrap ids only through launch_attempt (ledger.Ledger's
// IssueBootstrap is gone: LaunchAttempt covers it).
//
// # One round trip per call
//
// Every method is one SQL statement: one round trip, in one transaction;
// the writes are durable (PostgreSQL's commit) before the method returns.
// A write is a call of the SQL function that decides it, which runs these
// statements inside that transaction (in the common case, when nothing is
// refused):
//
//	CreateOperation  create_operation   INSERT … ON CONFLICT DO NOTHING, and a SELECT if it existed (2)
//	StartAttempt     start_attempt      lock the operation, find the attempt, INSERT it, UPDATE the fence (4)
//	LaunchAttempt    launch_attempt     the controller's lease (lease_check), lock (or INSERT the operation),
//	                                    find the attempt, look the id up, INSERT the attempt, UPDATE the
//	                                    fence, INSERT the id (7)
//	RedeemBootstrap  redeem_bootstrap   lock, look the id and its attempt up, conditional UPDATE (4)
//	Admit            admit              lock, read the attempt, find a redemption, UPDATE the attempt (4)
//	BeginEffect      begin_effect       the debit, an UPDATE conditional on the fence, the admission, the
//	                                    controller's lease, the deadline and the budget; INSERT … ON CONFLICT
//	                                    DO NOTHING of the effect (2; a redelivery gives the debit back and
//	                                    is answered below)
//	ConfirmEffect, MarkNotConsumed,
//	MarkUnknown      settle_effect      UPDATE of the effect, conditional on its state and on the fence,
//	                                    whose operation row it locks (1)
//	Resolve          settle_effect      lock, read the effect, its controller's lease, conditional UPDATE (4)
//	TakeOver         take_over          lock, both leases (lease_check), INSERT the attempt, UPDATE the fence (5)
//	AcquireLease     acquire_lease      INSERT … ON CONFLICT DO NOTHING (1), in a transaction of its own
//	RenewLease       renew_lease        lock the lease, UPDATE (2), in a transaction of its own
//	ReleaseLease     release_lease      lock the lease, UPDATE (2), in a transaction of its own
//	AcceptResult     accept_result      lock, read the attempt, INSERT the artifact, conditional UPDATE (4)
//	Cancel           cancel             lock, conditional UPDATE (2)
//	RecordAttempt    record_attempt     find the operation and the attempt, INSERT … ON CONFLICT DO NOTHING (3)
//	Operation        one SELECT of the operation with its lists as arrays (one snapshot)
//	ListOperations   one SELECT along the operations' unique index
//	Evidence         one SELECT
//	ListUnknown      one SELECT over the partial index of unsettled effects, each authorized one's lease
//	ListInFlight     the same, keeping the authorized effects whose lease is live
//	Leases           one SELECT
//	Artifact         one SELECT
//
// Since schema version 5 those common-case statements look the effect up
// by its whole primary key, never through a join with the operation's
// row: on a table created moments ago, whose statistics say it is empty,
// the planner ran that join as a scan of every effect.
//
// When BeginEffect's or an outcome call's one statement does not apply
// (a redelivery, a refusal), the function locks the operation and decides
// in the ledger's error order, as the others do (up to 5 statements).
//
// Concurrent writes share transactions (group commit, see committer.go):
// Options.Committers transactions (by default [DefaultCommitters]) are in
// flight at once, each carrying every write queued when it started, up to
// Options.MaxBatch; a lone write goes alone. Few transactions carrying
// many writes each cost the server fewer commits than many carrying one.
// Each write's outcome is as if it had committed alone.
//
// The functions decide every refusal before their first write and answer
// it with a code that this package turns into the same error, with the
// same text, as every other backend (the checks and refusals come from
// the ledger's shared core; the error order is the one ledger.Ledger
// documents, and ledgertest's model checks it against this backend).
//
// # The catalogue's records
//
// The Ledger is also a [cataloguestore.Store]: admitted provider
// generations, operation pins, consent and resource reservations, in one
// table (migrations/0004_catalogue.sql) of records the ledger's shared core
// decides, as for every backend. Each of those calls is one SERIALIZABLE
// transaction of a few statements that first takes transaction-scoped
// advisory locks on the keys it guards (a provider, a pin, an account's
// consent, the reservation keys in order), so that racing controllers take
// turns; one winner per generation number and at most one exclusive
// holder per key follow from the serializable commit. Reservation
// liveness (the holder's fence current, its operation open, its deadline
// not passed) is judged on the operations table in the same transaction,
// with the server's clock.
//
// # Fencing and idempotency in the database
//
// Every write to an operation's records holds its operation's row lock
// (taken by SELECT … FOR NO KEY UPDATE, or by the UPDATE that checks the
// fence), evidence aside, which is written once per attempt: writes of one
// operation are serial, writes of different operations run in parallel.
// The fence is compared inside the same transaction, and the writes that
// move the fence, debit the budget, settle an effect or accept the result
// are conditional on it (UPDATE … WHERE generation = $fence), with the
// number of rows they touched checked. Unique constraints hold the
// idempotency keys: an operation per (organization, project, id), a
// bootstrap id in the whole ledger, a logical effect per operation; check
// constraints hold the budget (effects_used never
// above effect_budget) and the shape of each state. The budget is debited
// in the same transaction that records the effect. Since schema version 6
// the operations and effects tables each check their rows' shape with one
// call of an immutable function (operation_shape_ok, effect_shape_ok)
// instead of several CHECK expressions, with the same rules: PostgreSQL
// reads every CHECK expression of a table back from its stored text and
// prepares it again in each statement that writes the table, which made
// the rules a third to a half of the cost of an authorization's writes.
// Nothing relies on session-level advisory locks, which a connection pool
// would leak.
//
// Deadlines are judged by the database server's clock, the one clock all
// controllers share.
//
// # Controller leases
//
// Since schema version 7 (migrations/0007_controller_leases.sql) a
// controller's lease is a row of its own, and every attempt, the
// operation's current attempt and every effect carry the controller that
// owns them. A lease is live while it is not released and the server's
// clock_timestamp() is before its expiry, which acquisition and renewal
// set to the server's clock plus the ttl: a controller's own clock never
// decides. Liveness only ever ends, so a write that needs a live lease
// (LaunchAttempt, a new effect, the taking controller of TakeOver) may
// read it from the committed row; a decision that a lease is not live
// (Resolve of an authorized effect, TakeOver of an attempt, any refusal
// with ErrLeaseExpired) is made under a FOR SHARE lock of the lease's
// row, with the clock read after the lock is held, in the transaction of
// the write it allows. A renewal locks the row and reads the clock after
// that, so a renewal under way when Resolve looks is waited for and seen,
// and none can commit between Resolve's check and its write.
//
// The lease writes (AcquireLease, RenewLease, ReleaseLease) are not group
// committed: each runs in a transaction of its own, which locks only its
// lease's row and so can never be part of a deadlock with the batches
// that wait for it.
//
// # Retries and failures
//
// A call that PostgreSQL rolled back with a serialization failure
// (SQLSTATE 40001) or a deadlock (40P01) runs again, at most
// Options.MaxRetries times; nothing else is retried. launch_attempt raises
// 40001 itself when, after its checks, it loses a race to create the same
// operation or to issue the same bootstrap id: run again, its checks see
// the winner's rows and answer. A write that fails says whether it was
// applied:
//
//   - [ledger.ErrNotApplied]: it never reached the server (no connection),
//     or the server answered with an error and rolled it back;
//   - [ledger.ErrOutcomeUnknown]: it was sent and the connection was lost,
//     terminated or cancelled (ctx) before the answer: it may have
//     committed. Every write is idempotent on its key, so repeating the
//     identical call returns the recorded outcome;
//   - [ledger.ErrCorrupt]: a function found a stored invariant broken.
//
// # Identifiers
//
// Identifiers are stored as bytea, byte for byte: they may hold any valid
// UTF-8, U+0000 included, which PostgreSQL's text cannot, and lists are
// ordered bytewise, as Go orders strings.
//
// # Testing
//
// The tests of this package need a PostgreSQL server: set
// ZEO_TEST_POSTGRES_DSN (for example
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable). Each run works
// in schemas of its own and drops them; without the variable the tests
// skip and say so.
package postgres
