// Package catalogue is the Runtime's record of admitted capability
// providers, shared by every controller that shares a ledger: which
// provider generations are admitted, who may see and run each capability,
// what each scope has consented to with each connection account, and the
// resource reservations that serialize invocations across controllers.
//
// Start with [New]: a [Config] names the ledger's store (any ledger
// backend) and a Discover port (agent.Discover of a launch.Launcher).
// [Catalogue.Admit] admits a provider binding as a new generation,
// [Catalogue.Grant] records consent, and agent.Authority makes the
// Catalogue the Supervisor's Authority; package agent's Facade is the
// usual way to run what it admits.
//
// # What it promises
//
//   - Admission: a provider binding is admitted only once manifest
//     validation and the host's own static discovery (the Config's
//     Discover port) agree on its manifest digest.
//   - Generations: per provider (distribution and factory), each admitted
//     generation is strictly greater than the last; a lower or equal one
//     is refused (cataloguestore.ErrStaleGeneration), and of two controllers
//     admitting the same generation number concurrently exactly one wins.
//     A new generation replaces the previous one atomically for new
//     operations. An operation is pinned, before its first attempt, to the
//     generation current then (cataloguestore.OperationPin): every attempt of it,
//     by any controller, runs that exact binding and manifest digest until
//     it ends.
//   - Scope: an admission names the organizations and projects that may
//     see and run each capability. Outside them a capability does not
//     exist: every method answers for it exactly as for an id that was
//     never admitted (ErrUnknownCapability, with the same text), and no
//     listing or count includes it.
//   - Consent: a capability whose requirements name credentials or
//     services runs only with a connection account the scope consented
//     to for it, its credentials, services and effect kinds; each effect
//     it requests must name that account and an effect operation the
//     consent covers. Consent is granted and revoked explicitly and never
//     widened implicitly: a new generation needing more is admitted, but
//     what needs more does not run until it is granted. When several
//     accounts could serve a call the caller must name one.
//     Revocation takes effect at the next check, including the
//     invoke.admit of an attempt already launched (CheckAdmission).
//   - Reservations: a capability's effects.concurrency is enforced across
//     invocations and controllers (see Reserve): taken durably, fenced
//     with the attempt, re-checked at invoke.admit, released when the
//     attempt ends, and never left held by a crashed controller.
//
// # Use with package supervise
//
// The catalogue knows nothing of the Supervisor (it does not import
// package supervise). A run goes: Prepare (visibility, consent, the
// account, the pin) → a Supervisor bound to Plan.Binding, whose Authority
// calls CheckAdmission and CheckEffect, and whose reservation port is the
// Catalogue itself (Reserve, Recheck and Release have the port's
// signatures).
//
// Durability: everything is stored through a [cataloguestore.Store],
// which every backend (ledger/memory, ledger/bolt, ledger/postgres)
// implements beside its ledger.Ledger, and which ledgertest.RunCatalogue
// checks.
package catalogue
