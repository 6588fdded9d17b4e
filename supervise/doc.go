// Package supervise runs capability operations end to end on durable
// truth: it composes the ledger (package ledger), the trusted launcher
// (package launch) and the embedder's policy ports, so that a Runtime
// team does not write the attempt loop and the ledger-backed IPC handler
// by hand (see doc/design.md, “Layering”).
//
// # First steps
//
// An embedding needs about a dozen names; examples/quickstart is the
// whole program, and supervise/supervisetest its test host:
//
//   - a ledger: memory.New (package ledger/memory, tests), bolt.Open
//     (ledger/bolt, one controller, one file) or postgres.Open
//     (ledger/postgres, several controllers);
//   - the provider's binding: manifest.DecodeBinding;
//   - the host's launcher: launch.New;
//   - [New] with a [Config] (the ledger, the launcher, the binding, and a
//     [port.Dispatcher] when its capabilities have effects), which returns
//     the [Supervisor]; [Supervisor.Close] it when done;
//   - [Supervisor.Invoke] with a [Call], which returns the [*Outcome]:
//     succeeded with the result's artifact refs (read one with
//     [Supervisor.Artifact]), or also an [*OutcomeError] whose sentinel
//     ([ErrRefused], [ErrWaitingApproval], [ErrNeedsReconciliation], ...)
//     says what to do next;
//   - [Supervisor.Resolve], to settle an effect whose dispatch is
//     uncertain;
//   - what the embedder implements, in package supervise/port: a
//     [port.Dispatcher] ([port.Dispatch] in, [port.Receipt] out) for
//     capabilities with effects ([Config.Dispatcher]), and a
//     [port.Authority] for who may run what ([Config.Authority]).
//
// A team with its own controller loop takes the lower layer alone:
// package supervise/handler, whose [handler.Handler] is the ipc.Handler
// of one attempt (see examples/ownloop and “Own controller” below).
//
// # One Supervisor per controller
//
// A controller runs every provider and generation through one Supervisor
// (doc/design.md, “One Supervisor per controller”). A Call names its
// provider: an exact binding (Call.Binding), an admitted provider and
// generation resolved through the Providers port (Call.Provider,
// Call.Generation; catalogue.Catalogue implements it, and an operation
// keeps the generation it started on), or none, for Config.Provider. Each
// checked binding is cached while it is used. Hosts start through one
// starter per provider environment (Config.Environments, or
// Config.Launcher for all): a launcher, and a fork server when Config.Warm
// is set, made on first use and closed after Config.StarterIdle without
// invocations, or at Close. With Config.ProviderWarm a starter also keeps
// one provider-warm server per provider binding and tenant
// (organization, project), never shared between tenants, started in the
// background on first use and closed after Config.StarterIdle
// (doc/design.md, “Provider-warm launch”).
//
// The Supervisor registers in the ledger as a controller with a lease
// (Config.ControllerID, Config.LeaseTTL) on first use, renews it every
// third of its time to live, and records itself on every attempt it
// launches. Recover, and the loop Config.TakeoverInterval runs, take over
// only the attempts of controllers whose lease expired; a live
// controller's attempts are never touched, and an Invoke of an operation
// another live controller is running is answered running (ErrRunning).
// A controller that cannot renew in time answers none of its hosts
// allowed from then on, and once the ledger says its lease expired it is
// fail-stopped (ErrLeaseLost): a paused controller that wakes up after a
// takeover cannot act (doc/design.md, “Controllers and leases”).
//
// Close drains within its bound and then stops the hosts; the lease is
// released only when no write of the controller can still land, and is
// otherwise left to expire (ErrDrainTimeout; doc/design.md, “Bounded
// shutdown”).
//
// # What it guarantees
//
// With a durable ledger (ledger/bolt, or a shared backend), across host
// crashes and controller restarts:
//
//   - A bootstrap id is redeemed once, by the launched child's pid and one
//     session; a second child presenting it is refused.
//   - Every request of an attempt that a newer attempt has fenced off is
//     refused, whatever its method.
//   - A logical effect is dispatched at most once per operation: a
//     redelivery, in the same attempt or a later one, is answered with the
//     recorded authorization and receipt, and the Dispatcher is not called.
//     The operation's total budget is never exceeded.
//   - An effect whose dispatch is uncertain is recorded unknown and
//     answered needs_reconciliation until Resolve settles it; an effect
//     authorized by a controller that died before recording the outcome is
//     treated the same way, never redispatched.
//   - An operation accepts one result, stored as an immutable artifact under
//     its organization and project; Invoke with the same operation id
//     returns it without launching, and retrieval from any other scope is
//     refused.
//   - Cancel is durable: every later request of every attempt is answered
//     cancelled.
//   - A host's result is evidence, not truth: a claim the ledger
//     contradicts (a success with no accepted result) is a protocol error,
//     never the outcome.
//
// What it leaves to the embedder: who may run what (Authority), the
// credentials and the exactly-once of the outside world (Dispatcher, which
// receives the authorization id to deduplicate on), and reconciliation of
// unknown effects (Resolve).
//
// # Invoke
//
// An operation is identified by its scope and operation id. Concurrent
// Invoke calls of one operation and request in one Supervisor run it
// once: one leads, the others wait for it (bounded by their context) and
// get its outcome (Outcome.Shared), or are answered running when their
// context ends first. Invoke reads the operation; a recorded operation
// with another capability, request or manifest is ErrOperationMismatch,
// and a cancelled one is answered cancelled whatever the call asks. A completed operation returns its accepted
// result (Outcome.Reconnected) and a cancelled or expired one its state,
// without launching. Otherwise Invoke prepares a new attempt: the next
// fencing generation, the AttemptBinding, the LaunchContext (handler.BuildContext,
// with the budget left and the operation's deadline, or the Call's
// deadline and budget for a new operation) and a bootstrap id. One ledger
// write, LaunchAttempt, records the operation when it is new, the attempt
// with its fence (which fences off every older attempt) and the bootstrap
// id with the launch digest; it runs while the host starts, and the host
// is served by a Handler.
//
// Recording the launch while the host starts is safe, and costs the
// invocation no wait for its fsync: a host does nothing on the Runtime's
// behalf before bootstrap (the host activates the provider only after an
// allowed bootstrap, and the Session refuses every other method before
// it), and the Handler answers bootstrap only once the write is durable.
// Until then the host is a process that read its context and waits. If the
// write fails, the host is stopped before it can bootstrap and nothing
// names it in the ledger: an operation settled meanwhile (cancelled,
// completed) is answered from the ledger; a generation that a concurrent
// Invoke of the same operation took first (or a new operation it created
// first with another default deadline) is prepared again from a fresh
// read, at most 4 times; anything else is returned as an error.
//
// With a Reserver (Config.Reserver, e.g. a catalogue.Catalogue), the
// launch is recorded before the host starts instead (a reservation is
// fenced with its attempt, so the attempt must exist first), and the
// attempt takes its capability's resource reservations before anything is
// launched, waiting up to Call.ReservationWait for another attempt that
// holds one; if it cannot, the attempt ends refused without launching, and
// the error names the holder (errors.Is cataloguestore.ErrReserved, errors.As
// *cataloguestore.ReservationError). The reservations are re-checked at
// invoke.admit and released when the attempt ends, whatever its outcome
// (a crash leaves them to be freed by the next attempt's fence, the
// operation's end or its deadline).
//
// Ledger writes of one invocation, each fsynced by a durable ledger:
// LaunchAttempt (beside the host's start), RedeemBootstrap, Admit, two per
// effect (BeginEffect, ConfirmEffect), AcceptResult and RecordAttempt: 5
// for an invocation without effects, 4 of them on its critical path. The
// others cannot move off it: each of RedeemBootstrap, Admit, BeginEffect,
// ConfirmEffect and AcceptResult is durable before the host hears the
// answer it guards, since the host acts on that answer (activates and runs
// provider code, consumes the effect, reports success), and RecordAttempt
// before Invoke returns, since the evidence is the only durable record of
// an attempt that ended without a result, and the caller may read it.
//
// Before anything is launched or recorded, preflight refuses what the host
// would refuse anyway, saying why, with a *PreflightError naming the
// check: a provider that is not admitted or whose binding cannot run here
// (unavailable), a capability not in the inventory (refused),
// requirements the Runtime cannot meet (unavailable), arguments that fail
// the request schema or that the host's strict parser would refuse
// (invalid_request; see port.CheckDocument), arguments whose top-level
// organization_id, defaults included, is not the operation's (refused,
// as the host would), arguments whose invoke.admit request could never
// fit the message bound (invalid_request), a new operation of a
// capability that uses the effect port with an effect budget of zero
// (refused). Then the Authority is asked, before launch
// (port.Admission.BeforeLaunch), and again at invoke.admit: a refusal or a
// hold costs no host and no bootstrap id however often the call is
// repeated. A binding whose python_version is not the host interpreter's
// (Config.HostPythonVersion) is refused, and New refuses a Config that
// names no interpreter version unless it opts out with
// SkipPythonVersionCheck. Cancel of an operation never invoked records it
// cancelled (capability CancelledCapability), so that a later Invoke is
// answered cancelled without launching.
//
// # Own controller
//
// A Supervisor is built from a lower layer that a team with its own
// controller can take alone, package supervise/handler: handler.New
// returns the Handler, the ipc.Handler of one attempt, backed by a
// ledger.Ledger, an Authority and a Dispatcher; handler.BuildContext
// (from a handler.ContextSpec) builds the attempt's LaunchContext;
// handler.CheckRequirements and port.CheckDocument refuse before launch
// what the host would refuse; handler.BindingOf rebuilds an attempt's
// wire binding from its evidence. The Handler's documentation gives how
// each ledger answer maps to the reply state the host receives.
// doc/design.md, “What moved where”, lists the names that lived in this
// package before.
//
// # Telemetry
//
// With Config.TracerProvider and Config.MeterProvider (nil: none; the
// global providers are never read or set), a Supervisor reports a span
// per Invoke, attempt, IPC method, ledger write and dispatch, with the
// ids as attributes and never an argument value, and the zeo.runtime.*
// metrics: invocations by state and their durations, effects by outcome,
// budget used, ledger write latency, warm and cold starts, lease
// renewals and takeovers. Config.Logger's records use the spans'
// attribute names. The names, attributes and units are listed in
// doc/design.md, “Telemetry”.
//
// # Outcomes
//
// The Outcome's State is decided in this order: the ledger holds an
// accepted result → succeeded (whatever the host said); the host's result
// is valid and coherent with the ledger → its state; the host was stopped
// at the deadline → timed_out; it was stopped after Cancel → cancelled;
// otherwise → protocol_error. Every state but succeeded comes with an
// *OutcomeError wrapping the state's sentinel, and Reason says why in
// words: the Handler's refusal, the Authority's reason, or what the host's
// error code usually means.
package supervise
