package manifest

import (
	"slices"

	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// ValidateManifest applies upstream's CapabilityManifest model validators to
// a manifest value: CapabilityId patterns, effect kinds and concurrency
// enums, kinds non-empty, resource_key_fields non-empty if and only if
// concurrency is serial_per_resource, deprecation successor and note only
// when deprecated, set fields free of duplicates, and an example response
// that is null or an object. Decoding already applies it; call it for
// manifests built in Go. Schemas and examples against schemas are checked by
// [ValidateBinding]. Errors are *ValidationError wrapping ErrInvalidManifest
// with a pointer relative to the manifest.
func ValidateManifest(m CapabilityManifest) error {
	return validateManifest(&m, "")
}

func validateManifest(m *CapabilityManifest, ptr string) error {
	capID := m.ID.String()
	d := &decoder{err: ErrInvalidManifest, capID: capID}
	if err := m.ID.validate(capID, ptrKey(ptr, "id")); err != nil {
		return err
	}
	for i, ex := range m.Examples {
		switch ex.Response.(type) {
		case nil, map[string]any:
		default:
			return d.fail(ptrKey(ptrIndex(ptrKey(ptr, "examples"), i), "response"), "type", "response must be null or an object, found Go %T", ex.Response)
		}
	}
	e := &m.Effects
	ep := ptrKey(ptr, "effects")
	if len(e.Kinds) == 0 {
		return d.fail(ptrKey(ep, "kinds"), "effects.kinds.min_length", "at least one effect kind is required")
	}
	for i, k := range e.Kinds {
		if !k.Valid() {
			return d.fail(ptrIndex(ptrKey(ep, "kinds"), i), "effects.kinds.enum", "%q is not an effect kind (read, write, delete, external_communication, financial, security_sensitive)", string(k))
		}
		if slices.Contains(e.Kinds[:i], k) {
			return d.fail(ptrIndex(ptrKey(ep, "kinds"), i), "set.unique", "effect kind %q is listed twice", string(k))
		}
	}
	if !e.Concurrency.Valid() {
		return d.fail(ptrKey(ep, "concurrency"), "effects.concurrency.enum", "%q is not a concurrency mode (parallel_safe, serial_per_capability, serial_per_resource, exclusive)", string(e.Concurrency))
	}
	if (e.Concurrency == SerialPerResource) != (len(e.ResourceKeyFields) > 0) {
		if e.Concurrency == SerialPerResource {
			return d.fail(ptrKey(ep, "resource_key_fields"), "effects.resource_key_fields", "serial_per_resource needs at least one resource key field")
		}
		return d.fail(ptrKey(ep, "resource_key_fields"), "effects.resource_key_fields", "resource key fields are allowed only with serial_per_resource, not %q", string(e.Concurrency))
	}
	rp := ptrKey(ptr, "requirements")
	sets := []struct {
		ptr  string
		vals []string
	}{
		{ptrKey(ptr, "error_codes"), m.ErrorCodes},
		{ptrKey(ptr, "tags"), m.Tags},
		{ptrKey(rp, "services"), m.Requirements.Services},
		{ptrKey(rp, "credentials"), m.Requirements.Credentials},
		{ptrKey(rp, "binaries"), m.Requirements.Binaries},
		{ptrKey(ptrKey(rp, "network"), "hosts"), m.Requirements.Network.Hosts},
	}
	for _, s := range sets {
		if i := firstDuplicate(s.vals); i >= 0 {
			return d.fail(ptrIndex(s.ptr, i), "set.unique", "%q is listed twice in a set field (decoding removes duplicates; a manifest built in Go must not have them)", s.vals[i])
		}
	}
	dep := &m.Deprecation
	if !dep.Deprecated {
		if dep.Successor != nil {
			return d.fail(ptrKey(ptrKey(ptr, "deprecation"), "successor"), "deprecation.successor", "a successor is allowed only when deprecated is true")
		}
		if dep.Note != nil {
			return d.fail(ptrKey(ptrKey(ptr, "deprecation"), "note"), "deprecation.note", "a note is allowed only when deprecated is true")
		}
	}
	return nil
}

// firstDuplicate returns the index of the first element equal to an earlier
// one, or -1.
func firstDuplicate(s []string) int {
	if len(s) < 16 {
		for i := 1; i < len(s); i++ {
			if slices.Contains(s[:i], s[i]) {
				return i
			}
		}
		return -1
	}
	seen := make(map[string]struct{}, len(s))
	for i, v := range s {
		if _, ok := seen[v]; ok {
			return i
		}
		seen[v] = struct{}{}
	}
	return -1
}

// validateBindingFields checks the binding's own fields (not the inventory):
// what upstream's strict model checks at parse time.
func validateBindingFields(b *ProviderBinding) error {
	d := &decoder{err: ErrInvalidBinding}
	if b.ProtocolVersion != protocol.Version {
		return d.fail("/protocol_version", "protocol_version.const", "protocol_version %d is not supported; only 1 is", b.ProtocolVersion)
	}
	for _, f := range []struct{ key, val string }{{"distribution", b.Distribution}, {"version", b.Version}, {"python_version", b.PythonVersion}} {
		if err := protocol.CheckIdentifier(f.key, f.val); err != nil {
			return d.fail("/"+f.key, "identifier", "%s", err)
		}
	}
	for _, f := range []struct {
		key string
		val string
	}{{"environment_digest", string(b.EnvironmentDigest)}, {"manifest_digest", string(b.ManifestDigest)}} {
		if !validDigest(f.val) {
			return d.fail("/"+f.key, "digest.pattern", "%q is not sha256: followed by 64 lowercase hex digits", jsonval.Truncate(f.val, 80))
		}
	}
	if !validFactory(b.Factory) {
		return d.fail("/factory", "factory.pattern", "%q is not of the form module.path:attribute", jsonval.Truncate(b.Factory, 80))
	}
	if b.Generation < 1 {
		return d.fail("/generation", "generation.minimum", "generation %d is below 1", b.Generation)
	}
	return nil
}

// validDigest checks ^sha256:[0-9a-f]{64}$ with Rust regex semantics ('$'
// is the end of text, so a trailing "\n" is refused).
func validDigest(s string) bool {
	if len(s) != 71 || s[:7] != "sha256:" {
		return false
	}
	for i := 7; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
