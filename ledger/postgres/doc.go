// Package postgres is the [ledger.Ledger] on PostgreSQL, for several
// controllers — processes on one or many machines — that share one ledger.
// Every guarantee of the embedded ledger holds across them: one winner per
// fence, one authorization per logical effect, a budget never exceeded, a
// result accepted once. It uses github.com/jackc/pgx/v5 (pgxpool) and
// passes [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run].
//
// # Schema and migrations
//
// The ledger lives in one PostgreSQL schema (Options.Schema, default
// "zeo_ledger"): tables for operations, attempts, bootstrap ids, effects
// and artifacts, and one SQL function per write. [Open] creates the schema
// and brings it to [SchemaVersion] with the migrations embedded in this
// package, in one transaction that holds a transaction-scoped advisory
// lock, so controllers starting together take turns and the second finds
// the work done. A schema of a newer version is refused with
// [ErrSchemaTooNew]; nothing is touched.
//
// # One round trip per call
//
// Every method is one SQL statement, so one round trip and one implicit
// transaction; the writes are durable (PostgreSQL's commit) before the
// method returns. A write is a call of the SQL function that decides it,
// which runs these statements inside that one transaction (most in the
// common case, when nothing is refused):
//
//	CreateOperation  create_operation   INSERT … ON CONFLICT DO NOTHING, and a SELECT if it existed (2)
//	StartAttempt     start_attempt      lock the operation, find the attempt, INSERT it, UPDATE the fence (4)
//	IssueBootstrap   issue_bootstrap    lock, look the id up, INSERT … ON CONFLICT DO NOTHING (3)
//	LaunchAttempt    launch_attempt     lock (or INSERT the operation), find the attempt, look the id up,
//	                                    INSERT the attempt, UPDATE the fence, INSERT the id (6)
//	RedeemBootstrap  redeem_bootstrap   lock, look the id and its attempt up, conditional UPDATE (4)
//	Admit            admit              lock, read the attempt, find a redemption, UPDATE the attempt (4)
//	BeginEffect      begin_effect       lock, read the attempt, look the effect up, debit, INSERT the effect (5)
//	ConfirmEffect, MarkNotConsumed,
//	MarkUnknown, Resolve  settle_effect lock, read the effect and its attempt, conditional UPDATE (4)
//	AcceptResult     accept_result      lock, read the attempt, INSERT the artifact, conditional UPDATE (4)
//	Cancel           cancel             lock, conditional UPDATE (2)
//	Operation        one SELECT of the operation with its lists as arrays (one snapshot)
//	ListUnknown      one SELECT over the partial index of unsettled effects
//	Artifact         one SELECT
//
// The functions decide every refusal before their first write and answer
// it with a code that this package turns into the same error, with the
// same text, as every other backend (the checks and refusals come from
// the ledger's shared core; the error order is the one ledger.Ledger
// documents, and ledgertest's model checks it against this backend).
//
// # Fencing and idempotency in the database
//
// Each write first locks its operation's row (SELECT … FOR NO KEY UPDATE):
// writes of one operation are serial, writes of different operations run
// in parallel. The fence is compared inside the same transaction, and the
// writes that move the fence, debit the budget or accept the result are
// conditional on it (UPDATE … WHERE generation = $fence), with the number
// of rows they touched checked. Unique constraints hold the idempotency
// keys: an operation per (organization, project, id), a bootstrap id in
// the whole ledger, a logical effect per operation, an ordinal per
// operation's budget; check constraints hold the budget (effects_used never
// above effect_budget) and the shape of each state. The budget is debited
// in the same transaction that records the effect. Nothing relies on
// session-level advisory locks, which a connection pool would leak.
//
// Deadlines are judged by the database server's clock, the one clock all
// controllers share.
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
