package agent

import (
	"context"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// maxCachedScopes bounds the scopes whose documents an index keeps (each
// holds its scope's search text, about the size of its visible
// descriptions); past it they are dropped and rebuilt on demand from the
// documents, which stay.
const maxCachedScopes = 32

// index holds the search documents of one catalogue revision: one per
// capability, built once, and for each scope that searched, its visible
// documents. What a scope sees changes only when the revision moves (an
// admission), so both hold until then. Guarded by the Facade's mu; the
// documents and sets are immutable.
type index struct {
	rev    int64
	docs   map[*catalogue.Capability]*doc
	scopes map[ledger.Scope]*docSet
}

// docSet returns the search documents scope sees now. While the
// catalogue's revision stays, it costs one read of the revision.
func (f *Facade) docSet(ctx context.Context, scope ledger.Scope) (*docSet, error) {
	rev, err := f.cat.Revision(ctx)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if ix := f.idx; ix != nil && ix.rev == rev {
		if set, ok := ix.scopes[scope]; ok {
			f.mu.Unlock()
			return set, nil
		}
	}
	f.mu.Unlock()
	v, err := f.cat.View(ctx, scope)
	if err != nil {
		return nil, err
	}
	return f.docsOf(scope, v), nil
}

// docsOf returns the search documents of the capabilities v (scope's
// view) holds, in the view's order (by id), and keeps them in the index of
// the view's revision unless a newer one is indexed already.
func (f *Facade) docsOf(scope ledger.Scope, v *catalogue.View) *docSet {
	rev := v.Revision()
	caps := v.Capabilities()
	ds := make([]*doc, len(caps))
	f.mu.Lock()
	ix := f.idx
	switch {
	case ix == nil || ix.rev < rev:
		ix = &index{rev: rev, docs: make(map[*catalogue.Capability]*doc, len(caps)), scopes: map[ledger.Scope]*docSet{}}
		f.idx = ix
	case ix.rev > rev:
		// This older view is answered alone, without touching the index.
		ix = nil
	}
	if ix != nil {
		if set, ok := ix.scopes[scope]; ok {
			f.mu.Unlock()
			return set
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
	set := newDocSet(ds)
	if ix == nil {
		return set
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range caps {
		if _, ok := ix.docs[c]; !ok {
			ix.docs[c] = ds[i]
		}
	}
	if len(ix.scopes) >= maxCachedScopes {
		clear(ix.scopes)
	}
	ix.scopes[scope] = set
	return set
}
