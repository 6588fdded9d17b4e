package catalogue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Audience is an organization and project that may see and run a
// capability. An empty ProjectID means every project of the organization.
type Audience struct {
	OrganizationID string `json:"organization_id"`
	ProjectID      string `json:"project_id"`
}

// includes reports whether s is in the audience.
func (a Audience) includes(s ledger.Scope) bool {
	return a.OrganizationID == s.OrganizationID && (a.ProjectID == "" || a.ProjectID == s.ProjectID)
}

// Admission is a provider binding to admit and who may see and run its
// capabilities.
type Admission struct {
	// Binding is the exact provider binding, with its entire inventory.
	// Its Generation is the generation admitted.
	Binding manifest.ProviderBinding
	// Audience may see and run every capability of the binding that
	// CapabilityAudience does not name.
	Audience []Audience
	// CapabilityAudience gives, per canonical capability id, the audience
	// that replaces Audience for that capability (empty: visible nowhere).
	CapabilityAudience map[string][]Audience
}

// Generation is one admitted generation of a provider.
type Generation struct {
	Provider       cataloguestore.ProviderKey
	Generation     int64
	BindingDigest  canon.Digest
	ManifestDigest canon.Digest
	AdmittedAt     time.Time
	// Binding, Audience, CapabilityAudience and Capabilities are left zero
	// by Generations, which lists headers only.
	Binding            manifest.ProviderBinding
	Audience           []Audience
	CapabilityAudience map[string][]Audience
	// Capabilities are the binding's canonical ids, sorted.
	Capabilities []string
}

// document is what the ledger stores for a generation (its canonical JSON).
type document struct {
	Binding            manifest.ProviderBinding `json:"binding"`
	Audience           []Audience               `json:"audience"`
	CapabilityAudience map[string][]Audience    `json:"capability_audience"`
}

// Admit validates a.Binding (manifest validation), runs the host's static
// discovery and checks that both agree on the manifest digest, then
// records the generation: it becomes the provider's current generation
// for every new operation, in every controller sharing the store, at
// once. A generation not above the provider's latest is refused with a
// *cataloguestore.GenerationError (cataloguestore.ErrStaleGeneration); admitting the
// identical admission again returns the recorded generation. Operations
// already pinned to an older generation keep it.
func (c *Catalogue) Admit(ctx context.Context, a Admission) (Generation, error) {
	b := a.Binding
	if err := c.validator.ValidateBinding(b); err != nil {
		return Generation{}, fmt.Errorf("%w: binding of %s: %w", ErrInvalidAdmission, b.Distribution, err)
	}
	doc := document{Binding: b, Audience: normAudience(a.Audience), CapabilityAudience: map[string][]Audience{}}
	ids := capabilityIDs(b)
	if err := checkAudience("Audience", doc.Audience); err != nil {
		return Generation{}, err
	}
	for id, aud := range a.CapabilityAudience {
		if _, ok := slices.BinarySearch(ids, id); !ok {
			return Generation{}, fmt.Errorf("%w: CapabilityAudience names %q, which the binding does not hold", ErrInvalidAdmission, id)
		}
		aud = normAudience(aud)
		if err := checkAudience("CapabilityAudience["+id+"]", aud); err != nil {
			return Generation{}, err
		}
		doc.CapabilityAudience[id] = aud
	}
	key := cataloguestore.ProviderKey{Distribution: b.Distribution, Factory: b.Factory}
	if err := c.checkTaken(ctx, key, ids); err != nil {
		return Generation{}, err
	}
	got, err := c.discover(ctx, b)
	if err != nil {
		return Generation{}, fmt.Errorf("%w: discovery of %s generation %d: %w", ErrDiscoveryDisagrees, b.Distribution, b.Generation, err)
	}
	if got != b.ManifestDigest {
		return Generation{}, fmt.Errorf("%w: the host reports manifest digest %s for %s generation %d, the binding carries %s",
			ErrDiscoveryDisagrees, got, b.Distribution, b.Generation, b.ManifestDigest)
	}
	bd, err := canon.DigestOf(b)
	if err != nil {
		return Generation{}, fmt.Errorf("%w: binding digest: %w", ErrInvalidAdmission, err)
	}
	body, err := canon.Marshal(doc)
	if err != nil {
		return Generation{}, fmt.Errorf("%w: encoding the admission: %w", ErrInvalidAdmission, err)
	}
	rec, err := c.store.AdmitProvider(ctx, cataloguestore.ProviderRecord{Provider: key, Generation: b.Generation,
		BindingDigest: bd, ManifestDigest: b.ManifestDigest, Document: body})
	if err != nil {
		return Generation{}, fmt.Errorf("catalogue: admitting %s (%s) generation %d: %w", key.Distribution, key.Factory, b.Generation, err)
	}
	g, err := c.decode(rec)
	if err != nil {
		return Generation{}, err
	}
	return g.public(), nil
}

