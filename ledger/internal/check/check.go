// Package check holds the ledger's argument checks, shared by package
// ledger (the Validate methods of its types) and by ledger/internal/core
// (the arguments that are plain strings). It owns the ErrInvalid sentinel,
// which package ledger exports as ledger.ErrInvalid: it lives here so that
// both can wrap it without an import cycle.
package check

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
)

// ErrInvalid is ledger.ErrInvalid.
var ErrInvalid = errors.New("ledger: invalid argument")

// ID reports whether id is a wire Identifier (valid UTF-8 of 1..256 code
// points); the error wraps ErrInvalid and names what.
func ID(what, id string) error {
	if err := protocol.CheckIdentifier(what, id); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// Digest reports whether d is a well-formed digest; the error wraps
// ErrInvalid and names what.
func Digest(what string, d canon.Digest) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalid, what, err)
	}
	return nil
}
