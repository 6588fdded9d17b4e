package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/ledger"
)

var _ ledger.CatalogueStore = (*Ledger)(nil)

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

// AdmitProvider implements [ledger.CatalogueStore].
func (l *Ledger) AdmitProvider(ctx context.Context, rec ledger.ProviderRecord) (ledger.ProviderRecord, error) {
	return catCall(l, ctx, "AdmitProvider", writes, func(tx CatTx) (ledger.ProviderRecord, error) { return AdmitProvider(tx, rec) })
}

// ProviderGeneration implements [ledger.CatalogueStore].
func (l *Ledger) ProviderGeneration(ctx context.Context, p ledger.ProviderKey, gen int64) (ledger.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGeneration", reads, func(tx CatTx) (ledger.ProviderRecord, error) { return ProviderGeneration(tx, p, gen) })
}

// ProviderGenerations implements [ledger.CatalogueStore].
func (l *Ledger) ProviderGenerations(ctx context.Context, p ledger.ProviderKey) ([]ledger.ProviderRecord, error) {
	return catCall(l, ctx, "ProviderGenerations", reads, func(tx CatTx) ([]ledger.ProviderRecord, error) { return ProviderGenerations(tx, p) })
}

// LatestProviders implements [ledger.CatalogueStore].
func (l *Ledger) LatestProviders(ctx context.Context) (ledger.CatalogueSnapshot, error) {
	return catCall(l, ctx, "LatestProviders", reads, LatestProviders)
}

// CatalogueRevision implements [ledger.CatalogueStore].
func (l *Ledger) CatalogueRevision(ctx context.Context) (int64, error) {
	return catCall(l, ctx, "CatalogueRevision", reads, CatalogueRevision)
}

// PinOperation implements [ledger.CatalogueStore].
func (l *Ledger) PinOperation(ctx context.Context, p ledger.OperationPin) (ledger.OperationPin, error) {
	return catCall(l, ctx, "PinOperation", writes, func(tx CatTx) (ledger.OperationPin, error) { return PinOperation(tx, p) })
}

// OperationPin implements [ledger.CatalogueStore].
func (l *Ledger) OperationPin(ctx context.Context, s ledger.Scope, opID string) (ledger.OperationPin, error) {
	return catCall(l, ctx, "OperationPin", reads, func(tx CatTx) (ledger.OperationPin, error) { return GetPin(tx, s, opID) })
}

// GrantConsent implements [ledger.CatalogueStore].
func (l *Ledger) GrantConsent(ctx context.Context, c ledger.Consent) (ledger.Consent, error) {
	return catCall(l, ctx, "GrantConsent", writes, func(tx CatTx) (ledger.Consent, error) { return GrantConsent(tx, c) })
}

// RevokeConsent implements [ledger.CatalogueStore].
func (l *Ledger) RevokeConsent(ctx context.Context, c ledger.Consent) (ledger.Consent, error) {
	return catCall(l, ctx, "RevokeConsent", writes, func(tx CatTx) (ledger.Consent, error) { return RevokeConsent(tx, c) })
}

// Consents implements [ledger.CatalogueStore].
func (l *Ledger) Consents(ctx context.Context, s ledger.Scope) ([]ledger.Consent, error) {
	return catCall(l, ctx, "Consents", reads, func(tx CatTx) ([]ledger.Consent, error) { return Consents(tx, s) })
}

// Reserve implements [ledger.CatalogueStore].
func (l *Ledger) Reserve(ctx context.Context, f ledger.Fence, claims []ledger.Claim) ([]ledger.Reservation, error) {
	return catCall(l, ctx, "Reserve", writes, func(tx CatTx) ([]ledger.Reservation, error) { return Reserve(tx, f, claims) })
}

// HeldBy implements [ledger.CatalogueStore].
func (l *Ledger) HeldBy(ctx context.Context, f ledger.Fence) ([]ledger.Reservation, error) {
	return catCall(l, ctx, "HeldBy", reads, func(tx CatTx) ([]ledger.Reservation, error) { return HeldBy(tx, f) })
}

// Release implements [ledger.CatalogueStore].
func (l *Ledger) Release(ctx context.Context, f ledger.Fence) (int, error) {
	return catCall(l, ctx, "Release", writes, func(tx CatTx) (int, error) { return Release(tx, f) })
}

// Reservations implements [ledger.CatalogueStore].
func (l *Ledger) Reservations(ctx context.Context, s ledger.Scope) ([]ledger.Reservation, error) {
	return catCall(l, ctx, "Reservations", reads, func(tx CatTx) ([]ledger.Reservation, error) { return Reservations(tx, s) })
}