// checkTaken refuses ids held by the latest generation of another
// provider. Admissions of two providers racing for one id can both pass
// it; the index then keeps the id of the provider that sorts first and
// logs the conflict.
func (c *Catalogue) checkTaken(ctx context.Context, key cataloguestore.ProviderKey, ids []string) error {
	snap, err := c.snapshot(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if e, ok := snap.lookup(id); ok && e.Provider != key {
			return fmt.Errorf("%w: %q is admitted by %s (%s) generation %d", ErrCapabilityTaken, id,
				e.Provider.Distribution, e.Provider.Factory, e.Generation)
		}
	}
	return nil
}

func capabilityIDs(b manifest.ProviderBinding) []string {
	ids := make([]string, len(b.Manifests))
	for i, m := range b.Manifests {
		ids[i] = m.ID.String()
	}
	slices.Sort(ids)
	return ids
}

// normAudience sorts and de-duplicates; nil becomes empty.
func normAudience(in []Audience) []Audience {
	out := slices.Clone(in)
	if out == nil {
		out = []Audience{}
	}
	slices.SortFunc(out, func(a, b Audience) int {
		if a.OrganizationID != b.OrganizationID {
			return compare(a.OrganizationID, b.OrganizationID)
		}
		return compare(a.ProjectID, b.ProjectID)
	})
	return slices.Compact(out)
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkAudience(field string, aud []Audience) error {
	var errs []error
	for i, a := range aud {
		if err := protocol.CheckIdentifier(fmt.Sprintf("%s[%d].OrganizationID", field, i), a.OrganizationID); err != nil {
			errs = append(errs, err)
		}
		if a.ProjectID != "" {
			if err := protocol.CheckIdentifier(fmt.Sprintf("%s[%d].ProjectID", field, i), a.ProjectID); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidAdmission, errors.Join(errs...))
	}
	return nil
}

// Providers returns the current (latest) generation of every provider,
// ordered by distribution then factory, with bindings and audiences.
func (c *Catalogue) Providers(ctx context.Context) ([]Generation, error) {
	snap, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Generation, len(snap.gens))
	for i, g := range snap.gens {
		out[i] = g.public()
	}
	return out, nil
}

// Generations returns every admitted generation of provider p in
// increasing order: headers only (no binding, audience or capabilities).
func (c *Catalogue) Generations(ctx context.Context, p cataloguestore.ProviderKey) ([]Generation, error) {
	recs, err := c.store.ProviderGenerations(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("catalogue: generations of %s (%s): %w", p.Distribution, p.Factory, err)
	}
	out := make([]Generation, len(recs))
	for i, r := range recs {
		out[i] = Generation{Provider: r.Provider, Generation: r.Generation, BindingDigest: r.BindingDigest,
			ManifestDigest: r.ManifestDigest, AdmittedAt: r.AdmittedAt}
	}
	return out, nil
}

// Generation returns generation gen of provider p (0: the latest), in
// full.
func (c *Catalogue) Generation(ctx context.Context, p cataloguestore.ProviderKey, gen int64) (Generation, error) {
	g, err := c.generation(ctx, p, gen)
	if err != nil {
		return Generation{}, err
	}
	return g.public(), nil
}
