// Package ledger defines the Runtime's durable truth about capability
// operations: attempts and their fences, bootstrap redemption, admission,
// logical effects with a total budget, accepted results and their scoped,
// immutable artifacts, cancellation and reconciliation.
//
// # Start here
//
// Open a backend and hand it to supervise.Config; the Supervisor makes
// every write. [github.com/zeoruntime/runtimeipc/ledger/memory.New] is for
// tests and examples, [github.com/zeoruntime/runtimeipc/ledger/bolt.Open]
// (one file, embedded, durable) is the default, and
// [github.com/zeoruntime/runtimeipc/ledger/postgres.Open] serves several
// controllers that share one store. Every operation lives in a [Scope]
// (organization and project). The calls an embedder makes on a [Ledger]
// itself are reads and the end of its life: Operation, ListOperations and
// Evidence to see what happened, ListUnknown for effects whose outcome
// was lost (settle them with the Supervisor's Resolve), and Close. The
// other methods are the Supervisor's, or the Handler's in a controller of
// your own. Its errors are the two var blocks below: the call and the
// store ([ErrClosed], [ErrInvalid], [ErrNotFound], ...), and the state the
// ledger holds ([ErrStaleFence], [ErrChangedInput], ...).
//
// The host process cannot be trusted with any of this: its budget counter
// dies with it. The [Ledger] interface is what the Runtime consults instead,
// and the only thing that decides recovery across a restarted host.
// Backends: ledger/memory (in memory), ledger/bolt (embedded, durable) and
// ledger/postgres (PostgreSQL, shared by several controllers: conditional
// writes on the fencing generation column and unique constraints for
// idempotency keys). The catalogue's records are kept beside the ledger,
// in the same store: see
// [github.com/zeoruntime/runtimeipc/ledger/cataloguestore]. Every backend
// must pass [github.com/zeoruntime/runtimeipc/ledger/ledgertest.Run].
//
// # What the ledger promises
//
//   - Atomicity: each method is one transaction. A refused call writes
//     nothing.
//   - Fencing (Temporal's RangeID, Kleppmann's fencing token): StartAttempt
//     issues the next fencing generation of the operation, strictly
//     increasing. Every write made for an attempt presents its [Fence], and
//     the fence is compared with the operation's current one inside the
//     transaction that writes (doc/design.md, “Fences in the store”). A
//     stale fence gets a [*FenceError] wrapping [ErrStaleFence]; it is
//     final, never retry it.
//   - Bootstrap ids are unique in the ledger, bound to one attempt and
//     launch digest, and redeemed exactly once, by one child process and
//     session, with the launch digest they were issued with.
//   - Protocol order per attempt: bootstrap redeemed, then admitted, then
//     effects and the result ([ErrOutOfOrder] otherwise).
//   - Logical effects follow Stripe / IETF Idempotency-Key semantics keyed by
//     (operation, logical_effect_id) with the EffectRequest digest as the
//     fingerprint, checked on every path, the redelivery path included
//     (doc/design.md, “Idempotent effects”). A new effect debits the
//     operation's total budget in the same transaction that records it; a
//     redelivery debits nothing and returns the recorded authorization and
//     receipt, across attempts and restarts.
//   - An effect whose dispatch is uncertain is unknown until Resolve; it and
//     every authorized effect whose outcome was never recorded and whose
//     controller holds no live lease are listed by ListUnknown, so a crash
//     never hides an in-flight effect. An authorized effect whose controller
//     is live is in flight: ListInFlight lists it, and Resolve refuses it
//     ([ErrInFlight]), so that nobody records "not consumed" for an effect
//     its owner may be dispatching right now.
//   - Controllers own their attempts by lease ([Lease]; doc/design.md,
//     “Controllers and leases”): AcquireLease registers a controller id
//     with a time to live, RenewLease extends it, ReleaseLease ends it.
//     Liveness is judged by the store's clock inside the transaction that
//     depends on it. Attempts launched by a controller, and the effects
//     they authorize, name it. An attempt whose controller is live is never
//     taken over ([ErrOwnerLive]); one whose lease expired or was released
//     is orphaned (ListOperations with Orphaned) and TakeOver fences it off
//     with an attempt of the taker's. A lease that ended is final: its id
//     is never live again, and its attempts get no new effect and its
//     controller launches nothing ([ErrLeaseExpired]), so a controller
//     paused past its lease cannot act when it wakes.
//   - An operation accepts one result. Its artifact is stored immutably
//     under the operation's organization and project, and retrieval under
//     any other scope is refused with [ErrOutOfScope].
//
// # Effect states
//
//	           BeginEffect (new: budget −1)
//	                  │
//	                  ▼
//	            authorized ──ConfirmEffect──▶ confirmed
//	             │       │
//	MarkNotConsumed     MarkUnknown
//	             │       │
//	             ▼       ▼
//	   not_consumed ◀─Resolve── unknown ──Resolve──▶ confirmed
//
// Resolve may also settle an effect still authorized once its controller
// holds no live lease (the Runtime crashed before recording an outcome,
// or its lease expired mid-dispatch: the effect is then unknown to
// ListUnknown); while its controller is live it is in flight, and only
// its attempt records the outcome. confirmed and not_consumed are final.
//
// # What the ledger refuses
//
// Malformed arguments ([ErrInvalid]; identifiers are 1..256 code points of
// valid UTF-8, digests are canon digests), writes with stale fences, reuse
// of any idempotency key with another fingerprint ([ErrChangedInput]), new
// effects past the budget ([ErrBudgetExhausted]) or the deadline
// ([ErrDeadlineExceeded]), advancing a cancelled operation
// ([ErrOperationCancelled]) or one whose result was accepted
// ([ErrResultAlreadyAccepted]), calls out of protocol order
// ([ErrOutOfOrder]), new work for a controller whose lease ended
// ([ErrLeaseExpired]), taking over a live controller's attempt
// ([ErrOwnerLive]) and resolving an effect in flight ([ErrInFlight]).
// Recording the outcome of an effect that was already authorized is
// allowed even after cancellation, and after its controller's lease ended:
// the ledger never refuses the truth about the outside world, only
// permission.
//
// The ledger does not dispatch effects and cannot make an external effect
// exactly-once by itself: it records intent (authorized) before dispatch and
// the outcome after, and passes the authorization id downstream so that the
// dispatcher can deduplicate.
//
// # Transactions, retries, concurrency
//
// A [Ledger] is safe for concurrent use. Callers never see transactions:
// each method is one. Durable backends may group several concurrent calls
// into one transaction and one fsync, but each call's outcome is exactly as
// if it had committed alone, in some serial order. A method returns only
// after its write is durable. When a context ends, or the store fails,
// before the outcome is known, the method says which case it is, in every
// backend: [ErrNotApplied] (nothing was written) or [ErrOutcomeUnknown]
// (the write may have committed). Since every write is idempotent on its
// key (operation id, attempt id, bootstrap id, logical effect id, result
// digest), repeating the identical call returns the recorded outcome.
//
// Errors wrap the sentinels of this package; test with [errors.Is] and
// [errors.As]. Error text is for people and may change.
package ledger
