package core

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/internal/check"
)

// The catalogue's records (cataloguestore.Store) are kept in a sorted
// key-value space per Kind, which every backend provides through CatTx:
// a map for ledger/memory, one bbolt bucket for ledger/bolt, one table for
// ledger/postgres. Keys are tuples encoded by Key (order-preserving and
// prefix-free), values JSON. The functions below decide every call in one
// CatTx, before their first write, as the ledger's functions do.

// Kind is a kind of catalogue record.
type Kind byte

// The kinds of catalogue records and their keys:
//
//	KindMeta         ("revision")                              → revision (JSON int64)
//	KindProvider     (distribution, factory, generation hex)   → cataloguestore.ProviderRecord (JSON, no document)
//	KindDocument     (distribution, factory, generation hex)   → the document's bytes
//	KindLatest       (distribution, factory)                   → latest generation (JSON int64)
//	KindPin          (org, project, operation)                 → cataloguestore.OperationPin
//	KindConsent      (org, project, account)                   → cataloguestore.Consent
//	KindReservation  (org, project, key, operation)            → cataloguestore.Reservation
//	KindHolding      (org, project, operation, key)            → "" (the reservations an operation's attempts hold)
const (
	KindMeta Kind = 1 + iota
	KindProvider
	KindDocument
	KindLatest
	KindPin
	KindConsent
	KindReservation
	KindHolding
)

// Kinds lists every kind, for backends that create one space per kind.
var Kinds = []Kind{KindMeta, KindProvider, KindDocument, KindLatest, KindPin, KindConsent, KindReservation, KindHolding}

// CatTx is one backend transaction as the catalogue's functions use it.
// Get methods return values the caller may keep (copies).
type CatTx interface {
	// Rec returns the record of kind under key.
	Rec(kind Kind, key string) ([]byte, bool, error)
	// PutRec stores v under key.
	PutRec(kind Kind, key string, v []byte) error
	// DelRec removes the record under key, if any.
	DelRec(kind Kind, key string) error
	// ScanRecs calls fn with every record of kind whose key starts with
	// prefix, in key (byte) order, until fn returns false.
	ScanRecs(kind Kind, prefix string, fn func(key string, v []byte) bool) error
	// Operation returns the operation as recorded (state, current
	// attempt and generation, deadline), for fences and liveness.
	Operation(k OpKey) (ledger.Operation, bool, error)
	// Now is the time the transaction judges deadlines by.
	Now() time.Time
	// Lock takes, until the transaction ends, an exclusive lock named by
	// kind and key, before the call reads the records it guards: calls on
	// the same provider, pin, consent or reservation key then take turns
	// instead of failing each other's serialization. A backend whose
	// transactions are serial already does nothing.
	Lock(kind Kind, key string) error
}

// Key encodes a tuple (see AppendKey) as a string.
func Key(parts ...string) string { return string(AppendKey(nil, parts...)) }

// AppendKey appends the encoding of a tuple to b: each part with 0x00
// escaped as 0x00 0xff and ended by 0x00 0x01. Byte order of encoded
// tuples is the order of the tuples, and the encoding of a tuple is a
// prefix of the encodings of its extensions only. ledger/bolt keys its
// buckets with it too.
func AppendKey(b []byte, parts ...string) []byte {
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			if p[i] == 0 {
				b = append(b, 0, 0xff)
			} else {
				b = append(b, p[i])
			}
		}
		b = append(b, 0, 1)
	}
	return b
}

// SplitKey decodes an encoded tuple. Its errors say what is malformed;
// callers wrap them with ledger.ErrCorrupt.
func SplitKey[K ~string | ~[]byte](k K) ([]string, error) {
	var parts []string
	var cur []byte
	for i := 0; i < len(k); i++ {
		if k[i] != 0 {
			cur = append(cur, k[i])
			continue
		}
		if i+1 >= len(k) {
			return nil, errors.New("truncated escape")
		}
		i++
		switch k[i] {
		case 0xff:
			cur = append(cur, 0)
		case 1:
			parts = append(parts, string(cur))
			cur = cur[:0]
		default:
			return nil, errors.New("bad escape")
		}
	}
	if len(cur) != 0 {
		return nil, errors.New("unterminated part")
	}
	return parts, nil
}

func genHex(g int64) string {
	return hex.EncodeToString(binary.BigEndian.AppendUint64(nil, uint64(g)))
}

