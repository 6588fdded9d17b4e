package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// closeTimeout bounds the wait for a ledger's writes in flight at exit.
const closeTimeout = 30 * time.Second

// openLedger opens the bolt ledger file at path, creating it if needed.
func openLedger(path string) (*bolt.Ledger, error) {
	l, err := bolt.Open(path, bolt.Options{LockTimeout: 2 * time.Second})
	if errors.Is(err, ledger.ErrLocked) {
		return nil, fmt.Errorf("%w: another process (a controller, or another zeoctl) owns this ledger; stop it or wait for it to finish", err)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the ledger: %w", err)
	}
	return l, nil
}

// closeLedger closes l, bounded; a failure is joined to err.
func closeLedger(l ledger.Ledger, err *error) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if cerr := l.Close(ctx); cerr != nil && *err == nil {
		*err = fmt.Errorf("closing the ledger: %w", cerr)
	}
}
