// Package port defines what an embedder plugs into a supervise.Supervisor
// (or into the Handler of package supervise/handler): the Authority, which
// decides whether an attempt may run and whether each new effect may be
// dispatched; the Dispatcher, which holds the credentials and consumes
// authorized effects; and the Reserver, which enforces a capability's
// resource reservations. It also gives the values that cross these ports,
// the Grants (what a capability may use besides the effect port,
// EffectsService) and CheckDocument, the rule every document sent to a
// host must meet.
//
// Each port states its outcomes exactly: what an error means, what the
// host is answered, and what the ledger records (see doc/design.md,
// “Layering”). A nil port in a Config has a documented default: AllowAll
// for the Authority, NoEffects for the Dispatcher, no reservations for the
// Reserver.
package port
