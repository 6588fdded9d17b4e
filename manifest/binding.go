package manifest

import (
	"fmt"
)

// ValidateBinding applies upstream's discovery and activation checks to a
// binding, with a fresh [Validator] (no cache shared between calls). See
// [Validator.ValidateBinding].
func ValidateBinding(b ProviderBinding) error {
	var v Validator
	return v.ValidateBinding(b)
}

// ValidateBinding checks a binding the way the host's inventory validation
// does, stopping at the first problem:
//
//   - the binding's own fields (protocol_version 1, Identifier lengths,
//     digest and factory patterns, generation ≥ 1) and every manifest's
//     model validators ([ValidateManifest]);
//   - canonical ids are unique (ErrDuplicateCapability) and non-empty
//     projection names are unique (ErrProjectionCollision);
//   - each request and response schema keeps every $ref/$dynamicRef local
//     (ErrExternalReference) and is valid against the draft 2020-12
//     metaschema (ErrInvalidSchema);
//   - each example request validates against request_schema and each
//     non-null example response against response_schema (ErrInvalidExample);
//   - manifest_digest equals InventoryDigest(Manifests) (ErrDigestMismatch).
//
// Errors are *ValidationError with pointers relative to the binding
// ("/manifests/<i>/...") and the capability id named.
func (v *Validator) ValidateBinding(b ProviderBinding) error {
	if err := validateBindingFields(&b); err != nil {
		return err
	}
	for i := range b.Manifests {
		if err := validateManifest(&b.Manifests[i], ptrIndex("/manifests", i)); err != nil {
			return err
		}
	}
	if err := v.ValidateInventory(b.Manifests, "/manifests"); err != nil {
		return err
	}
	got, err := InventoryDigest(b.Manifests)
	if err != nil {
		return err
	}
	if got != b.ManifestDigest {
		return &ValidationError{Err: ErrDigestMismatch, Pointer: "/manifest_digest", Rule: "manifest_digest",
			Detail: fmt.Sprintf("binding carries %s but the inventory's projection digests to %s", b.ManifestDigest, got)}
	}
	return nil
}

// ValidateInventory applies the inventory rules of ValidateBinding that do
// not involve the digest: unique ids and projection names, schemas and
// examples. base is the JSON pointer of the manifests array in the caller's
// document ("" gives pointers "/<i>/...").
func (v *Validator) ValidateInventory(ms []CapabilityManifest, base string) error {
	ids := make(map[string]int, len(ms))
	names := make(map[string]int, len(ms))
	for i := range ms {
		id := ms[i].ID.String()
		p := ptrIndex(base, i)
		if j, dup := ids[id]; dup {
			return &ValidationError{Err: ErrDuplicateCapability, CapabilityID: id, Pointer: ptrKey(p, "id"), Rule: "inventory.unique_id",
				Detail: fmt.Sprintf("duplicate capability: %s is also manifest %d", id, j)}
		}
		ids[id] = i
		if pn := ms[i].ProjectionName; pn != nil && *pn != "" {
			if j, dup := names[*pn]; dup {
				return &ValidationError{Err: ErrProjectionCollision, CapabilityID: id, Pointer: ptrKey(p, "projection_name"), Rule: "inventory.unique_projection_name",
					Detail: fmt.Sprintf("projection collision: %s and %s both use %q", ms[j].ID.String(), id, *pn)}
			}
			names[*pn] = i
		}
	}
	for i := range ms {
		if err := v.validateSchemasAndExamples(&ms[i], ptrIndex(base, i)); err != nil {
			return err
		}
	}
	return nil
}

func (v *Validator) validateSchemasAndExamples(m *CapabilityManifest, ptr string) error {
	id := m.ID.String()
	req, err := v.compiled(m.RequestSchema, id, ptrKey(ptr, "request_schema"))
	if err != nil {
		return err
	}
	resp, err := v.compiled(m.ResponseSchema, id, ptrKey(ptr, "response_schema"))
	if err != nil {
		return err
	}
	for k := range m.Examples {
		ex := &m.Examples[k]
		ep := ptrIndex(ptrKey(ptr, "examples"), k)
		inst, err := plainJSON(ex.Request)
		if err != nil {
			return &ValidationError{Err: ErrInvalidExample, CapabilityID: id, Pointer: ptrKey(ep, "request"), Rule: "example.json", Detail: "example has no JSON form", Cause: err}
		}
		if err := validateInstance(req, inst, ErrInvalidExample, id, ptrKey(ep, "request"), "example.request"); err != nil {
			return err
		}
		if ex.Response == nil {
			continue
		}
		inst, err = plainJSON(ex.Response)
		if err != nil {
			return &ValidationError{Err: ErrInvalidExample, CapabilityID: id, Pointer: ptrKey(ep, "response"), Rule: "example.json", Detail: "example has no JSON form", Cause: err}
		}
		if err := validateInstance(resp, inst, ErrInvalidExample, id, ptrKey(ep, "response"), "example.response"); err != nil {
			return err
		}
	}
	return nil
}