func getJSON[T any](tx CatTx, kind Kind, key string) (T, bool, error) {
	var v T
	raw, ok, err := tx.Rec(kind, key)
	if err != nil || !ok {
		return v, false, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("ledger: catalogue record %d %q: %w: %v", kind, key, ledger.ErrCorrupt, err)
	}
	return v, true, nil
}

func putJSON(tx CatTx, kind Kind, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ledger: encoding catalogue record %d: %w", kind, err)
	}
	return tx.PutRec(kind, key, raw)
}

func scanJSON[T any](tx CatTx, kind Kind, prefix string) ([]T, error) {
	out := []T{}
	var bad error
	err := tx.ScanRecs(kind, prefix, func(key string, raw []byte) bool {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			bad = fmt.Errorf("ledger: catalogue record %d %q: %w: %v", kind, key, ledger.ErrCorrupt, err)
			return false
		}
		out = append(out, v)
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}

func providerKey(p cataloguestore.ProviderKey) string { return Key(p.Distribution, p.Factory) }

func providerGenKey(p cataloguestore.ProviderKey, gen int64) string {
	return Key(p.Distribution, p.Factory, genHex(gen))
}

// ValidateProviderKey checks a provider key.
func ValidateProviderKey(op string, p cataloguestore.ProviderKey) error {
	return invalid(op, check.ID("distribution", p.Distribution), check.ID("factory", p.Factory))
}

// ValidateAdmitProvider checks AdmitProvider's arguments.
func ValidateAdmitProvider(rec cataloguestore.ProviderRecord) error {
	const op = "AdmitProvider"
	if err := ValidateProviderKey(op, rec.Provider); err != nil {
		return err
	}
	var errs []error
	if rec.Generation < 1 {
		errs = append(errs, fmt.Errorf("%w: generation %d, want >= 1", ledger.ErrInvalid, rec.Generation))
	}
	errs = append(errs, check.Digest("binding_digest", rec.BindingDigest), check.Digest("manifest_digest", rec.ManifestDigest))
	if n := len(rec.Document); n == 0 || n > cataloguestore.MaxProviderDocument {
		errs = append(errs, fmt.Errorf("%w: document of %d bytes, want 1..%d", ledger.ErrInvalid, n, cataloguestore.MaxProviderDocument))
	}
	return invalid(op, errs...)
}

// AdmitProvider implements cataloguestore.Store.AdmitProvider.
func AdmitProvider(tx CatTx, rec cataloguestore.ProviderRecord) (cataloguestore.ProviderRecord, error) {
	if err := ValidateAdmitProvider(rec); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if err := tx.Lock(KindLatest, providerKey(rec.Provider)); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	gk := providerGenKey(rec.Provider, rec.Generation)
	if old, ok, err := getJSON[cataloguestore.ProviderRecord](tx, KindProvider, gk); err != nil {
		return cataloguestore.ProviderRecord{}, err
	} else if ok {
		doc, _, err := tx.Rec(KindDocument, gk)
		if err != nil {
			return cataloguestore.ProviderRecord{}, err
		}
		if old.BindingDigest == rec.BindingDigest && old.ManifestDigest == rec.ManifestDigest && bytes.Equal(doc, rec.Document) {
			old.Document = doc
			return old, nil
		}
	}
	latest, _, err := getJSON[int64](tx, KindLatest, providerKey(rec.Provider))
	if err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if rec.Generation <= latest {
		return cataloguestore.ProviderRecord{}, &cataloguestore.GenerationError{Provider: rec.Provider, Presented: rec.Generation, Latest: latest}
	}
	rev, _, err := getJSON[int64](tx, KindMeta, Key("revision"))
	if err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	out := rec
	out.Document = nil
	out.AdmittedAt = NormDeadline(tx.Now())
	if err := putJSON(tx, KindProvider, gk, out); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if err := tx.PutRec(KindDocument, gk, bytes.Clone(rec.Document)); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if err := putJSON(tx, KindLatest, providerKey(rec.Provider), rec.Generation); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if err := putJSON(tx, KindMeta, Key("revision"), rev+1); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	out.Document = bytes.Clone(rec.Document)
	return out, nil
}

// ProviderGeneration implements cataloguestore.Store.ProviderGeneration.
func ProviderGeneration(tx CatTx, p cataloguestore.ProviderKey, gen int64) (cataloguestore.ProviderRecord, error) {
	const op = "ProviderGeneration"
	if err := ValidateProviderKey(op, p); err != nil {
		return cataloguestore.ProviderRecord{}, err
	}
	if gen < 0 {
		return cataloguestore.ProviderRecord{}, invalid(op, fmt.Errorf("%w: generation %d is negative", ledger.ErrInvalid, gen))
	}
	if gen == 0 {
		latest, ok, err := getJSON[int64](tx, KindLatest, providerKey(p))
		if err != nil {
			return cataloguestore.ProviderRecord{}, err
		}
		if !ok {
			return cataloguestore.ProviderRecord{}, providerNotFound(op, p, 0)
		}
		gen = latest
	}
	return loadProvider(tx, op, p, gen)
}

func providerNotFound(op string, p cataloguestore.ProviderKey, gen int64) error {
	if gen == 0 {
		return fmt.Errorf("ledger: %s: provider %s (%s): %w", op, p.Distribution, p.Factory, ledger.ErrNotFound)
	}
	return fmt.Errorf("ledger: %s: provider %s (%s) generation %d: %w", op, p.Distribution, p.Factory, gen, ledger.ErrNotFound)
}

func loadProvider(tx CatTx, op string, p cataloguestore.ProviderKey, gen int64) (cataloguestore.ProviderRecord, error) {
	gk := providerGenKey(p, gen)
	rec, ok, err := getJSON[cataloguestore.ProviderRecord](tx, KindProvider, gk)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, providerNotFound(op, p, gen)
	}
	doc, ok, err := tx.Rec(KindDocument, gk)
	if err != nil {
		return rec, err
	}
	if !ok {
		return rec, fmt.Errorf("ledger: %s: provider %s (%s) generation %d has no document: %w", op, p.Distribution, p.Factory, gen, ledger.ErrCorrupt)
	}
	rec.Document = doc
	return rec, nil
}

