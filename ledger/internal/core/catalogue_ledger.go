package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
)

var _ cataloguestore.Store = (*Ledger)(nil)

// catCall runs fn in one transaction of the runner, whose Tx must also be
// a CatTx (ledger/memory's and ledger/bolt's are).
func catCall[T any](l *Ledger, ctx context.Context, op string, w bool, fn func(CatTx) (T, error)) (T, error) {
	return call0(l, ctx, op, w, func(tx Tx) (T, error) {
		ct, ok := tx.(CatTx)
		if !ok {
			var zero T
			return zero, fmt.Errorf("ledger: %s: this backend keeps no catalogue: %w", op, errors.ErrUnsupported)
		}
		return fn(ct)
	})
}

// AdmitProvider implements [cataloguestore.Store].
func (l *Ledger) AdmitProvider(ctx context.Context, rec cataloguestore.ProviderRecord) (cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "AdmitProvider", writes, func(tx CatTx) (cataloguestore.ProviderRecord, error) { return AdmitProvider(tx, rec) })
}

// ProviderGeneration implements [cataloguestore.Store].
func (l *Ledger) ProviderGeneration(ctx context.Context, p cataloguestore.ProviderKey, gen int64) (cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGeneration", reads, func(tx CatTx) (cataloguestore.ProviderRecord, error) { return ProviderGeneration(tx, p, gen) })
}

// ProviderGenerations implements [cataloguestore.Store].
func (l *Ledger) ProviderGenerations(ctx context.Context, p cataloguestore.ProviderKey) ([]cataloguestore.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGenerations", reads, func(tx CatTx) ([]cataloguestore.ProviderRecord, error) { return ProviderGenerations(tx, p) })
}

// LatestProviders implements [cataloguestore.Store].
func (l *Ledger) LatestProviders(ctx context.Context) (cataloguestore.Snapshot, error) {
	return catCall(l, ctx, "LatestProviders", reads, LatestProviders)
}

// CatalogueRevision implements [cataloguestore.Store].
func (l *Ledger) CatalogueRevision(ctx context.Context) (int64, error) {
	return catCall(l, ctx, "CatalogueRevision", reads, CatalogueRevision)
}

// PinOperation implements [cataloguestore.Store].
func (l *Ledger) PinOperation(ctx context.Context, p cataloguestore.OperationPin) (cataloguestore.OperationPin, error) {
	return catCall(l, ctx, "PinOperation", writes, func(tx CatTx) (cataloguestore.OperationPin, error) { return PinOperation(tx, p) })
}

// OperationPin implements [cataloguestore.Store].
func (l *Ledger) OperationPin(ctx context.Context, s ledger.Scope, opID string) (cataloguestore.OperationPin, error) {
	return catCall(l, ctx, "OperationPin", reads, func(tx CatTx) (cataloguestore.OperationPin, error) { return GetPin(tx, s, opID) })
}

// GrantConsent implements [cataloguestore.Store].
func (l *Ledger) GrantConsent(ctx context.Context, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return catCall(l, ctx, "GrantConsent", writes, func(tx CatTx) (cataloguestore.Consent, error) { return GrantConsent(tx, c) })
}

// RevokeConsent implements [cataloguestore.Store].
func (l *Ledger) RevokeConsent(ctx context.Context, c cataloguestore.Consent) (cataloguestore.Consent, error) {
	return catCall(l, ctx, "RevokeConsent", writes, func(tx CatTx) (cataloguestore.Consent, error) { return RevokeConsent(tx, c) })
}

// Consents implements [cataloguestore.Store].
func (l *Ledger) Consents(ctx context.Context, s ledger.Scope) ([]cataloguestore.Consent, error) {
	return catCall(l, ctx, "Consents", reads, func(tx CatTx) ([]cataloguestore.Consent, error) { return Consents(tx, s) })
}

// Reserve implements [cataloguestore.Store].
func (l *Ledger) Reserve(ctx context.Context, f ledger.Fence, claims []cataloguestore.Claim) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "Reserve", writes, func(tx CatTx) ([]cataloguestore.Reservation, error) { return Reserve(tx, f, claims) })
}

// HeldBy implements [cataloguestore.Store].
func (l *Ledger) HeldBy(ctx context.Context, f ledger.Fence) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "HeldBy", reads, func(tx CatTx) ([]cataloguestore.Reservation, error) { return HeldBy(tx, f) })
}

// Release implements [cataloguestore.Store].
func (l *Ledger) Release(ctx context.Context, f ledger.Fence) (int, error) {
	return catCall(l, ctx, "Release", writes, func(tx CatTx) (int, error) { return Release(tx, f) })
}

// Reservations implements [cataloguestore.Store].
func (l *Ledger) Reservations(ctx context.Context, s ledger.Scope) ([]cataloguestore.Reservation, error) {
	return catCall(l, ctx, "Reservations", reads, func(tx CatTx) ([]cataloguestore.Reservation, error) { return Reservations(tx, s) })
}
