package catalogue

import (
	"context"
	"fmt"
)

// Revision returns the catalogue's current revision, one read of the
// store: a View taken at this revision holds what any View of the same
// scope taken at it holds, so that a caller may keep what it derived from
// a View until the revision moves.
func (c *Catalogue) Revision(ctx context.Context) (int64, error) {
	rev, err := c.store.CatalogueRevision(ctx)
	if err != nil {
		return 0, fmt.Errorf("catalogue: reading the revision: %w", err)
	}
	return rev, nil
}
