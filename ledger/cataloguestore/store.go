package cataloguestore

import (
	"context"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Store is the durable half of package catalogue: admitted provider
// generations, the generation each operation is pinned to, consent, and
// resource reservations. Every backend implements it beside
// [ledger.Ledger], in the same store, so that a reservation's fence is
// checked in the same transaction that takes it and a catalogue is shared
// by every controller that shares the ledger.
//
// The store keeps the catalogue's documents opaque (a provider record's
// Document is the catalogue's canonical JSON) and enforces only what must
// be atomic: generations strictly increasing per provider, one pin per
// operation, consent as sets, and at most one live exclusive holder (or
// any number of shared ones) per reservation key.
//
// Context, closing and the outcome of writes are as for [ledger.Ledger]:
// the same [ledger.ErrClosed], [ledger.ErrInvalid], [ledger.ErrNotApplied]
// and [ledger.ErrOutcomeUnknown], and every write is idempotent so that
// repeating it after an unknown outcome is safe.
//
// Implementations must pass
// [github.com/zeoruntime/runtimeipc/ledger/ledgertest.RunCatalogue].
type Store interface {
	// AdmitProvider records generation rec.Generation of provider
	// rec.Provider. It must be strictly greater than every generation of
	// that provider recorded so far, else a *GenerationError wrapping
	// ErrStaleGeneration; the same record again (same generation, binding
	// digest, manifest digest and document) returns the recorded one, so a
	// lost reply is safe to repeat. The ledger sets AdmittedAt and
	// increments the catalogue's revision.
	AdmitProvider(ctx context.Context, rec ProviderRecord) (ProviderRecord, error)

	// ProviderGeneration returns generation gen of provider p, or its
	// latest generation when gen is 0. [ledger.ErrNotFound] if there is none.
	ProviderGeneration(ctx context.Context, p ProviderKey, gen int64) (ProviderRecord, error)

	// ProviderGenerations returns every recorded generation of p in
	// increasing order, without their documents (Document is nil).
	ProviderGenerations(ctx context.Context, p ProviderKey) ([]ProviderRecord, error)

	// LatestProviders returns the catalogue's revision and the latest
	// generation of every provider, ordered by distribution then factory,
	// documents included. Two calls that return the same revision return
	// the same records.
	LatestProviders(ctx context.Context) (Snapshot, error)

	// CatalogueRevision returns the catalogue's revision: a counter that
	// every AdmitProvider that records something increments. A reader that
	// cached LatestProviders reloads when it changes.
	CatalogueRevision(ctx context.Context) (int64, error)

	// PinOperation records the provider generation (and connection
	// account) an operation runs on, unless the operation already has a
	// pin, and returns the recorded pin: the first writer wins, and a
	// caller compares the answer with what it asked for. A pin is never
	// changed or removed.
	PinOperation(ctx context.Context, p OperationPin) (OperationPin, error)

	// OperationPin returns the pin of an operation, [ledger.ErrNotFound] if
	// it has none.
	OperationPin(ctx context.Context, scope ledger.Scope, operationID string) (OperationPin, error)

	// GrantConsent adds c's sets to the consent recorded for (c.Scope,
	// c.Account) and returns the result. Granting what is granted
	// changes nothing.
	GrantConsent(ctx context.Context, c Consent) (Consent, error)

	// RevokeConsent removes c's sets from the consent recorded for
	// (c.Scope, c.Account) and returns what is left; a consent left empty
	// is removed. Revoking what is not granted changes nothing.
	RevokeConsent(ctx context.Context, c Consent) (Consent, error)

	// Consents returns the consent recorded in scope, ordered by account.
	Consents(ctx context.Context, scope ledger.Scope) ([]Consent, error)

	// Reserve takes every claim for the fenced attempt, all or none, and
	// returns the reservations it holds. The fence must be the current
	// one of an open operation whose deadline has not passed (else
	// *ledger.FenceError, ledger.ErrOperationCancelled, ErrResultAlreadyAccepted or
	// ErrDeadlineExceeded, in the Ledger's error order). A claim conflicts
	// with a live reservation of the same key in the same scope held by
	// another attempt, unless both are shared; a conflict is a
	// *ReservationError wrapping ErrReserved that names the holder.
	// A reservation is live while its holder's fence is its operation's
	// current fence, the operation is open and its deadline has not
	// passed: a newer attempt of the holder's operation, its end, or its
	// deadline frees it without any write. Taking what f already holds
	// returns it (idempotent).
	Reserve(ctx context.Context, f ledger.Fence, claims []Claim) ([]Reservation, error)

	// HeldBy returns the live reservations the attempt f names holds,
	// ordered by key; none once f is no longer live.
	HeldBy(ctx context.Context, f ledger.Fence) ([]Reservation, error)

	// Release removes every reservation the attempt f names holds, live
	// or not, and returns how many it removed. It is not fenced: an attempt
	// that was fenced off releases what it held. Releasing again returns 0.
	Release(ctx context.Context, f ledger.Fence) (int, error)

	// Reservations returns the live reservations of scope, ordered by
	// key, then holder.
	Reservations(ctx context.Context, scope ledger.Scope) ([]Reservation, error)
}

// MaxProviderDocument is the largest ProviderRecord.Document a store
// accepts (64 MiB); larger ones are [ledger.ErrInvalid].
const MaxProviderDocument = 64 << 20

// ProviderKey identifies a provider across its generations: the installed
// distribution and the factory that builds its registry.
type ProviderKey struct {
	// Distribution is a required identifier.
	Distribution string `json:"distribution"`
	// Factory is a required identifier ("module.path:attribute").
	Factory string `json:"factory"`
}

// ProviderRecord is one admitted generation of a provider.
type ProviderRecord struct {
	Provider ProviderKey `json:"provider"`
	// Generation is >= 1, strictly increasing per provider.
	Generation int64 `json:"generation"`
	// BindingDigest is the digest of the exact provider binding admitted.
	BindingDigest canon.Digest `json:"binding_digest"`
	// ManifestDigest is the binding's inventory digest.
	ManifestDigest canon.Digest `json:"manifest_digest"`
	// Document is the catalogue's record of the admission (canonical
	// JSON, opaque to the ledger): required, at most MaxProviderDocument
	// bytes. Nil in listings that leave it out.
	Document []byte `json:"-"`
	// AdmittedAt is set by the ledger when the generation is recorded.
	AdmittedAt time.Time `json:"admitted_at"`
}

// Snapshot is LatestProviders' answer.
type Snapshot struct {
	// Revision is the catalogue's revision these records are at.
	Revision int64
	// Providers holds the latest generation of each provider.
	Providers []ProviderRecord
}

// OperationPin is the provider generation an operation runs on, recorded
// before its first attempt, so that every attempt of the operation, by
// any controller, runs the exact binding it started with even after a
// newer generation is admitted.
type OperationPin struct {
	Scope        ledger.Scope `json:"scope"`
	OperationID  string       `json:"operation_id"`
	CapabilityID string       `json:"capability_id"`
	Provider     ProviderKey  `json:"provider"`
	// Generation is >= 1.
	Generation     int64        `json:"generation"`
	BindingDigest  canon.Digest `json:"binding_digest"`
	ManifestDigest canon.Digest `json:"manifest_digest"`
	// Account is the connection account the operation runs with; empty
	// when its capability needs none.
	Account string `json:"account,omitempty"`
}

// Consent is what a scope has consented to for one connection account:
// the capabilities it may run with the account and the credentials,
// services, effect kinds and effect operations they may use. Every set is
// sorted and without duplicates in a recorded Consent; in a call, sets are
// given in any order.
type Consent struct {
	Scope ledger.Scope `json:"scope"`
	// Account is a required identifier: the connection account (an
	// effect request's connection_ref).
	Account          string   `json:"account"`
	Capabilities     []string `json:"capabilities"`
	Credentials      []string `json:"credentials"`
	Services         []string `json:"services"`
	EffectKinds      []string `json:"effect_kinds"`
	EffectOperations []string `json:"effect_operations"`
}

// Claim is one reservation an attempt asks for.
type Claim struct {
	// Key names the resource within the fence's scope: a required
	// identifier the caller builds (package catalogue builds them from the
	// manifest's effects.concurrency).
	Key string `json:"key"`
	// Shared claims of one key may be held by several attempts at once;
	// an exclusive claim excludes every other holder.
	Shared bool `json:"shared"`
	// CapabilityID is the capability the claim is for (diagnostics).
	CapabilityID string `json:"capability_id"`
}

// Reservation is a claim held by an attempt.
type Reservation struct {
	Claim
	// Holder is the fence of the attempt that holds it.
	Holder ledger.Fence `json:"holder"`
	// Deadline is the holder operation's deadline, after which the
	// reservation is free; zero for none.
	Deadline time.Time `json:"deadline"`
}
