package manifest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// Sentinel errors. Every refusal returned by this package is a
// *ValidationError that wraps exactly one of them, so callers can test with
// [errors.Is] and read the location with [errors.As].
var (
	// ErrInvalidManifest: a capability manifest (or one of its sub-models)
	// has the wrong shape, an unknown key, a wrong type or a value that breaks
	// one of upstream's validators.
	ErrInvalidManifest = errors.New("manifest: invalid capability manifest")
	// ErrInvalidBinding: a ProviderBinding field outside the manifests is
	// missing, mistyped or out of range.
	ErrInvalidBinding = errors.New("manifest: invalid provider binding")
	// ErrDuplicateCapability: two manifests of one inventory share a
	// canonical capability id.
	ErrDuplicateCapability = errors.New("manifest: duplicate capability")
	// ErrProjectionCollision: two manifests of one inventory share a
	// non-empty projection_name.
	ErrProjectionCollision = errors.New("manifest: projection collision")
	// ErrInvalidSchema: a request or response schema is not a valid JSON
	// Schema (draft 2020-12 metaschema), or uses a construct this package
	// refuses (see the package comment).
	ErrInvalidSchema = errors.New("manifest: invalid JSON schema")
	// ErrExternalReference: a "$ref" or "$dynamicRef" key anywhere in a
	// schema is not a string starting with '#'. Nothing is ever fetched.
	ErrExternalReference = errors.New("manifest: non-local schema reference")
	// ErrInvalidExample: an example request or response does not validate
	// against its schema.
	ErrInvalidExample = errors.New("manifest: example does not match schema")
	// ErrDigestMismatch: manifest_digest differs from the digest of the
	// inventory's projection.
	ErrDigestMismatch = errors.New("manifest: manifest digest mismatch")
	// ErrInvalidArguments: request arguments do not validate against the
	// capability's request_schema.
	ErrInvalidArguments = errors.New("manifest: arguments do not match request schema")
	// ErrInvalidResponse: a capability's response does not validate against
	// its response_schema.
	ErrInvalidResponse = errors.New("manifest: response does not match response schema")
	// ErrUnknownCapability: Describe found no capability with the given id.
	ErrUnknownCapability = errors.New("manifest: unknown capability")
	// ErrPagination: a limit outside 1..100 or a negative offset.
	ErrPagination = errors.New("manifest: invalid pagination")
)

// ValidationError describes one refusal: which capability, where in the
// document, which rule. Its Error text is for humans and may change; match
// with errors.Is on the sentinel and read the fields with errors.As.
type ValidationError struct {
	// Err is the sentinel (ErrInvalidManifest, ErrInvalidBinding, ...).
	Err error
	// CapabilityID is the canonical id ("ns.name@version") of the manifest
	// concerned, or "" when the error is not about one manifest or the id
	// itself could not be read.
	CapabilityID string
	// Pointer is the RFC 6901 JSON pointer of the offending value, relative
	// to the document that was being decoded or validated (a ProviderBinding,
	// a CapabilityManifest, or request arguments); "" is the root.
	Pointer string
	// Rule names the rule broken, e.g. "capability_id.name.pattern",
	// "type", "unknown_key", "required", "schema.metaschema"; for a JSON
	// Schema failure it ends with the keyword, e.g.
	// "arguments.schema:required" or "example.request:type".
	Rule string
	// Detail says what exactly was found.
	Detail string
	// Cause is an underlying error, e.g. from the JSON Schema library, or nil.
	Cause error
}

// Error returns a one-line description naming the capability and pointer.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.CapabilityID != "" {
		fmt.Fprintf(&b, ": capability %q", e.CapabilityID)
	}
	fmt.Fprintf(&b, " at %q (%s)", e.Pointer, e.Rule)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel and, when present, the underlying cause.
func (e *ValidationError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Err, e.Cause}
	}
	return []error{e.Err}
}

// ptrKey appends an object key to a JSON pointer.
func ptrKey(base, key string) string { return base + "/" + jsonval.EscapeToken(key) }

// ptrIndex appends an array index to a JSON pointer.
func ptrIndex(base string, i int) string { return fmt.Sprintf("%s/%d", base, i) }
