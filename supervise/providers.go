package supervise

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// Providers resolves the admitted provider a Call names to its exact
// binding. catalogue.Catalogue implements it; so can any registry of
// admitted bindings.
//
// generation zero asks for the generation the operation is already
// pinned to, or the provider's current one for an operation never pinned:
// an operation keeps the generation it started on. Errors are returned to
// the caller of Invoke wrapped, without launching anything; an error
// wrapping ledger.ErrNotFound says the provider or generation is unknown.
type Providers interface {
	ProviderBinding(ctx context.Context, scope ledger.Scope, operationID string, p cataloguestore.ProviderKey, generation int64) (manifest.ProviderBinding, error)
}

// provider is one binding the Supervisor has checked, with what every
// attempt of it needs, computed once.
type provider struct {
	binding   manifest.ProviderBinding
	manifests map[string]manifest.CapabilityManifest // by canonical id
	encoder   *launch.ContextEncoder
	used      time.Time // guarded by providerCache.mu
}

// bindingKey is what makes two bindings different for the Supervisor:
// their inventory (the manifest digest covers every manifest), their
// environment and the identity the host checks at bootstrap.
type bindingKey struct {
	distribution, version, factory, python string
	generation                             int64
	manifests, environment                 canon.Digest
}

func keyOfBinding(b manifest.ProviderBinding) bindingKey {
	return bindingKey{distribution: b.Distribution, version: b.Version, factory: b.Factory, python: b.PythonVersion,
		generation: b.Generation, manifests: b.ManifestDigest, environment: b.EnvironmentDigest}
}

// providerCache holds the checked bindings. An entry unused for longer
// than idle is dropped at the next lookup, so that a controller serving
// many generations over months does not keep every one.
type providerCache struct {
	idle time.Duration
	mu   sync.Mutex
	m    map[bindingKey]*provider
}

// maxProviders bounds the cache regardless of idleness: the least
// recently used entry goes first.
const maxProviders = 256

// get returns the checked provider of b, checking it on first use.
func (c *providerCache) get(s *Supervisor, b manifest.ProviderBinding) (*provider, error) {
	k := keyOfBinding(b)
	now := time.Now()
	c.mu.Lock()
	p := c.m[k]
	if p != nil {
		p.used = now
	}
	c.mu.Unlock()
	if p != nil {
		return p, nil
	}
	p, err := s.checkBinding(b)
	if err != nil {
		return nil, err
	}
	p.used = now
	c.mu.Lock()
	defer c.mu.Unlock()
	if q := c.m[k]; q != nil {
		q.used = now
		return q, nil
	}
	var oldest bindingKey
	var oldestAt time.Time
	for k2, q := range c.m {
		if now.Sub(q.used) > c.idle {
			delete(c.m, k2)
			continue
		}
		if oldestAt.IsZero() || q.used.Before(oldestAt) {
			oldest, oldestAt = k2, q.used
		}
	}
	if len(c.m) >= maxProviders {
		delete(c.m, oldest)
	}
	c.m[k] = p
	return p, nil
}

// checkBinding validates b as New validates Config.Provider.
func (s *Supervisor) checkBinding(b manifest.ProviderBinding) (*provider, error) {
	if err := s.validator.ValidateBinding(b); err != nil {
		return nil, err
	}
	if err := port.CheckDocument("provider binding", b); err != nil {
		return nil, err
	}
	if v := s.cfg.HostPythonVersion; v != "" && v != b.PythonVersion {
		return nil, fmt.Errorf("the binding names python_version %q but the host interpreter is %q; the host would refuse every attempt after bootstrap (protocol_error): use the binding made for this interpreter",
			b.PythonVersion, v)
	}
	enc, err := launch.NewContextEncoder(b)
	if err != nil {
		return nil, err
	}
	p := &provider{binding: b, encoder: enc, manifests: make(map[string]manifest.CapabilityManifest, len(b.Manifests))}
	for _, m := range b.Manifests {
		p.manifests[m.ID.String()] = m
	}
	return p, nil
}

// resolve returns the provider c names: its explicit Binding, the
// admitted provider it names through Config.Providers, or Config.Provider.
func (s *Supervisor) resolve(ctx context.Context, c Call) (*provider, error) {
	var b manifest.ProviderBinding
	switch {
	case c.Binding != nil:
		b = *c.Binding
	case c.Provider != (cataloguestore.ProviderKey{}):
		if s.cfg.Providers == nil {
			return nil, fmt.Errorf("%w: the call names provider %s (%s) but Config.Providers is nil", ErrInvalidCall, c.Provider.Distribution, c.Provider.Factory)
		}
		var err error
		b, err = s.cfg.Providers.ProviderBinding(ctx, c.Scope, c.OperationID, c.Provider, c.Generation)
		if err != nil {
			if errors.Is(err, ledger.ErrNotFound) {
				return nil, &PreflightError{Check: "provider", Detail: fmt.Sprintf("provider %s (%s) generation %d is not admitted", c.Provider.Distribution, c.Provider.Factory, c.Generation), Err: err}
			}
			return nil, fmt.Errorf("supervise: operation %q: resolving provider %s (%s) generation %d: %w", c.OperationID, c.Provider.Distribution, c.Provider.Factory, c.Generation, err)
		}
		if c.Generation != 0 && b.Generation != c.Generation {
			return nil, fmt.Errorf("supervise: operation %q: Providers answered generation %d for generation %d", c.OperationID, b.Generation, c.Generation)
		}
	case s.def != nil:
		return s.def, nil
	default:
		return nil, fmt.Errorf("%w: the call names no provider (Binding or Provider) and Config.Provider is not set", ErrInvalidCall)
	}
	p, err := s.providers.get(s, b)
	if err != nil {
		return nil, &PreflightError{Check: "provider", Detail: "the provider binding cannot run here", Err: err}
	}
	return p, nil
}
