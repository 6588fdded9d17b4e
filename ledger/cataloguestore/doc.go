// Package cataloguestore is the storage port of package catalogue: the
// records a catalogue keeps in the ledger's own store (admitted provider
// generations, operation pins, consent, resource reservations) and the
// [Store] interface every ledger backend implements beside
// [github.com/zeoruntime/runtimeipc/ledger.Ledger].
//
// An embedder opens no Store: the ledger it already opened (ledger/memory,
// ledger/bolt or ledger/postgres) is one, and package catalogue uses it.
// The records meet an embedder in the catalogue's calls: a [ProviderKey]
// names a provider, a [Consent] is what a scope granted, and a refused
// reservation is a [*ReservationError] wrapping [ErrReserved]. A backend
// author implements Store and runs
// [github.com/zeoruntime/runtimeipc/ledger/ledgertest.RunCatalogue].
//
// It lives beside the ledger, not inside it, so that the ledger's first
// page lists what an embedder uses; its rules are the ledger's (one
// transaction per call, the ledger's errors, idempotent writes), and a
// reservation is checked against the ledger's fences in the same
// transaction that takes it.
package cataloguestore
