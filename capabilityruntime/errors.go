package capabilityruntime

import (
	"errors"
	"fmt"
)

// These errors are returned by the parsers and validators of this package.
// Each is wrapped by a typed error that says where the problem is; test with
// errors.Is against the sentinel, or errors.As for the details.
var (
	// ErrInvalidName is wrapped by every *NameError: a logical capability
	// runtime name that ParseType refuses.
	ErrInvalidName = errors.New("capabilityruntime: invalid capability runtime name")
	// ErrInvalidManifest is wrapped by every *ManifestError: a runtime.json
	// manifest that Validate refuses.
	ErrInvalidManifest = errors.New("capabilityruntime: invalid capability runtime manifest")
)

// These errors are returned by a Registry.
var (
	// ErrUnsupportedKind: no backend is registered for the runtime kind
	// asked of Registry.Start. The message names the registered kinds.
	ErrUnsupportedKind = errors.New("capabilityruntime: no backend for runtime kind")
	// ErrRegistration: Registry.Register was given an empty kind, a nil
	// backend, or a kind that already has a backend.
	ErrRegistration = errors.New("capabilityruntime: invalid backend registration")
)

// ErrRuntimeFailure is wrapped by every *RuntimeError: the capability runtime
// ran and reported a controlled failure in Response.Error.
var ErrRuntimeFailure = errors.New("capabilityruntime: capability runtime reported a failure")

// NameError is a logical name that ParseType refuses.
type NameError struct {
	// Name is the input, as given.
	Name string
	// Problem says which rule the name breaks.
	Problem string
}

// Error implements error.
func (e *NameError) Error() string {
	return fmt.Sprintf("capabilityruntime: invalid capability runtime name %q: %s", e.Name, e.Problem)
}

// Unwrap returns ErrInvalidName.
func (e *NameError) Unwrap() error { return ErrInvalidName }

// ManifestError is a runtime.json manifest that Manifest.Validate refuses. It
// names the first rule broken, in the order Validate documents.
type ManifestError struct {
	// Name is the manifest's metadata.name, as given (possibly empty).
	Name string
	// Field is the JSON path of the offending value, such as
	// "metadata.version", "runtime.protocol" or "platforms.linux-amd64.sha256";
	// empty when the manifest itself is nil.
	Field string
	// Problem says which rule the value breaks and, where it helps, what
	// was expected.
	Problem string
}

// Error implements error.
func (e *ManifestError) Error() string {
	if e.Field == "" {
		return "capabilityruntime: invalid capability runtime manifest: " + e.Problem
	}
	if e.Name == "" {
		return fmt.Sprintf("capabilityruntime: invalid capability runtime manifest: %s: %s", e.Field, e.Problem)
	}
	return fmt.Sprintf("capabilityruntime: invalid capability runtime manifest %q: %s: %s", e.Name, e.Field, e.Problem)
}

// Unwrap returns ErrInvalidManifest.
func (e *ManifestError) Unwrap() error { return ErrInvalidManifest }

// RuntimeError is a controlled failure: the capability runtime answered with
// a non-empty Response.Error. Backends return it next to the Response, so a
// caller that wants the partial result still has it.
type RuntimeError struct {
	// Type and Version name the capability runtime that answered.
	Type, Version string
	// Message is Response.Error, verbatim.
	Message string
}

// Error implements error. The text is "capability runtime <type>@<version>:
// <message>", so that the runtime's own words reach the operator unchanged.
func (e *RuntimeError) Error() string {
	return fmt.Sprintf("capability runtime %s@%s: %s", e.Type, e.Version, e.Message)
}

// Unwrap returns ErrRuntimeFailure.
func (e *RuntimeError) Unwrap() error { return ErrRuntimeFailure }
