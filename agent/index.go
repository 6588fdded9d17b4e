package agent

import (
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// maxCachedScopes bounds the per-scope lists an index keeps; past it the
// lists are dropped and rebuilt on demand from the documents, which stay.
const maxCachedScopes = 256

// index holds the search documents of one catalogue revision: one per
// capability, built once, and for each scope that searched, its visible
// documents in id order. Immutable documents; the maps are guarded by the
// Facade's mu.
type index struct {
	rev    int64
	docs   map[*catalogue.Capability]*doc
	scopes map[ledger.Scope][]*doc
}

// docs returns the search documents of the capabilities v (scope's view)
// holds, in the view's order (by id).
func (f *Facade) docs(scope ledger.Scope, v *catalogue.View) []*doc {
	rev := v.Revision()
	caps := v.Capabilities()
	ds := make([]*doc, len(caps))
	f.mu.Lock()
	ix := f.idx
	switch {
	case ix == nil || ix.rev < rev:
		ix = &index{rev: rev, docs: make(map[*catalogue.Capability]*doc, len(caps)), scopes: map[ledger.Scope][]*doc{}}
		f.idx = ix
	case ix.rev > rev:
		// A newer revision is indexed already: this older view is
		// answered alone, without touching the index.
		ix = nil
	}
	if ix != nil {
		if cached, ok := ix.scopes[scope]; ok {
			f.mu.Unlock()
			return cached
		}
		for i, c := range caps {
			ds[i] = ix.docs[c]
		}
	}
	f.mu.Unlock()
	for i, c := range caps {
		if ds[i] == nil {
			ds[i] = newDoc(c.ID, &c.Manifest)
		}
	}
	if ix == nil {
		return ds
	}
	f.mu.Lock()
	for i, c := range caps {
		if _, ok := ix.docs[c]; !ok {
			ix.docs[c] = ds[i]
		}
	}
	if len(ix.scopes) >= maxCachedScopes {
		clear(ix.scopes)
	}
	ix.scopes[scope] = ds
	f.mu.Unlock()
	return ds
}
