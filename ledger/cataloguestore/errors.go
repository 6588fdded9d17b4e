package cataloguestore

import (
	"errors"
	"fmt"
	"time"
)

// Errors of the [Store] methods besides the common ones.
var (
	// ErrStaleGeneration is returned by AdmitProvider when the generation
	// is not strictly greater than every generation recorded for the
	// provider (an equal generation with other content included). It is
	// always wrapped in a [*GenerationError]. Admit a greater generation.
	ErrStaleGeneration = errors.New("ledger: provider generation not above the recorded one")

	// ErrReserved is returned by Reserve when a claim's key is held by
	// another live attempt. It is always wrapped in a [*ReservationError]
	// naming the holder. Wait for the holder to end, or give up.
	ErrReserved = errors.New("ledger: resource reserved by another attempt")
)

// GenerationError reports an admission refused because its generation is
// not above the provider's latest. It wraps [ErrStaleGeneration].
type GenerationError struct {
	Provider ProviderKey
	// Presented is the generation asked for; Latest the greatest recorded.
	Presented, Latest int64
}

// Error names both generations.
func (e *GenerationError) Error() string {
	return fmt.Sprintf("ledger: provider %s (%s): generation %d is not above the recorded generation %d; admit a greater generation",
		e.Provider.Distribution, e.Provider.Factory, e.Presented, e.Latest)
}

// Unwrap returns [ErrStaleGeneration].
func (e *GenerationError) Unwrap() error { return ErrStaleGeneration }

// ReservationError reports a claim refused because another live attempt
// holds its key. It wraps [ErrReserved].
type ReservationError struct {
	// Claim is the claim that was refused.
	Claim Claim
	// Holder is the live reservation in the way (its holder's fence, and
	// the deadline after which it is free at the latest).
	Holder Reservation
}

// Error names the key and its holder.
func (e *ReservationError) Error() string {
	msg := fmt.Sprintf("ledger: resource %q is reserved by operation %q (attempt %q, generation %d, capability %s)",
		e.Claim.Key, e.Holder.Holder.OperationID, e.Holder.Holder.AttemptID, e.Holder.Holder.Generation, e.Holder.CapabilityID)
	if !e.Holder.Deadline.IsZero() {
		msg += " until it ends, at the latest " + e.Holder.Deadline.UTC().Format(time.RFC3339Nano)
	}
	return msg
}

// Unwrap returns [ErrReserved].
func (e *ReservationError) Unwrap() error { return ErrReserved }
