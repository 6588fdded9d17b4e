package ledger

import (
	"errors"
	"fmt"
	"time"
)

// Controllers own their attempts by lease (doc/design.md, "Controllers and
// leases"). A controller acquires a lease under an id of its own with a
// time to live and renews it before it expires; every attempt it launches
// names it (AttemptLaunch.ControllerID), and so does every effect that
// attempt authorizes. Liveness is decided by the store's clock, inside the
// transaction that depends on it:
//
//   - an attempt whose controller holds a live lease is never taken over
//     (TakeOver refuses with ErrOwnerLive), and its authorized effects are
//     in flight, not unknown: ListInFlight lists them, ListUnknown does
//     not, and Resolve refuses them with ErrInFlight;
//   - once the lease has expired or was released, the attempt is orphaned:
//     ListOperations with Orphaned set finds its operation, TakeOver may
//     fence it off, and its authorized effects are unknown;
//   - a lease that expired is never renewed again (ErrLeaseExpired): the
//     controller must stop acting for its attempts and register anew under
//     another id. LaunchAttempt and new effects (BeginEffect) of an attempt
//     whose controller's lease is not live are refused with ErrLeaseExpired.
//
// An attempt without a controller (started by StartAttempt, or launched
// with an empty ControllerID) has no live owner: it is orphaned as soon as
// it exists, as every attempt was before leases.

// Lease is a controller's recorded lease.
type Lease struct {
	// ControllerID names the controller; unique per controller process.
	ControllerID string `json:"controller_id"`
	// Acquired is when the lease was first acquired, Expires when it
	// expires unless renewed, both by the store's clock.
	Acquired time.Time `json:"acquired"`
	Expires  time.Time `json:"expires"`
	// TTL is the time to live of the last acquisition or renewal.
	TTL time.Duration `json:"ttl"`
	// Renewals counts successful renewals.
	Renewals int64 `json:"renewals"`
	// Released reports that the controller released the lease.
	Released bool `json:"released"`
	// Live reports whether the lease was live when it was read: neither
	// released nor past Expires by the store's clock.
	Live bool `json:"live"`
}

// Takeover is what TakeOver records: a new attempt of an operation whose
// current attempt From is orphaned, owned by the taking controller.
type Takeover struct {
	// From is the fence of the orphaned attempt, as the caller last read
	// it (Operation.CurrentAttemptID and CurrentGeneration).
	From Fence
	// AttemptID is the new, empty attempt that fences From off.
	AttemptID string
	// ControllerID is the taking controller; its lease must be live.
	ControllerID string
}

// LeaseError reports a call refused because of a controller's lease. It
// wraps one of ErrLeaseExpired, ErrLeaseHeld, ErrOwnerLive or ErrInFlight.
type LeaseError struct {
	// Op is the refused method, e.g. "Resolve".
	Op string
	// ControllerID is the controller whose lease decided; Expires is its
	// lease's expiry as recorded (zero when the controller has none).
	ControllerID string
	Expires      time.Time
	// Err is the sentinel.
	Err error
}

// Error names the controller and what to do.
func (e *LeaseError) Error() string {
	var what string
	switch {
	case errors.Is(e.Err, ErrInFlight):
		what = "is in flight: the controller that owns it is live and records its outcome; ask again after it did, or after its lease expired"
	case errors.Is(e.Err, ErrOwnerLive):
		what = "is owned by a live controller; it is never taken over"
	case errors.Is(e.Err, ErrLeaseHeld):
		what = "is held live under the same id; give every controller process an id of its own"
	default:
		what = "has expired or was released; that controller must stop and register under a new id"
	}
	exp := "no lease"
	if !e.Expires.IsZero() {
		exp = "lease until " + e.Expires.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("ledger: %s: controller %q (%s) %s", e.Op, e.ControllerID, exp, what)
}

// Unwrap returns the sentinel.
func (e *LeaseError) Unwrap() error { return e.Err }

// ValidateTTL reports whether ttl is a valid lease time to live: at least a
// millisecond, at most MaxLeaseTTL. Errors wrap ErrInvalid.
func ValidateTTL(ttl time.Duration) error {
	if ttl < time.Millisecond || ttl > MaxLeaseTTL {
		return fmt.Errorf("%w: lease ttl %v, want 1ms..%v", ErrInvalid, ttl, MaxLeaseTTL)
	}
	return nil
}