// ProviderGenerations implements cataloguestore.Store.ProviderGenerations.
func ProviderGenerations(tx CatTx, p cataloguestore.ProviderKey) ([]cataloguestore.ProviderRecord, error) {
	if err := ValidateProviderKey("ProviderGenerations", p); err != nil {
		return nil, err
	}
	return scanJSON[cataloguestore.ProviderRecord](tx, KindProvider, providerKey(p))
}

// LatestProviders implements cataloguestore.Store.LatestProviders.
func LatestProviders(tx CatTx) (cataloguestore.Snapshot, error) {
	rev, err := CatalogueRevision(tx)
	if err != nil {
		return cataloguestore.Snapshot{}, err
	}
	type latest struct {
		p   cataloguestore.ProviderKey
		gen int64
	}
	var all []latest
	var bad error
	err = tx.ScanRecs(KindLatest, "", func(key string, raw []byte) bool {
		parts, err := SplitKey(key)
		var gen int64
		if err == nil && len(parts) != 2 {
			err = fmt.Errorf("%d parts", len(parts))
		}
		if err == nil {
			err = json.Unmarshal(raw, &gen)
		}
		if err != nil {
			bad = fmt.Errorf("ledger: LatestProviders: record %q: %w: %v", key, ledger.ErrCorrupt, err)
			return false
		}
		all = append(all, latest{cataloguestore.ProviderKey{Distribution: parts[0], Factory: parts[1]}, gen})
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return cataloguestore.Snapshot{}, err
	}
	slices.SortFunc(all, func(a, b latest) int {
		if c := strings.Compare(a.p.Distribution, b.p.Distribution); c != 0 {
			return c
		}
		return strings.Compare(a.p.Factory, b.p.Factory)
	})
	out := cataloguestore.Snapshot{Revision: rev, Providers: make([]cataloguestore.ProviderRecord, 0, len(all))}
	for _, l := range all {
		rec, err := loadProvider(tx, "LatestProviders", l.p, l.gen)
		if err != nil {
			return cataloguestore.Snapshot{}, err
		}
		out.Providers = append(out.Providers, rec)
	}
	return out, nil
}

// CatalogueRevision implements cataloguestore.Store.CatalogueRevision.
func CatalogueRevision(tx CatTx) (int64, error) {
	rev, _, err := getJSON[int64](tx, KindMeta, Key("revision"))
	return rev, err
}

func pinKey(s ledger.Scope, opID string) string { return Key(s.OrganizationID, s.ProjectID, opID) }

// ValidatePin checks PinOperation's argument.
func ValidatePin(p cataloguestore.OperationPin) error {
	const op = "PinOperation"
	if err := ValidateProviderKey(op, p.Provider); err != nil {
		return err
	}
	errs := []error{p.Scope.Validate(), check.ID("operation_id", p.OperationID), check.ID("capability_id", p.CapabilityID),
		check.Digest("binding_digest", p.BindingDigest), check.Digest("manifest_digest", p.ManifestDigest)}
	if p.Generation < 1 {
		errs = append(errs, fmt.Errorf("%w: generation %d, want >= 1", ledger.ErrInvalid, p.Generation))
	}
	if p.Account != "" {
		errs = append(errs, check.ID("account", p.Account))
	}
	return invalid(op, errs...)
}

// PinOperation implements cataloguestore.Store.PinOperation.
func PinOperation(tx CatTx, p cataloguestore.OperationPin) (cataloguestore.OperationPin, error) {
	if err := ValidatePin(p); err != nil {
		return cataloguestore.OperationPin{}, err
	}
	k := pinKey(p.Scope, p.OperationID)
	if err := tx.Lock(KindPin, k); err != nil {
		return cataloguestore.OperationPin{}, err
	}
	if old, ok, err := getJSON[cataloguestore.OperationPin](tx, KindPin, k); err != nil || ok {
		return old, err
	}
	return p, putJSON(tx, KindPin, k, p)
}

// GetPin implements cataloguestore.Store.OperationPin.
func GetPin(tx CatTx, s ledger.Scope, opID string) (cataloguestore.OperationPin, error) {
	const op = "OperationPin"
	if err := invalid(op, s.Validate(), check.ID("operation_id", opID)); err != nil {
		return cataloguestore.OperationPin{}, err
	}
	p, ok, err := getJSON[cataloguestore.OperationPin](tx, KindPin, pinKey(s, opID))
	if err != nil {
		return p, err
	}
	if !ok {
		return p, fmt.Errorf("ledger: %s: operation %q has no pin: %w", op, opID, ledger.ErrNotFound)
	}
	return p, nil
}

// ValidateConsent checks the argument of GrantConsent and RevokeConsent.
func ValidateConsent(op string, c cataloguestore.Consent) error {
	errs := []error{c.Scope.Validate(), check.ID("account", c.Account)}
	for _, set := range [][]string{c.Capabilities, c.Credentials, c.Services, c.EffectKinds, c.EffectOperations} {
		for _, v := range set {
			errs = append(errs, check.ID("consent entry", v))
		}
	}
	return invalid(op, errs...)
}

// NormConsent sorts and de-duplicates c's sets, nil ones becoming empty.
func NormConsent(c cataloguestore.Consent) cataloguestore.Consent {
	norm := func(s []string) []string {
		out := slices.Clone(s)
		if out == nil {
			out = []string{}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	c.Capabilities, c.Credentials, c.Services = norm(c.Capabilities), norm(c.Credentials), norm(c.Services)
	c.EffectKinds, c.EffectOperations = norm(c.EffectKinds), norm(c.EffectOperations)
	return c
}

// ConsentEmpty reports whether c grants nothing.
func ConsentEmpty(c cataloguestore.Consent) bool {
	return len(c.Capabilities)+len(c.Credentials)+len(c.Services)+len(c.EffectKinds)+len(c.EffectOperations) == 0
}

func consentKey(c cataloguestore.Consent) string {
	return Key(c.Scope.OrganizationID, c.Scope.ProjectID, c.Account)
}

// GrantConsent implements cataloguestore.Store.GrantConsent.
func GrantConsent(tx CatTx, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return changeConsent(tx, "GrantConsent", c, func(have, arg []string) []string { return append(have, arg...) })
}

// RevokeConsent implements cataloguestore.Store.RevokeConsent.
func RevokeConsent(tx CatTx, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return changeConsent(tx, "RevokeConsent", c, func(have, arg []string) []string {
		return slices.DeleteFunc(have, func(v string) bool { return slices.Contains(arg, v) })
	})
}

func changeConsent(tx CatTx, op string, c cataloguestore.Consent, f func(have, arg []string) []string) (cataloguestore.Consent, error) {
	if err := ValidateConsent(op, c); err != nil {
		return cataloguestore.Consent{}, err
	}
	k := consentKey(c)
	if err := tx.Lock(KindConsent, k); err != nil {
		return cataloguestore.Consent{}, err
	}
	have, _, err := getJSON[cataloguestore.Consent](tx, KindConsent, k)
	if err != nil {
		return cataloguestore.Consent{}, err
	}
	have = NormConsent(have)
	have.Scope, have.Account = c.Scope, c.Account
	have.Capabilities = f(have.Capabilities, c.Capabilities)
	have.Credentials = f(have.Credentials, c.Credentials)
	have.Services = f(have.Services, c.Services)
	have.EffectKinds = f(have.EffectKinds, c.EffectKinds)
	have.EffectOperations = f(have.EffectOperations, c.EffectOperations)
	have = NormConsent(have)
	if ConsentEmpty(have) {
		return have, tx.DelRec(KindConsent, k)
	}
	return have, putJSON(tx, KindConsent, k, have)
}

// Consents implements cataloguestore.Store.Consents.
func Consents(tx CatTx, s ledger.Scope) ([]cataloguestore.Consent, error) {
	if err := invalid("Consents", s.Validate()); err != nil {
		return nil, err
	}
	return scanJSON[cataloguestore.Consent](tx, KindConsent, Key(s.OrganizationID, s.ProjectID))
}

// ValidateReserve checks Reserve's arguments: a valid fence, and claims
// with identifier keys, each key once.
func ValidateReserve(f ledger.Fence, claims []cataloguestore.Claim) error {
	errs := []error{f.Validate()}
	seen := make(map[string]bool, len(claims))
	for _, c := range claims {
		errs = append(errs, check.ID("claim key", c.Key), check.ID("claim capability_id", c.CapabilityID))
		if seen[c.Key] {
			errs = append(errs, fmt.Errorf("%w: claim key %q appears twice", ledger.ErrInvalid, c.Key))
		}
		seen[c.Key] = true
	}
	return invalid("Reserve", errs...)
}

// holderKey and holdingKey index a reservation by key and by holder.
func reservationKey(s ledger.Scope, key, opID string) string {
	return Key(s.OrganizationID, s.ProjectID, key, opID)
}

func holdingKey(s ledger.Scope, opID, key string) string {
	return Key(s.OrganizationID, s.ProjectID, opID, key)
}

// live reports whether r's holder is still the current attempt of an open
// operation whose deadline has not passed.
func live(tx CatTx, r cataloguestore.Reservation, now time.Time) (bool, error) {
	h := r.Holder
	op, ok, err := tx.Operation(KeyOf(h.Scope, h.OperationID))
	if err != nil || !ok {
		return false, err
	}
	return op.State == ledger.OperationOpen && op.CurrentAttemptID == h.AttemptID && op.CurrentGeneration == h.Generation &&
		(op.Deadline.IsZero() || now.Before(op.Deadline)), nil
}

// Reserve implements cataloguestore.Store.Reserve.
func Reserve(tx CatTx, f ledger.Fence, claims []cataloguestore.Claim) ([]cataloguestore.Reservation, error) {
	const op = "Reserve"
	if err := ValidateReserve(f, claims); err != nil {
		return nil, err
	}
	o, ok, err := tx.Operation(KeyOf(f.Scope, f.OperationID))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, OperationNotFound(op, f.Scope, f.OperationID)
	}
	if o.CurrentGeneration != f.Generation || o.CurrentAttemptID != f.AttemptID {
		return nil, StaleFence(op, f, o.CurrentAttemptID, o.CurrentGeneration)
	}
	if err := NotOpen(op, o.OperationID, o.State, o.CancelReason); err != nil {
		return nil, err
	}
	now := tx.Now()
	if dl := o.Deadline; !dl.IsZero() && !now.Before(dl) {
		return nil, DeadlinePassed(op, o.OperationID, dl)
	}
	// Lock the claimed keys, in key order so that two calls never wait
	// for each other in a cycle.
	keys := make([]string, len(claims))
	for i, c := range claims {
		keys[i] = Key(f.Scope.OrganizationID, f.Scope.ProjectID, c.Key)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := tx.Lock(KindReservation, k); err != nil {
			return nil, err
		}
	}
	// Decide first: every holder of every claimed key.
	var stale []cataloguestore.Reservation
	for _, c := range claims {
		holders, err := scanJSON[cataloguestore.Reservation](tx, KindReservation, Key(f.Scope.OrganizationID, f.Scope.ProjectID, c.Key))
		if err != nil {
			return nil, err
		}
		for _, h := range holders {
			if h.Holder.OperationID == f.OperationID {
				continue // this operation's own record, rewritten below
			}
			ok, err := live(tx, h, now)
			if err != nil {
				return nil, err
			}
			if !ok {
				stale = append(stale, h)
				continue
			}
			if !(c.Shared && h.Shared) {
				return nil, &cataloguestore.ReservationError{Claim: c, Holder: h}
			}
		}
	}
	// Write: free the dead holders met, take the claims.
	for _, h := range stale {
		if err := dropReservation(tx, h); err != nil {
			return nil, err
		}
	}
	out := make([]cataloguestore.Reservation, 0, len(claims))
	for _, c := range claims {
		r := cataloguestore.Reservation{Claim: c, Holder: f, Deadline: NormDeadline(o.Deadline)}
		if err := putJSON(tx, KindReservation, reservationKey(f.Scope, c.Key, f.OperationID), r); err != nil {
			return nil, err
		}
		if err := tx.PutRec(KindHolding, holdingKey(f.Scope, f.OperationID, c.Key), []byte{}); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b cataloguestore.Reservation) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

func dropReservation(tx CatTx, r cataloguestore.Reservation) error {
	h := r.Holder
	if err := tx.DelRec(KindReservation, reservationKey(h.Scope, r.Key, h.OperationID)); err != nil {
		return err
	}
	return tx.DelRec(KindHolding, holdingKey(h.Scope, h.OperationID, r.Key))
}

// heldBy returns the reservation records of f's operation held by f
// itself, ordered by key.
func heldBy(tx CatTx, f ledger.Fence) ([]cataloguestore.Reservation, error) {
	var keys []string
	var bad error
	err := tx.ScanRecs(KindHolding, Key(f.Scope.OrganizationID, f.Scope.ProjectID, f.OperationID), func(key string, _ []byte) bool {
		parts, err := SplitKey(key)
		if err != nil || len(parts) != 4 {
			bad = fmt.Errorf("ledger: reservation index key %q: %w", key, ledger.ErrCorrupt)
			return false
		}
		keys = append(keys, parts[3])
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return nil, err
	}
	var out []cataloguestore.Reservation
	for _, k := range keys {
		r, ok, err := getJSON[cataloguestore.Reservation](tx, KindReservation, reservationKey(f.Scope, k, f.OperationID))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("ledger: reservation %q of operation %q is indexed but not recorded: %w", k, f.OperationID, ledger.ErrCorrupt)
		}
		if r.Holder == f {
			out = append(out, r)
		}
	}
	return out, nil
}

// HeldBy implements cataloguestore.Store.HeldBy.
func HeldBy(tx CatTx, f ledger.Fence) ([]cataloguestore.Reservation, error) {
	if err := invalid("HeldBy", f.Validate()); err != nil {
		return nil, err
	}
	rs, err := heldBy(tx, f)
	if err != nil || len(rs) == 0 {
		return []cataloguestore.Reservation{}, err
	}
	ok, err := live(tx, rs[0], tx.Now())
	if err != nil {
		return nil, err
	}
	if !ok {
		return []cataloguestore.Reservation{}, nil
	}
	return rs, nil
}

// Release implements cataloguestore.Store.Release.
func Release(tx CatTx, f ledger.Fence) (int, error) {
	if err := invalid("Release", f.Validate()); err != nil {
		return 0, err
	}
	rs, err := heldBy(tx, f)
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		if err := dropReservation(tx, r); err != nil {
			return 0, err
		}
	}
	return len(rs), nil
}

// Reservations implements cataloguestore.Store.Reservations.
func Reservations(tx CatTx, s ledger.Scope) ([]cataloguestore.Reservation, error) {
	if err := invalid("Reservations", s.Validate()); err != nil {
		return nil, err
	}
	all, err := scanJSON[cataloguestore.Reservation](tx, KindReservation, Key(s.OrganizationID, s.ProjectID))
	if err != nil {
		return nil, err
	}
	now := tx.Now()
	out := all[:0]
	for _, r := range all {
		ok, err := live(tx, r, now)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// checkCatalogue verifies the catalogue's records (CheckTx calls it):
//
//  8. every provider generation is filed under its own provider and
//     generation and has a document; each provider's latest generation
//     is its greatest recorded one; the revision counts the generations;
//  9. every pin and every consent is filed under its own key, and a
//     recorded consent is sorted, without duplicates, and not empty;
//  10. every reservation is filed under its own scope, key and holder's
//     operation, with its holding index entry, and every holding index
//     entry has its reservation.
//
// Its error is the Tx's own, or a record that does not decode.
func checkCatalogue(tx CatTx, report func(string, ...any) bool) error {
	provs, err := scanJSON[cataloguestore.ProviderRecord](tx, KindProvider, "")
	if err != nil {
		return err
	}
	greatest := map[cataloguestore.ProviderKey]int64{}
	for _, p := range provs {
		k := providerGenKey(p.Provider, p.Generation)
		if _, ok, err := tx.Rec(KindDocument, k); err != nil {
			return err
		} else if !ok && !report("provider %s (%s) generation %d has no document", p.Provider.Distribution, p.Provider.Factory, p.Generation) {
			return nil
		}
		greatest[p.Provider] = max(greatest[p.Provider], p.Generation)
	}
	for p, g := range greatest {
		latest, ok, err := getJSON[int64](tx, KindLatest, providerKey(p))
		if err != nil {
			return err
		}
		if (!ok || latest != g) && !report("provider %s (%s): latest generation %d, greatest recorded %d", p.Distribution, p.Factory, latest, g) {
			return nil
		}
	}
	if rev, err := CatalogueRevision(tx); err != nil {
		return err
	} else if rev != int64(len(provs)) && !report("catalogue revision %d, %d generations recorded", rev, len(provs)) {
		return nil
	}
	pins, err := scanKeyed[cataloguestore.OperationPin](tx, KindPin)
	if err != nil {
		return err
	}
	for k, p := range pins {
		if k != pinKey(p.Scope, p.OperationID) && !report("pin of operation %q is filed under another key", p.OperationID) {
			return nil
		}
	}
	consents, err := scanKeyed[cataloguestore.Consent](tx, KindConsent)
	if err != nil {
		return err
	}
	for k, c := range consents {
		n := NormConsent(c)
		if (k != consentKey(c) || ConsentEmpty(c) || !slices.Equal(n.Capabilities, c.Capabilities) || !slices.Equal(n.Credentials, c.Credentials) ||
			!slices.Equal(n.Services, c.Services) || !slices.Equal(n.EffectKinds, c.EffectKinds) || !slices.Equal(n.EffectOperations, c.EffectOperations)) &&
			!report("consent of account %q is misfiled, empty or not a sorted set", c.Account) {
			return nil
		}
	}
	res, err := scanKeyed[cataloguestore.Reservation](tx, KindReservation)
	if err != nil {
		return err
	}
	indexed := map[string]bool{}
	for k, r := range res {
		h := r.Holder
		if k != reservationKey(h.Scope, r.Key, h.OperationID) && !report("reservation %q of operation %q is filed under another key", r.Key, h.OperationID) {
			return nil
		}
		hk := holdingKey(h.Scope, h.OperationID, r.Key)
		indexed[hk] = true
		if _, ok, err := tx.Rec(KindHolding, hk); err != nil {
			return err
		} else if !ok && !report("reservation %q of operation %q is not in the holding index", r.Key, h.OperationID) {
			return nil
		}
	}
	var stray []string
	if err := tx.ScanRecs(KindHolding, "", func(k string, _ []byte) bool {
		if !indexed[k] {
			stray = append(stray, k)
		}
		return true
	}); err != nil {
		return err
	}
	for _, k := range stray {
		if !report("holding index entry %q has no reservation", k) {
			return nil
		}
	}
	return nil
}

// scanKeyed returns every record of kind by key.
func scanKeyed[T any](tx CatTx, kind Kind) (map[string]T, error) {
	out := map[string]T{}
	var bad error
	err := tx.ScanRecs(kind, "", func(key string, raw []byte) bool {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			bad = fmt.Errorf("ledger: catalogue record %d %q: %w: %v", kind, key, ledger.ErrCorrupt, err)
			return false
		}
		out[key] = v
		return true
	})
	if err == nil {
		err = bad
	}
	return out, err
}
