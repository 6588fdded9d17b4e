package manifest

import (
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest/internal/pydantic"
)

// Prepared is a request ready to bind: what the host will recompute after it
// normalizes the arguments.
type Prepared struct {
	// CapabilityID is the canonical id string.
	CapabilityID string
	// Arguments are the validated arguments normalized as pydantic's
	// model_dump(mode="json") writes them (declared defaults materialized,
	// undeclared keys of a model dropped, each value in pydantic's
	// spelling), as plain JSON values (int64 for integers, float64 for
	// other numbers). The map is fresh and owned by the caller. Send the
	// host the arguments as given, not these: pydantic's output does not
	// always survive pydantic again (doc/pydantic.md).
	Arguments map[string]any
	// RequestDigest is the digest of
	// {"capability_id": CapabilityID, "arguments": Arguments}.
	RequestDigest canon.Digest
}

// PrepareRequest is [Validator.PrepareRequest] with a fresh Validator.
func PrepareRequest(m CapabilityManifest, args map[string]any) (Prepared, error) {
	var v Validator
	return v.PrepareRequest(m, args)
}

// PrepareRequest validates args against m's request_schema, normalizes
// them as the host's pydantic model would, and returns the normalized
// arguments and the request digest (doc/protocol.md, “What is hashed”;
// doc/design.md, “Request digest”).
//
// Normalization follows the schema, which is pydantic's
// model_json_schema() of the capability's request model: each "format",
// "type", "enum"/"const", "anyOf", "oneOf" with a discriminator,
// "prefixItems", "uniqueItems", "additionalProperties" and "default",
// through local "$ref"s, stands for a pydantic type whose lax validation
// and JSON serialization are reproduced: defaults are materialized, keys a
// model does not declare are dropped, a date-time such as
// "2026-09-05T08:00:00+00:00" becomes "2026-09-05T08:00:00Z", 1.0 for an
// integer becomes 1, and so on; doc/pydantic.md has the full table.
// Values pydantic refuses are refused. What the schema does not describe
// (validators that rewrite values, aliases, default factories, ...) is
// not guessed: for such capabilities the caller passes arguments already
// normalized, and preparing prepared arguments changes nothing (except
// where pydantic's own output does not survive pydantic, as
// doc/pydantic.md says).
//
// m is taken as admitted (see [ValidateBinding]): its id is not re-checked.
// args may hold any Go values canon.Marshal accepts; a nil map is {}.
// Errors are *ValidationError: ErrInvalidArguments with the JSON pointer of
// the offending argument (relative to the arguments object), or the schema
// errors of [Validator.ValidateBinding].
func (v *Validator) PrepareRequest(m CapabilityManifest, args map[string]any) (Prepared, error) {
	id := m.ID.String()
	s, err := v.compiled(m.RequestSchema, id, "/request_schema")
	if err != nil {
		return Prepared{}, err
	}
	plain, err := plainJSON(args)
	if err != nil {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "arguments.json", Detail: "arguments have no canonical JSON form", Cause: err}
	}
	obj, _ := plain.(map[string]any)
	return prepare(s, id, obj)
}

// Preparer prepares requests for one capability whose request schema has
// been compiled once: the fast path for a Runtime that admits a manifest
// and then prepares many requests for it. It holds its own copy of the
// schema, so later changes to the manifest do not affect it. A Preparer is
// immutable and safe for concurrent use.
type Preparer struct {
	id     string
	schema *compiledSchema
}

// Preparer compiles (or finds in the cache) m's request schema and returns
// a Preparer for m. Errors are those of [Validator.PrepareRequest] for the
// schema.
func (v *Validator) Preparer(m CapabilityManifest) (*Preparer, error) {
	id := m.ID.String()
	s, err := v.compiled(m.RequestSchema, id, "/request_schema")
	if err != nil {
		return nil, err
	}
	return &Preparer{id: id, schema: s}, nil
}

// Prepare is [Validator.PrepareRequest] without the schema lookup.
func (p *Preparer) Prepare(args map[string]any) (Prepared, error) {
	plain, err := plainJSON(args)
	if err != nil {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: p.id, Rule: "arguments.json", Detail: "arguments have no canonical JSON form", Cause: err}
	}
	obj, _ := plain.(map[string]any)
	return prepare(p.schema, p.id, obj)
}

// PrepareRequestJSON is PrepareRequest for arguments given as JSON bytes,
// parsed strictly (canon rules); they must be a JSON object.
func (v *Validator) PrepareRequestJSON(m CapabilityManifest, args []byte) (Prepared, error) {
	id := m.ID.String()
	s, err := v.compiled(m.RequestSchema, id, "/request_schema")
	if err != nil {
		return Prepared{}, err
	}
	val, err := canon.Parse(args)
	if err != nil {
		e := parseError(ErrInvalidArguments, id, err)
		e.Rule = "arguments." + e.Rule
		return Prepared{}, e
	}
	obj, ok := val.Interface().(map[string]any)
	if !ok {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "type", Detail: "arguments must be a JSON object, found " + val.Kind.String()}
	}
	return prepare(s, id, obj)
}

func prepare(s *compiledSchema, id string, args map[string]any) (Prepared, error) {
	if args == nil {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "type", Detail: "arguments must be a JSON object"}
	}
	if err := validateInstance(s, args, ErrInvalidArguments, id, "", "arguments.schema"); err != nil {
		return Prepared{}, err
	}
	args, nerr := s.normPlan().Normalize(args, pydantic.MaxSteps)
	if nerr != nil {
		if nerr.SchemaFault {
			return Prepared{}, &ValidationError{Err: ErrInvalidSchema, CapabilityID: id, Pointer: "/request_schema", Rule: "schema.normalize", Detail: nerr.Detail}
		}
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Pointer: nerr.Pointer, Rule: "pydantic." + nerr.Rule, Detail: nerr.Detail}
	}
	av, _ := objectValue(args) // plain by construction
	pre := obj(canon.Member{Key: "arguments", Value: av}, canon.Member{Key: "capability_id", Value: strValue(id)})
	b, err := pre.AppendCanonical(nil)
	if err != nil {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "arguments.json", Detail: "arguments have no canonical JSON form", Cause: err}
	}
	return Prepared{CapabilityID: id, Arguments: args, RequestDigest: canon.Sum(b)}, nil
}

// ValidateResponse checks a capability's response data against m's
// response_schema, compiled once and cached like the request schema, with
// the same deny-all loader and pattern dialect. The host performs this
// check before it publishes a result; a Runtime may repeat it on the data
// it receives. Errors wrap [ErrInvalidResponse] (or the schema's own
// refusal) with the JSON pointer of the offending value.
func (v *Validator) ValidateResponse(m CapabilityManifest, data map[string]any) error {
	id := m.ID.String()
	s, err := v.compiled(m.ResponseSchema, id, "/response_schema")
	if err != nil {
		return err
	}
	plain, err := plainJSON(data)
	if err != nil {
		return &ValidationError{Err: ErrInvalidResponse, CapabilityID: id, Rule: "response.json", Detail: "response has no canonical JSON form", Cause: err}
	}
	obj, _ := plain.(map[string]any)
	if obj == nil {
		return &ValidationError{Err: ErrInvalidResponse, CapabilityID: id, Rule: "type", Detail: "response must be a JSON object"}
	}
	return validateInstance(s, obj, ErrInvalidResponse, id, "", "response.schema")
}
