package catalogue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Claims returns the reservations an invocation of capability m of
// provider b with (prepared) arguments needs, by m's effects.concurrency,
// within the operation's scope:
//
//   - parallel_safe: none;
//   - serial_per_capability: the capability, exclusively (key
//     "capability:<namespace.name>": every version of it);
//   - serial_per_resource: the resource, exclusively (key
//     "resource:<namespace.name>:<digest>", the digest of the canonical
//     JSON of the resource_key_fields' names and the argument values they
//     name, in order; a missing argument is null);
//   - exclusive: the provider, exclusively (key
//     "provider:<distribution>:<factory>", every generation of it).
//
// When b's inventory holds an exclusive capability, every other
// invocation of b also takes the provider's key, shared, so that an
// exclusive one runs alone.
func Claims(b manifest.ProviderBinding, m manifest.CapabilityManifest, arguments map[string]any) ([]cataloguestore.Claim, error) {
	id := m.ID.String()
	provider := key("provider:", b.Distribution+":"+b.Factory)
	if m.Effects.Concurrency == manifest.Exclusive {
		return []cataloguestore.Claim{{Key: provider, CapabilityID: id}}, nil
	}
	var out []cataloguestore.Claim
	name := m.ID.Namespace + "." + m.ID.Name
	switch m.Effects.Concurrency {
	case manifest.SerialPerCapability:
		out = append(out, cataloguestore.Claim{Key: key("capability:", name), CapabilityID: id})
	case manifest.SerialPerResource:
		values := make([]any, len(m.Effects.ResourceKeyFields))
		for i, f := range m.Effects.ResourceKeyFields {
			values[i] = arguments[f]
		}
		d, err := canon.DigestOf(map[string]any{"fields": m.Effects.ResourceKeyFields, "values": values})
		if err != nil {
			return nil, fmt.Errorf("%w: the resource key of %s: %w", ErrInvalidCall, id, err)
		}
		out = append(out, cataloguestore.Claim{Key: key("resource:", name+":"+string(d)), CapabilityID: id})
	case manifest.ParallelSafe:
	default:
		return nil, fmt.Errorf("%w: %s declares concurrency %q", ErrInvalidCall, id, m.Effects.Concurrency)
	}
	for _, o := range b.Manifests {
		if o.Effects.Concurrency == manifest.Exclusive {
			out = append(out, cataloguestore.Claim{Key: provider, Shared: true, CapabilityID: id})
			break
		}
	}
	return out, nil
}

// key is prefix+name when that is an identifier, else prefix and the
// digest of name (names past the identifier's length).
func key(prefix, name string) string {
	if k := prefix + name; protocol.ValidIdentifier(k) {
		return k
	}
	return prefix + string(canon.Sum([]byte(name)))
}

// Reserve takes the reservations the attempt f needs to invoke m of
// provider b with arguments (see Claims), durably and fenced with f. When
// another live attempt holds one, it waits up to wait for it to end (a
// release in this process wakes it at once; another controller's is seen
// within PollInterval) and then gives up with an error wrapping a
// *cataloguestore.ReservationError (cataloguestore.ErrReserved) that names the holder.
// A zero wait gives up at once. ctx bounds the whole call. Reserve has the
// signature of package supervise's reservation port.
func (c *Catalogue) Reserve(ctx context.Context, f ledger.Fence, b manifest.ProviderBinding, m manifest.CapabilityManifest, arguments map[string]any, wait time.Duration) error {
	claims, err := Claims(b, m, arguments)
	if err != nil || len(claims) == 0 {
		return err
	}
	var timer *time.Timer
	end := time.Now().Add(wait)
	for {
		c.mu.Lock()
		released := c.released
		c.mu.Unlock()
		_, err := c.store.Reserve(ctx, f, claims)
		var re *cataloguestore.ReservationError
		if !errors.As(err, &re) {
			if err != nil {
				return fmt.Errorf("catalogue: reserving for operation %q: %w", f.OperationID, err)
			}
			return nil
		}
		left := time.Until(end)
		if left <= 0 {
			return fmt.Errorf("catalogue: operation %q waited %v: %w", f.OperationID, wait, err)
		}
		if timer == nil {
			c.log.Debug("catalogue: waiting for a reservation", "operation", f.OperationID, "attempt", f.AttemptID,
				"key", re.Claim.Key, "holder", re.Holder.Holder.OperationID, "holder_attempt", re.Holder.Holder.AttemptID)
		}
		d := min(left, c.poll)
		if dl := re.Holder.Deadline; !dl.IsZero() {
			d = min(d, max(time.Until(dl), time.Millisecond))
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("catalogue: operation %q: waiting for a reservation: %w (%w)", f.OperationID, context.Cause(ctx), err)
		case <-released:
		case <-timer.C:
		}
	}
}

// Recheck is the reservation check at invoke.admit, immediately before
// invocation: nil when f still holds, live, every reservation Claims
// gives, else an error wrapping ErrReservationLost and cataloguestore.ErrReserved
// (so that package supervise refuses the host). It has the signature
// of package supervise's reservation port.
func (c *Catalogue) Recheck(ctx context.Context, f ledger.Fence, b manifest.ProviderBinding, m manifest.CapabilityManifest, arguments map[string]any) error {
	claims, err := Claims(b, m, arguments)
	if err != nil || len(claims) == 0 {
		return err
	}
	held, err := c.store.HeldBy(ctx, f)
	if err != nil {
		return fmt.Errorf("catalogue: operation %q: reading its reservations: %w", f.OperationID, err)
	}
	for _, cl := range claims {
		found := false
		for _, h := range held {
			if h.Key == cl.Key && h.Shared == cl.Shared {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%w (%w): operation %q (attempt %q, generation %d) does not hold %q",
				ErrReservationLost, cataloguestore.ErrReserved, f.OperationID, f.AttemptID, f.Generation, cl.Key)
		}
	}
	return nil
}

// Release releases every reservation the attempt f holds and wakes the
// Reserve calls of this process that wait. Call it when the attempt ends,
// whatever its outcome; if it is never called (a crash), the reservations
// are freed by the operation's next attempt, its end or its deadline. It
// has the signature of package supervise's reservation port.
func (c *Catalogue) Release(ctx context.Context, f ledger.Fence) error {
	_, err := c.store.Release(ctx, f)
	c.mu.Lock()
	close(c.released)
	c.released = make(chan struct{})
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("catalogue: releasing the reservations of operation %q: %w", f.OperationID, err)
	}
	return nil
}

// Reservations returns the live reservations in scope.
func (c *Catalogue) Reservations(ctx context.Context, scope ledger.Scope) ([]cataloguestore.Reservation, error) {
	if err := scope.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	out, err := c.store.Reservations(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("catalogue: reservations: %w", err)
	}
	return out, nil
}
