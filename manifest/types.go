package manifest

import (
	"github.com/zeoruntime/runtimeipc/canon"
)

// SchemaVersion is upstream's CAPABILITY_MANIFEST_SCHEMA_VERSION, the value
// schema_version takes when a manifest omits it.
const SchemaVersion = "1.0"

// CapabilityManifest is upstream's CapabilityManifest: the discovery
// document of one capability. JSON names are upstream's.
//
// Decoding (canon.Unmarshal, encoding/json, or [DecodeManifest]) accepts the
// unambiguous lax forms upstream accepts and normalizes them: an id given as
// the string "ns.name@version", set fields with duplicates (de-duplicated,
// first occurrence kept), omitted defaulted fields (materialized). Unknown
// keys are refused, and so are ambiguous coercions upstream would perform
// (see the package comment).
//
// Encoding (canon.Marshal or encoding/json) always writes the fully
// materialized form: all 13 keys, nulls included, object-form id, nil
// slices as [] and nil maps as {}.
//
// Schemas, metadata and example payloads hold plain JSON values: nil, bool,
// int64 (JSON integer literals), float64 (other numbers), string, []any,
// map[string]any. A CapabilityManifest is a plain value; it is safe for
// concurrent reads, and nothing in this package modifies one it is given.
type CapabilityManifest struct {
	// SchemaVersion is the manifest schema version; decoding fills in
	// SchemaVersion ("1.0") when it is omitted. Its value is not checked.
	SchemaVersion string `json:"schema_version"`
	// ID is the capability identity.
	ID CapabilityID `json:"id"`
	// Description is free text (required, may be empty on the wire).
	Description string `json:"description"`
	// RequestSchema is the JSON Schema (draft 2020-12) of the arguments.
	RequestSchema map[string]any `json:"request_schema"`
	// ResponseSchema is the JSON Schema (draft 2020-12) of the response.
	ResponseSchema map[string]any `json:"response_schema"`
	// Examples keep their order. Nil is written as [].
	Examples []CapabilityExample `json:"examples"`
	// ErrorCodes is a set: no duplicates; sorted in the projection.
	ErrorCodes []string `json:"error_codes"`
	// Effects declares side effects and concurrency.
	Effects CapabilityEffects `json:"effects"`
	// Requirements declares services, credentials, binaries, network and
	// filesystem needs.
	Requirements CapabilityRequirements `json:"requirements"`
	// Tags is a set: no duplicates; sorted in the projection.
	Tags []string `json:"tags"`
	// Metadata is any JSON object. Nil is written as {}.
	Metadata map[string]any `json:"metadata"`
	// Deprecation is the deprecation status.
	Deprecation CapabilityDeprecation `json:"deprecation"`
	// ProjectionName is an optional unique name; nil is written as null.
	ProjectionName *string `json:"projection_name"`
}

// CapabilityExample is upstream's CapabilityExample: a declared request and
// optional response.
type CapabilityExample struct {
	// Name is optional; nil is null.
	Name *string `json:"name"`
	// Request is the example arguments (required object).
	Request map[string]any `json:"request"`
	// Response is nil (JSON null) or a JSON object as map[string]any. It
	// is an interface, not a map, so that null and {} stay distinct.
	Response any `json:"response"`
	// Description is optional; nil is null.
	Description *string `json:"description"`
}

// EffectKind is a declared side-effect kind.
type EffectKind string

// The effect kinds upstream defines. No other value is accepted.
const (
	EffectRead                  EffectKind = "read"
	EffectWrite                 EffectKind = "write"
	EffectDelete                EffectKind = "delete"
	EffectExternalCommunication EffectKind = "external_communication"
	EffectFinancial             EffectKind = "financial"
	EffectSecuritySensitive     EffectKind = "security_sensitive"
)

// Valid reports whether k is one of the defined effect kinds.
func (k EffectKind) Valid() bool {
	switch k {
	case EffectRead, EffectWrite, EffectDelete, EffectExternalCommunication, EffectFinancial, EffectSecuritySensitive:
		return true
	}
	return false
}

// ConcurrencyMode is a declared coordination requirement.
type ConcurrencyMode string

