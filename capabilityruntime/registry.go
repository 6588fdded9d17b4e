package capabilityruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Registry dispatches Start to the Backend registered for a runtime kind. Its
// zero value is an empty registry ready for use, and it is safe for
// concurrent use.
//
// The registry owns its backends, not the instances they start: each
// instance belongs to whoever called Start and is closed by them.
// CloseBackends releases what the backends themselves hold.
type Registry struct {
	mu       sync.RWMutex       // guards backends
	backends map[string]Backend // by kind
}

// Register makes b the backend for kind. It returns an error wrapping
// ErrRegistration for an empty kind, a nil backend, or a kind that already
// has a backend (replacing one would leak whatever the old one holds).
func (r *Registry) Register(kind string, b Backend) error {
	if kind == "" {
		return fmt.Errorf("%w: empty runtime kind", ErrRegistration)
	}
	if b == nil {
		return fmt.Errorf("%w: nil backend for runtime kind %q", ErrRegistration, kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.backends[kind]; dup {
		return fmt.Errorf("%w: runtime kind %q already has a backend", ErrRegistration, kind)
	}
	if r.backends == nil {
		r.backends = make(map[string]Backend)
	}
	r.backends[kind] = b
	return nil
}

// RegisteredKinds returns the kinds that have a backend, sorted.
func (r *Registry) RegisteredKinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.backends))
}

// Start starts spec on the backend registered for kind (a runtime.type). An
// unregistered kind gives an error wrapping ErrUnsupportedKind that names
// the registered kinds; a backend's failure is returned wrapped with the
// runtime's type@version.
func (r *Registry) Start(ctx context.Context, kind string, spec BackendSpec) (BackendInstance, error) {
	r.mu.RLock()
	b, ok := r.backends[kind]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnsupportedKind, kind, kindList(r.RegisteredKinds()))
	}
	inst, err := b.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("capabilityruntime: start capability runtime %s@%s: %w", spec.Type, spec.Version, err)
	}
	return inst, nil
}

// CloseBackends closes every registered backend that has a
// Close(context.Context) error method, in kind order, and goes on past
// failures. It returns nil when all succeed (or none has Close), else the
// failures joined with errors.Join, each prefixed with its kind. The
// backends stay registered.
func (r *Registry) CloseBackends(ctx context.Context) error {
	r.mu.RLock()
	kinds := slices.Sorted(maps.Keys(r.backends))
	backends := make([]Backend, len(kinds))
	for i, k := range kinds {
		backends[i] = r.backends[k]
	}
	r.mu.RUnlock()
	var errs []error
	for i, b := range backends {
		c, ok := b.(interface{ Close(context.Context) error })
		if !ok {
			continue
		}
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", kinds[i], err))
		}
	}
	return errors.Join(errs...)
}

func kindList(kinds []string) string {
	if len(kinds) == 0 {
		return "none"
	}
	return strings.Join(kinds, ", ")
}
