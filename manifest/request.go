package manifest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Prepared is a request ready to bind: what the host will recompute after it
// normalizes the arguments.
type Prepared struct {
	// CapabilityID is the canonical id string.
	CapabilityID string
	// Arguments are the validated arguments with the schema's declared
	// defaults materialized, as plain JSON values (int64 for integer
	// literals, float64 for other numbers). The map is fresh and owned by
	// the caller.
	Arguments map[string]any
	// RequestDigest is the digest of
	// {"capability_id": CapabilityID, "arguments": Arguments}.
	RequestDigest canon.Digest
}

// maxRefChain bounds how many $ref hops are followed without descending
// into the value, so that a self-referencing schema cannot loop.
const maxRefChain = 32

// PrepareRequest is [Validator.PrepareRequest] with a fresh Validator.
func PrepareRequest(m CapabilityManifest, args map[string]any) (Prepared, error) {
	var v Validator
	return v.PrepareRequest(m, args)
}

// PrepareRequest validates args against m's request_schema, materializes
// the schema's declared defaults and returns the normalized arguments and
// the request digest (doc/protocol.md, “What is hashed”; doc/design.md,
// “Request digest”).
//
// Defaults: for every object in the arguments whose schema has
// "properties", a missing property whose schema declares "default" gets a
// deep copy of that default. The walk follows local "$ref"s (also through
// allOf, through the one object-shaped branch of anyOf/oneOf, through
// "items", "prefixItems" and an "additionalProperties" schema), so nested
// pydantic models get their defaults too. Nothing else is invented: a
// default_factory (no "default" in the schema), validators that rewrite
// values, aliases, and models that drop unknown keys are pydantic
// behaviour the schema does not describe; for those the caller must pass
// already-normalized arguments, and the host's refusal
// (ZEO_HOST_REQUEST_BINDING) tells it so.
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
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "arguments.json", Detail: "arguments are not strict JSON", Cause: err}
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
	root, _ := s.doc.(map[string]any)
	w := defaulter{root: root, budget: maxDefaultSteps}
	if !w.apply(root, args, 0) {
		return Prepared{}, &ValidationError{Err: ErrInvalidSchema, CapabilityID: id, Pointer: "/request_schema", Rule: "schema.defaults",
			Detail: fmt.Sprintf("materializing defaults needs more than %d schema steps; the schema is too deeply composed", maxDefaultSteps)}
	}
	av, _ := objectValue(args) // plain by construction
	pre := obj(canon.Member{Key: "arguments", Value: av}, canon.Member{Key: "capability_id", Value: strValue(id)})
	b, err := pre.AppendCanonical(nil)
	if err != nil {
		return Prepared{}, &ValidationError{Err: ErrInvalidArguments, CapabilityID: id, Rule: "arguments.json", Detail: "arguments have no canonical JSON form", Cause: err}
	}
	return Prepared{CapabilityID: id, Arguments: args, RequestDigest: canon.Sum(b)}, nil
}

// resolve follows local "$ref"s from schema until a schema without one
// (or an unresolvable one, which gives nil).
func resolve(root map[string]any, schema any) map[string]any {
	for range maxRefChain {
		m, ok := schema.(map[string]any)
		if !ok {
			return nil
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		schema = lookupPointer(root, ref)
	}
	return nil
}

// lookupPointer resolves a "#/a/b" fragment pointer in root; anchors and
// anything else give nil.
func lookupPointer(root map[string]any, ref string) any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for tok := range strings.SplitSeq(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// maxDefaultSteps bounds the schema nodes visited while materializing
// defaults, so that a schema composed as a wide DAG (allOf of allOf of ...
// through shared $refs) cannot make the walk exponential.
const maxDefaultSteps = 100_000

// defaulter materializes declared defaults; budget counts the steps left.
type defaulter struct {
	root   map[string]any
	budget int
}

// apply materializes declared defaults into val (in place) along schema
// and reports false when the step budget ran out. Descending into val ends
// by itself; hops counts the steps that do not descend (allOf/anyOf/oneOf),
// so that a schema cycling through them cannot recurse forever (the
// validator refuses such cycles first anyway).
func (w *defaulter) apply(schema any, val any, hops int) bool {
	w.budget--
	if w.budget < 0 {
		return false
	}
	root := w.root
	s := resolve(root, schema)
	if s == nil || hops > maxRefChain {
		return true
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			if !w.apply(sub, val, hops+1) {
				return false
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches, ok := s[key].([]any); ok {
			if b := onlyBranchFor(root, branches, val); b != nil {
				if !w.apply(b, val, hops+1) {
					return false
				}
			}
		}
	}
	switch x := val.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for name, ps := range props {
			if cur, present := x[name]; present {
				if !w.apply(ps, cur, 0) {
					return false
				}
				continue
			}
			if psm, ok := ps.(map[string]any); ok {
				if d, ok := psm["default"]; ok {
					x[name] = deepCopy(d)
				}
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			for name, cur := range x {
				if _, declared := props[name]; !declared {
					if !w.apply(ap, cur, 0) {
						return false
					}
				}
			}
		}
	case []any:
		prefix, _ := s["prefixItems"].([]any)
		for i, e := range x {
			var sub any
			if i < len(prefix) {
				sub = prefix[i]
			} else if items, ok := s["items"].(map[string]any); ok {
				sub = items
			} else {
				continue
			}
			if !w.apply(sub, e, 0) {
				return false
			}
		}
	}
	return true
}

// onlyBranchFor returns the one branch of an anyOf/oneOf that describes
// the JSON type of val (by "type", or by "properties"/"items"), or nil when
// none or several do: defaults are never guessed.
func onlyBranchFor(root map[string]any, branches []any, val any) any {
	var found any
	for _, b := range branches {
		s := resolve(root, b)
		if s == nil || !describesType(s, val) {
			continue
		}
		if found != nil {
			return nil
		}
		found = b
	}
	return found
}

func describesType(s map[string]any, val any) bool {
	want := ""
	switch val.(type) {
	case map[string]any:
		want = "object"
	case []any:
		want = "array"
	default:
		return false // scalars carry no nested defaults
	}
	switch t := s["type"].(type) {
	case string:
		return t == want
	case []any:
		for _, e := range t {
			if e == want {
				return true
			}
		}
		return false
	}
	if want == "object" {
		_, ok := s["properties"]
		return ok
	}
	_, ok := s["items"]
	return ok
}

// deepCopy copies a plain JSON value.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = deepCopy(e)
		}
		return a
	}
	return v
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
