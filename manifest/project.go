package manifest

import (
	"cmp"
	"slices"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Project returns the projected form of one manifest, as upstream's
// manifest_inventory writes each entry: the fully materialized manifest with
// its seven set fields (error_codes, tags, effects.kinds,
// requirements.services, requirements.credentials, requirements.binaries,
// requirements.network.hosts) de-duplicated and sorted by Unicode code point
// (byte order of UTF-8, which is code-point order). Everything else keeps
// its order. The result shares schemas, metadata and examples with m; treat
// them as read-only.
func Project(m CapabilityManifest) CapabilityManifest {
	p := m
	if p.Examples == nil {
		p.Examples = []CapabilityExample{}
	}
	if p.Effects.ResourceKeyFields == nil {
		p.Effects.ResourceKeyFields = []string{}
	}
	if p.Requirements.Filesystem.Roles == nil {
		p.Requirements.Filesystem.Roles = []string{}
	}
	p.ErrorCodes = sortedSet(m.ErrorCodes)
	p.Tags = sortedSet(m.Tags)
	kinds := make([]EffectKind, len(m.Effects.Kinds))
	copy(kinds, m.Effects.Kinds)
	slices.Sort(kinds)
	p.Effects.Kinds = slices.Compact(kinds)
	p.Requirements.Services = sortedSet(m.Requirements.Services)
	p.Requirements.Credentials = sortedSet(m.Requirements.Credentials)
	p.Requirements.Binaries = sortedSet(m.Requirements.Binaries)
	p.Requirements.Network.Hosts = sortedSet(m.Requirements.Network.Hosts)
	return p
}

func sortedSet(s []string) []string {
	out := make([]string, len(s))
	copy(out, s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Inventory returns upstream's manifest_inventory: every manifest projected
// (see [Project]) and sorted by canonical id string in code-point order
// (stable, like Python's sorted). This is what `capabilities list` pages and
// what manifest_digest hashes. The input is not modified.
func Inventory(ms []CapabilityManifest) []CapabilityManifest {
	out := make([]CapabilityManifest, len(ms))
	for i := range ms {
		out[i] = Project(ms[i])
	}
	slices.SortStableFunc(out, func(a, b CapabilityManifest) int {
		return cmp.Compare(a.ID.String(), b.ID.String())
	})
	return out
}

// InventoryDigest returns digest(manifest_inventory(ms)), the value a
// ProviderBinding's manifest_digest must carry. The empty inventory has the
// digest of [], sha256:4f53cda1…b945. It fails only when a value inside the
// manifests has no JSON form (an unsafe integer, a non-finite float, a Go
// type JSON cannot express).
func InventoryDigest(ms []CapabilityManifest) (canon.Digest, error) {
	inv := Inventory(ms)
	b, err := marshalInventory(inv)
	if err != nil {
		return "", err
	}
	return canon.Sum(b), nil
}

// InventoryJSON returns the canonical bytes of Inventory(ms).
func InventoryJSON(ms []CapabilityManifest) ([]byte, error) {
	return marshalInventory(Inventory(ms))
}

func marshalInventory(inv []CapabilityManifest) ([]byte, error) {
	elems := make([]canon.Value, len(inv))
	fast := true
	for i := range inv {
		var ok bool
		if elems[i], ok = manifestValue(&inv[i]); !ok {
			fast = false
			break
		}
	}
	var b []byte
	var err error
	if fast {
		arr := canon.Value{Kind: canon.Array, Elems: elems}
		b, err = arr.AppendCanonical(make([]byte, 0, 2048*len(inv)+2))
	} else {
		alias := make([]manifestAlias, len(inv))
		for i := range inv {
			alias[i] = manifestAlias(inv[i])
		}
		b, err = canon.Marshal(alias)
	}
	if err != nil {
		return nil, &ValidationError{Err: ErrInvalidManifest, Rule: "json", Detail: "manifest has no canonical JSON form", Cause: err}
	}
	return b, nil
}

// Pagination bounds of `capabilities list`.
const (
	MinPageLimit     = 1
	MaxPageLimit     = 100
	DefaultPageLimit = 20
)

// Page is one page of `capabilities list`: JSON names are the host's.
type Page struct {
	// Capabilities are projected manifests in canonical-id order.
	Capabilities []CapabilityManifest `json:"capabilities"`
	// NextOffset is the offset of the next page, or nil on the last page.
	NextOffset *int `json:"next_offset"`
}

// Paginate returns inventory[offset:offset+limit] of Inventory(ms) like the
// host's `capabilities list --limit N --offset M`: limit must be 1..100 and
// offset ≥ 0 (ErrPagination otherwise); NextOffset is offset+len(page) when
// entries remain, else nil; an offset past the end gives an empty page.
func Paginate(ms []CapabilityManifest, limit, offset int) (Page, error) {
	if limit < MinPageLimit || limit > MaxPageLimit {
		return Page{}, &ValidationError{Err: ErrPagination, Rule: "limit", Detail: "limit must be between 1 and 100"}
	}
	if offset < 0 {
		return Page{}, &ValidationError{Err: ErrPagination, Rule: "offset", Detail: "offset must be 0 or more"}
	}
	inv := Inventory(ms)
	start := min(offset, len(inv))
	end := min(start+limit, len(inv))
	p := Page{Capabilities: inv[start:end:end]}
	if end < len(inv) {
		next := end
		p.NextOffset = &next
	}
	return p, nil
}

// Describe returns the projected manifest whose canonical id string equals
// id exactly, like `capabilities describe`; ErrUnknownCapability otherwise.
func Describe(ms []CapabilityManifest, id string) (CapabilityManifest, error) {
	for i := range ms {
		if ms[i].ID.String() == id {
			return Project(ms[i]), nil
		}
	}
	return CapabilityManifest{}, &ValidationError{Err: ErrUnknownCapability, CapabilityID: id, Rule: "describe", Detail: "no capability with this id in the inventory"}
}
