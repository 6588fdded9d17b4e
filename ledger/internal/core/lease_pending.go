package core

// This file holds the lease methods until their implementation lands; it
// is replaced by lease.go.

import (
	"context"
	"errors"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
)

var errLeasePending = errors.New("ledger: controller leases are not implemented by this backend yet")

// AcquireLease implements ledger.Ledger.
func (l *Ledger) AcquireLease(context.Context, string, time.Duration) (ledger.Lease, error) {
	return ledger.Lease{}, errLeasePending
}

// RenewLease implements ledger.Ledger.
func (l *Ledger) RenewLease(context.Context, string, time.Duration) (ledger.Lease, error) {
	return ledger.Lease{}, errLeasePending
}

// ReleaseLease implements ledger.Ledger.
func (l *Ledger) ReleaseLease(context.Context, string) (ledger.Lease, error) {
	return ledger.Lease{}, errLeasePending
}

// Leases implements ledger.Ledger.
func (l *Ledger) Leases(context.Context) ([]ledger.Lease, error) { return nil, errLeasePending }

// TakeOver implements ledger.Ledger.
func (l *Ledger) TakeOver(context.Context, ledger.Takeover) (ledger.Fence, error) {
	return ledger.Fence{}, errLeasePending
}

// ListInFlight implements ledger.Ledger.
func (l *Ledger) ListInFlight(context.Context) ([]ledger.Effect, error) { return nil, errLeasePending }
