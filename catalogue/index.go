package catalogue

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// generation is a decoded provider record; immutable once built.
type generation struct {
	rec       cataloguestore.ProviderRecord
	doc       document
	ids       []string
	exclusive bool // the inventory holds an exclusive capability
	caps      map[string]*Capability
}

// Capability is an admitted capability as a scope sees it: the manifest of
// the provider generation it belongs to.
type Capability struct {
	// ID is the canonical id, "namespace.name@version".
	ID string
	// Manifest is the admitted manifest. It is shared: do not modify it.
	Manifest manifest.CapabilityManifest
	// Provider and Generation name the provider generation.
	Provider   cataloguestore.ProviderKey
	Generation int64
	// ManifestDigest is the provider inventory's digest (what an
	// operation's manifest_digest binds).
	ManifestDigest canon.Digest
	// NeedsAccount reports that the capability's requirements name
	// credentials or services: it runs only with a consented connection
	// account.
	NeedsAccount bool

	audience []Audience
}

// visibleTo reports whether scope s may see and run the capability.
func (c *Capability) visibleTo(s ledger.Scope) bool {
	for _, a := range c.audience {
		if a.includes(s) {
			return true
		}
	}
	return false
}

func (g *generation) public() Generation {
	return Generation{Provider: g.rec.Provider, Generation: g.rec.Generation, BindingDigest: g.rec.BindingDigest,
		ManifestDigest: g.rec.ManifestDigest, AdmittedAt: g.rec.AdmittedAt, Binding: g.doc.Binding,
		Audience: slices.Clone(g.doc.Audience), CapabilityAudience: maps.Clone(g.doc.CapabilityAudience),
		Capabilities: slices.Clone(g.ids)}
}

// decode builds a generation from its record.
func (c *Catalogue) decode(rec cataloguestore.ProviderRecord) (*generation, error) {
	var doc document
	if err := canon.Unmarshal(rec.Document, &doc); err != nil {
		return nil, fmt.Errorf("catalogue: provider %s (%s) generation %d: stored admission: %w: %w",
			rec.Provider.Distribution, rec.Provider.Factory, rec.Generation, ledger.ErrCorrupt, err)
	}
	g := &generation{rec: rec, doc: doc, ids: capabilityIDs(doc.Binding), caps: make(map[string]*Capability, len(doc.Binding.Manifests))}
	g.rec.Document = nil
	for _, m := range doc.Binding.Manifests {
		id := m.ID.String()
		aud, ok := doc.CapabilityAudience[id]
		if !ok {
			aud = doc.Audience
		}
		r := m.Requirements
		g.caps[id] = &Capability{ID: id, Manifest: m, Provider: rec.Provider, Generation: rec.Generation,
			ManifestDigest: rec.ManifestDigest, NeedsAccount: len(r.Credentials) > 0 || len(r.Services) > 0, audience: aud}
		if m.Effects.Concurrency == manifest.Exclusive {
			g.exclusive = true
		}
	}
	return g, nil
}

// generation returns generation gen of p (0: latest), from the cache when
// it holds it: a recorded generation never changes.
func (c *Catalogue) generation(ctx context.Context, p cataloguestore.ProviderKey, gen int64) (*generation, error) {
	if gen > 0 {
		c.mu.Lock()
		g := c.gens[genKey{p, gen}]
		c.mu.Unlock()
		if g != nil {
			return g, nil
		}
	}
	rec, err := c.store.ProviderGeneration(ctx, p, gen)
	if err != nil {
		return nil, fmt.Errorf("catalogue: provider %s (%s) generation %d: %w", p.Distribution, p.Factory, gen, err)
	}
	g, err := c.decode(rec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.gens[genKey{p, rec.Generation}] = g
	c.mu.Unlock()
	return g, nil
}

// snapshot is the index of the latest generations at one revision.
type snapshot struct {
	revision int64
	gens     []*generation
	all      []*Capability // sorted by id
	byID     map[string]*Capability
}

// lookup returns the capability of the latest generations with id,
// whatever its audience.
func (s *snapshot) lookup(id string) (*Capability, bool) {
	e, ok := s.byID[id]
	return e, ok
}

// snapshot returns the index at the store's current revision, rebuilding
// it when the revision moved. One cheap read (the revision) per call.
func (c *Catalogue) snapshot(ctx context.Context) (*snapshot, error) {
	rev, err := c.store.CatalogueRevision(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalogue: reading the revision: %w", err)
	}
	c.mu.Lock()
	s := c.snap
	c.mu.Unlock()
	if s != nil && s.revision == rev {
		return s, nil
	}
	latest, err := c.store.LatestProviders(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalogue: reading the providers: %w", err)
	}
	s = &snapshot{revision: latest.Revision, byID: map[string]*Capability{}}
	for _, rec := range latest.Providers {
		g, err := c.decode(rec)
		if err != nil {
			return nil, err
		}
		s.gens = append(s.gens, g)
		for _, id := range g.ids {
			if prev, ok := s.byID[id]; ok {
				c.log.Warn("catalogue: a capability id is admitted by two providers; the first in provider order is kept",
					"capability", id, "kept", prev.Provider, "ignored", g.rec.Provider)
				continue
			}
			s.byID[id] = g.caps[id]
			s.all = append(s.all, g.caps[id])
		}
	}
	slices.SortFunc(s.all, func(a, b *Capability) int { return compare(a.ID, b.ID) })
	c.mu.Lock()
	if c.snap == nil || c.snap.revision < s.revision {
		c.snap = s
	}
	c.mu.Unlock()
	return s, nil
}

// View is the catalogue as one scope sees it at one revision: the
// capabilities of the current generations visible to the scope. It is
// immutable and safe for concurrent use.
type View struct {
	scope    ledger.Scope
	revision int64
	caps     []*Capability
}

// View returns the catalogue as scope sees it now.
func (c *Catalogue) View(ctx context.Context, scope ledger.Scope) (*View, error) {
	if err := scope.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidCall, err)
	}
	s, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	v := &View{scope: scope, revision: s.revision}
	for _, e := range s.all {
		if e.visibleTo(scope) {
			v.caps = append(v.caps, e)
		}
	}
	return v, nil
}

// Revision is the catalogue revision the view was taken at.
func (v *View) Revision() int64 { return v.revision }

// Capabilities returns the visible capabilities ordered by id. The slice
// and what it points to are shared: do not modify them.
func (v *View) Capabilities() []*Capability { return v.caps }

// Lookup returns the visible capability id, or an error wrapping
// ErrUnknownCapability whose text is the same whether id exists outside
// the scope or nowhere.
func (v *View) Lookup(id string) (*Capability, error) {
	i, ok := slices.BinarySearchFunc(v.caps, id, func(c *Capability, id string) int { return compare(c.ID, id) })
	if !ok {
		return nil, unknownCapability(id)
	}
	return v.caps[i], nil
}