// The concurrency modes upstream defines. No other value is accepted.
const (
	ParallelSafe        ConcurrencyMode = "parallel_safe"
	SerialPerCapability ConcurrencyMode = "serial_per_capability"
	SerialPerResource   ConcurrencyMode = "serial_per_resource"
	Exclusive           ConcurrencyMode = "exclusive"
)

// Valid reports whether m is one of the defined concurrency modes.
func (m ConcurrencyMode) Valid() bool {
	switch m {
	case ParallelSafe, SerialPerCapability, SerialPerResource, Exclusive:
		return true
	}
	return false
}

// CapabilityEffects is upstream's CapabilityEffects.
type CapabilityEffects struct {
	// Kinds is a non-empty set of effect kinds.
	Kinds []EffectKind `json:"kinds"`
	// Concurrency defaults to ParallelSafe when omitted on input.
	Concurrency ConcurrencyMode `json:"concurrency"`
	// ResourceKeyFields keeps its order; non-empty if and only if
	// Concurrency is SerialPerResource.
	ResourceKeyFields []string `json:"resource_key_fields"`
}

// CapabilityRequirements is upstream's CapabilityRequirements. Its zero
// value is the materialized form of {}.
type CapabilityRequirements struct {
	// Services is a set of service names.
	Services []string `json:"services"`
	// Credentials is a set of credential names (never values).
	Credentials []string `json:"credentials"`
	// Binaries is a set of binary names.
	Binaries []string `json:"binaries"`
	// Network is the network need.
	Network NetworkRequirement `json:"network"`
	// Filesystem is the filesystem need.
	Filesystem FilesystemRequirement `json:"filesystem"`
}

// NetworkRequirement is upstream's NetworkRequirement. Its zero value is the
// materialized form of {}.
type NetworkRequirement struct {
	// Required says whether network access is needed.
	Required bool `json:"required"`
	// Hosts is a set of host names.
	Hosts []string `json:"hosts"`
}

// FilesystemRequirement is upstream's FilesystemRequirement. Its zero value
// is the materialized form of {}.
type FilesystemRequirement struct {
	// Read says whether read access is needed.
	Read bool `json:"read"`
	// Write says whether write access is needed.
	Write bool `json:"write"`
	// Roles keeps its order.
	Roles []string `json:"roles"`
}

// CapabilityDeprecation is upstream's CapabilityDeprecation. Its zero value
// is the materialized form of {}. Successor and Note may be non-nil only
// when Deprecated is true.
type CapabilityDeprecation struct {
	// Deprecated marks the capability deprecated.
	Deprecated bool `json:"deprecated"`
	// Successor is the canonical id of a replacement, or nil.
	Successor *string `json:"successor"`
	// Note is free text, or nil.
	Note *string `json:"note"`
}

// ProviderBinding is upstream's ProviderBinding (strict): the exact
// provider a host is bound to and its entire inventory. JSON names are
// upstream's; decoding (canon.Unmarshal or encoding/json) refuses unknown
// keys, missing keys and any type coercion at this level, while each
// manifest decodes laxly as [CapabilityManifest] documents. Decoding checks
// shape only; [ValidateBinding] checks everything upstream's inventory
// validation checks.
type ProviderBinding struct {
	// ProtocolVersion must be the JSON integer 1.
	ProtocolVersion int `json:"protocol_version"`
	// Distribution is the installed distribution name (Identifier).
	Distribution string `json:"distribution"`
	// Version is the exact distribution version (Identifier).
	Version string `json:"version"`
	// PythonVersion is the host interpreter's exact version (Identifier).
	PythonVersion string `json:"python_version"`
	// EnvironmentDigest is an opaque digest the host never verifies.
	EnvironmentDigest canon.Digest `json:"environment_digest"`
	// Factory is "module.path:attribute".
	Factory string `json:"factory"`
	// Manifests is the provider's entire inventory, in any order.
	Manifests []CapabilityManifest `json:"manifests"`
	// ManifestDigest must equal InventoryDigest(Manifests).
	ManifestDigest canon.Digest `json:"manifest_digest"`
	// Generation is ≥ 1.
	Generation int64 `json:"generation"`
}
