package manifest

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// DecodeManifest parses JSON bytes strictly (canon rules: no duplicate keys,
// safe integers, ...) and decodes them as a CapabilityManifest, laxly and
// normalized as [CapabilityManifest] documents, then applies
// [ValidateManifest].
func DecodeManifest(data []byte) (CapabilityManifest, error) {
	var m CapabilityManifest
	v, err := canon.Parse(data)
	if err != nil {
		return m, parseError(ErrInvalidManifest, "", err)
	}
	err = m.UnmarshalCanon(&v)
	return m, err
}

// DecodeBinding parses JSON bytes strictly and decodes them as a
// ProviderBinding (see [ProviderBinding.UnmarshalCanon]). It does not run
// the inventory validation; call [ValidateBinding] for that.
func DecodeBinding(data []byte) (ProviderBinding, error) {
	var b ProviderBinding
	v, err := canon.Parse(data)
	if err != nil {
		return b, parseError(ErrInvalidBinding, "", err)
	}
	err = b.UnmarshalCanon(&v)
	return b, err
}

// parseError is the refusal of a document canon.Parse refused (err), as
// sentinel: one too large has rule "json.size" and says so; any other has
// rule "json" and says which strict-JSON rule it breaks, and where. Both
// keep err as their Cause, so errors.Is(e, canon.ErrTooLarge) (or
// canon.ErrDuplicateKey, ...) tells them apart.
func parseError(sentinel error, id string, err error) *ValidationError {
	var ce *canon.Error
	if !errors.As(err, &ce) {
		return &ValidationError{Err: sentinel, CapabilityID: id, Rule: "json", Detail: "not strict JSON: " + err.Error(), Cause: err}
	}
	if errors.Is(err, canon.ErrTooLarge) {
		return &ValidationError{Err: sentinel, CapabilityID: id, Rule: "json.size", Detail: "too large: " + ce.Detail, Cause: err}
	}
	return &ValidationError{Err: sentinel, CapabilityID: id, Rule: "json", Detail: "not strict JSON: " + strings.TrimPrefix(ce.Error(), "canon: "), Cause: err}
}

// UnmarshalJSON decodes a manifest with the rules of [DecodeManifest], so
// that plain encoding/json gives the same result as canon.Unmarshal.
func (m *CapabilityManifest) UnmarshalJSON(data []byte) error {
	dm, err := DecodeManifest(data)
	if err != nil {
		return err
	}
	*m = dm
	return nil
}

// UnmarshalJSON decodes a binding with the rules of [DecodeBinding], so
// that plain encoding/json is as strict as canon.Unmarshal.
func (b *ProviderBinding) UnmarshalJSON(data []byte) error {
	db, err := DecodeBinding(data)
	if err != nil {
		return err
	}
	*b = db
	return nil
}

// manifestAlias and bindingAlias drop the methods, so that encoding them
// uses the struct fields.
type (
	manifestAlias CapabilityManifest
	bindingAlias  ProviderBinding
)

// AppendCanonical appends the canonical bytes of the fully materialized
// manifest (canon.Marshaler): all 13 keys, nulls included.
func (m CapabilityManifest) AppendCanonical(dst []byte) ([]byte, error) {
	if v, ok := manifestValue(&m); ok {
		return v.AppendCanonical(dst)
	}
	b, err := canon.Marshal((*manifestAlias)(&m))
	return append(dst, b...), err
}

// MarshalJSON returns the canonical bytes of the fully materialized
// manifest, so that encoding/json writes [] and {} where canon.Marshal does
// (never null for a nil slice or map).
func (m CapabilityManifest) MarshalJSON() ([]byte, error) { return m.AppendCanonical(nil) }

// AppendCanonical appends the canonical bytes of the binding
// (canon.Marshaler).
func (b ProviderBinding) AppendCanonical(dst []byte) ([]byte, error) {
	out, err := canon.Marshal((*bindingAlias)(&b))
	return append(dst, out...), err
}

// MarshalJSON returns the canonical bytes of the binding; see
// [CapabilityManifest.MarshalJSON].
func (b ProviderBinding) MarshalJSON() ([]byte, error) { return b.AppendCanonical(nil) }

// decoder carries what every error needs: the sentinel and the capability.
type decoder struct {
	err   error
	capID string
}

func (d *decoder) fail(ptr, rule, format string, args ...any) error {
	return &ValidationError{Err: d.err, CapabilityID: d.capID, Pointer: ptr, Rule: rule, Detail: fmt.Sprintf(format, args...)}
}

func (d *decoder) typeErr(v *canon.Value, ptr, want string) error {
	return d.fail(ptr, "type", "expected %s, found %s", want, kindName(v))
}

func kindName(v *canon.Value) string {
	switch v.Kind {
	case canon.String:
		return fmt.Sprintf("string %q", jsonval.Truncate(v.Str, 40))
	case canon.Bool:
		return fmt.Sprintf("boolean %t", v.Bool)
	case canon.Integer, canon.Float:
		return "number"
	}
	return v.Kind.String()
}

// object checks that v is an object whose keys are all in fields and that
// every key in required is present, then calls fn for each member in input
// order.
func (d *decoder) object(v *canon.Value, ptr, what string, fields, required []string, fn func(key string, val *canon.Value, ptr string) error) error {
	if v.Kind != canon.Object {
		return d.typeErr(v, ptr, what+" object")
	}
	for i := range v.Members {
		if !slices.Contains(fields, v.Members[i].Key) {
			return d.fail(ptrKey(ptr, v.Members[i].Key), "unknown_key", "%s has no field %q (extra keys are forbidden)", what, v.Members[i].Key)
		}
	}
	for _, r := range required {
		if _, ok := v.Get(r); !ok {
			return d.fail(ptrKey(ptr, r), "required", "%s field %q is required", what, r)
		}
	}
	for i := range v.Members {
		m := &v.Members[i]
		if err := fn(m.Key, &m.Value, ptrKey(ptr, m.Key)); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) str(v *canon.Value, ptr string) (string, error) {
	if v.Kind != canon.String {
		return "", d.typeErr(v, ptr, "string")
	}
	return v.Str, nil
}

func (d *decoder) optStr(v *canon.Value, ptr string) (*string, error) {
	if v.Kind == canon.Null {
		return nil, nil
	}
	s, err := d.str(v, ptr)
	return &s, err
}

// boolean accepts only JSON true/false. Upstream's lax model would also
// take "true", "yes", 1, ...; those are refused here (see the package
// comment).
func (d *decoder) boolean(v *canon.Value, ptr string) (bool, error) {
	if v.Kind != canon.Bool {
		return false, d.typeErr(v, ptr, "boolean (true or false; strings and numbers are not coerced)")
	}
	return v.Bool, nil
}

// strList decodes an array of strings keeping order and duplicates; with
// set true, later duplicates are dropped (first occurrence kept).
func (d *decoder) strList(v *canon.Value, ptr string, set bool) ([]string, error) {
	if v.Kind != canon.Array {
		return nil, d.typeErr(v, ptr, "array of strings")
	}
	out := make([]string, 0, len(v.Elems))
	for i := range v.Elems {
		s, err := d.str(&v.Elems[i], ptrIndex(ptr, i))
		if err != nil {
			return nil, err
		}
		if set && slices.Contains(out, s) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func (d *decoder) jsonObject(v *canon.Value, ptr string) (map[string]any, error) {
	if v.Kind != canon.Object {
		return nil, d.typeErr(v, ptr, "object")
	}
	m, _ := v.Interface().(map[string]any)
	return m, nil
}

var (
	manifestFields   = []string{"schema_version", "id", "description", "request_schema", "response_schema", "examples", "error_codes", "effects", "requirements", "tags", "metadata", "deprecation", "projection_name"}
	manifestRequired = []string{"id", "description", "request_schema", "response_schema", "examples", "error_codes", "effects", "requirements", "tags", "metadata", "deprecation"}
)

// UnmarshalCanon decodes a manifest from a parsed value (canon.Unmarshaler)
// with the lax, normalizing rules described on [CapabilityManifest], then
// applies [ValidateManifest]. Errors are *ValidationError wrapping
// ErrInvalidManifest; their Pointer is relative to v.
func (m *CapabilityManifest) UnmarshalCanon(v *canon.Value) error {
	out, err := decodeManifest(v, "")
	if err != nil {
		return err
	}
	*m = out
	return nil
}

func decodeManifest(v *canon.Value, ptr string) (CapabilityManifest, error) {
	d := &decoder{err: ErrInvalidManifest}
	m := CapabilityManifest{SchemaVersion: SchemaVersion}
	// The id first, so that every later error can name the capability.
	if v.Kind == canon.Object {
		if idv, ok := v.Get("id"); ok {
			id, err := d.capabilityID(idv, ptrKey(ptr, "id"))
			if err != nil {
				return m, err
			}
			m.ID = id
			d.capID = id.String()
		}
	}
	err := d.object(v, ptr, "CapabilityManifest", manifestFields, manifestRequired, func(key string, val *canon.Value, p string) error {
		var err error
		switch key {
		case "schema_version":
			m.SchemaVersion, err = d.str(val, p)
		case "id": // decoded above
		case "description":
			m.Description, err = d.str(val, p)
		case "request_schema":
			m.RequestSchema, err = d.jsonObject(val, p)
		case "response_schema":
			m.ResponseSchema, err = d.jsonObject(val, p)
		case "examples":
			m.Examples, err = d.examples(val, p)
		case "error_codes":
			m.ErrorCodes, err = d.strList(val, p, true)
		case "effects":
			m.Effects, err = d.effects(val, p)
		case "requirements":
			m.Requirements, err = d.requirements(val, p)
		case "tags":
			m.Tags, err = d.strList(val, p, true)
		case "metadata":
			m.Metadata, err = d.jsonObject(val, p)
		case "deprecation":
			m.Deprecation, err = d.deprecation(val, p)
		case "projection_name":
			m.ProjectionName, err = d.optStr(val, p)
		}
		return err
	})
	if err != nil {
		return m, err
	}
	return m, validateManifest(&m, ptr)
}

func (d *decoder) capabilityID(v *canon.Value, ptr string) (CapabilityID, error) {
	var id CapabilityID
	if v.Kind == canon.String {
		var ok bool
		if id, ok = splitCapabilityID(v.Str); !ok {
			d.capID = jsonval.Truncate(v.Str, 80)
			return id, d.fail(ptr, "capability_id.format", "%q is not of the form namespace.name@version", jsonval.Truncate(v.Str, 80))
		}
	} else {
		f := []string{"namespace", "name", "version"}
		err := d.object(v, ptr, "CapabilityId (or its string form)", f, f, func(key string, val *canon.Value, p string) error {
			s, err := d.str(val, p)
			switch key {
			case "namespace":
				id.Namespace = s
			case "name":
				id.Name = s
			case "version":
				id.Version = s
			}
			return err
		})
		if err != nil {
			return id, err
		}
	}
	// Name the id even when it is invalid: it is what the operator sees.
	return id, id.validate(jsonval.Truncate(id.String(), 80), ptr)
}

func (d *decoder) examples(v *canon.Value, ptr string) ([]CapabilityExample, error) {
	if v.Kind != canon.Array {
		return nil, d.typeErr(v, ptr, "array of CapabilityExample")
	}
	out := make([]CapabilityExample, len(v.Elems))
	fields := []string{"name", "request", "response", "description"}
	for i := range v.Elems {
		ex := &out[i]
		err := d.object(&v.Elems[i], ptrIndex(ptr, i), "CapabilityExample", fields, []string{"request"}, func(key string, val *canon.Value, p string) error {
			var err error
			switch key {
			case "name":
				ex.Name, err = d.optStr(val, p)
			case "description":
				ex.Description, err = d.optStr(val, p)
			case "request":
				ex.Request, err = d.jsonObject(val, p)
			case "response":
				if val.Kind != canon.Null {
					var r map[string]any
					r, err = d.jsonObject(val, p)
					ex.Response = r
				}
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *decoder) effects(v *canon.Value, ptr string) (CapabilityEffects, error) {
	e := CapabilityEffects{Concurrency: ParallelSafe, ResourceKeyFields: []string{}}
	err := d.object(v, ptr, "CapabilityEffects", []string{"kinds", "concurrency", "resource_key_fields"}, []string{"kinds"}, func(key string, val *canon.Value, p string) error {
		switch key {
		case "kinds":
			ks, err := d.strList(val, p, true)
			if err != nil {
				return err
			}
			e.Kinds = make([]EffectKind, len(ks))
			for i, k := range ks {
				e.Kinds[i] = EffectKind(k)
			}
		case "concurrency":
			s, err := d.str(val, p)
			if err != nil {
				return err
			}
			e.Concurrency = ConcurrencyMode(s)
		case "resource_key_fields":
			var err error
			e.ResourceKeyFields, err = d.strList(val, p, false)
			return err
		}
		return nil
	})
	return e, err
}

func (d *decoder) requirements(v *canon.Value, ptr string) (CapabilityRequirements, error) {
	r := CapabilityRequirements{Services: []string{}, Credentials: []string{}, Binaries: []string{},
		Network: NetworkRequirement{Hosts: []string{}}, Filesystem: FilesystemRequirement{Roles: []string{}}}
	err := d.object(v, ptr, "CapabilityRequirements", []string{"services", "credentials", "binaries", "network", "filesystem"}, nil, func(key string, val *canon.Value, p string) error {
		var err error
		switch key {
		case "services":
			r.Services, err = d.strList(val, p, true)
		case "credentials":
			r.Credentials, err = d.strList(val, p, true)
		case "binaries":
			r.Binaries, err = d.strList(val, p, true)
		case "network":
			err = d.object(val, p, "NetworkRequirement", []string{"required", "hosts"}, nil, func(key string, val *canon.Value, p string) error {
				var err error
				if key == "required" {
					r.Network.Required, err = d.boolean(val, p)
				} else {
					r.Network.Hosts, err = d.strList(val, p, true)
				}
				return err
			})
		case "filesystem":
			err = d.object(val, p, "FilesystemRequirement", []string{"read", "write", "roles"}, nil, func(key string, val *canon.Value, p string) error {
				var err error
				switch key {
				case "read":
					r.Filesystem.Read, err = d.boolean(val, p)
				case "write":
					r.Filesystem.Write, err = d.boolean(val, p)
				case "roles":
					r.Filesystem.Roles, err = d.strList(val, p, false)
				}
				return err
			})
		}
		return err
	})
	return r, err
}

func (d *decoder) deprecation(v *canon.Value, ptr string) (CapabilityDeprecation, error) {
	var dep CapabilityDeprecation
	err := d.object(v, ptr, "CapabilityDeprecation", []string{"deprecated", "successor", "note"}, nil, func(key string, val *canon.Value, p string) error {
		var err error
		switch key {
		case "deprecated":
			dep.Deprecated, err = d.boolean(val, p)
		case "successor":
			dep.Successor, err = d.optStr(val, p)
		case "note":
			dep.Note, err = d.optStr(val, p)
		}
		return err
	})
	return dep, err
}

var bindingFields = []string{"protocol_version", "distribution", "version", "python_version", "environment_digest", "factory", "manifests", "manifest_digest", "generation"}

// UnmarshalCanon decodes a binding from a parsed value (canon.Unmarshaler).
// The binding level is strict like upstream's wire model: every key
// required, unknown keys refused, protocol_version the JSON integer 1,
// generation a JSON integer ≥ 1, no coercion; field constraints (Identifier
// lengths, digest and factory patterns) are checked. Each manifest decodes
// as [CapabilityManifest.UnmarshalCanon] does, with pointers under
// "/manifests/<i>". Inventory rules (unique ids, schemas, examples, digest)
// are left to [ValidateBinding].
func (b *ProviderBinding) UnmarshalCanon(v *canon.Value) error {
	d := &decoder{err: ErrInvalidBinding}
	var out ProviderBinding
	err := d.object(v, "", "ProviderBinding", bindingFields, bindingFields, func(key string, val *canon.Value, p string) error {
		var err error
		switch key {
		case "protocol_version":
			if val.Kind != canon.Integer {
				return d.typeErr(val, p, "the JSON integer 1")
			}
			if val.Int != protocol.Version {
				return d.fail(p, "protocol_version.const", "protocol_version %d is not supported; only 1 is", val.Int)
			}
			out.ProtocolVersion = protocol.Version
		case "distribution":
			out.Distribution, err = d.str(val, p)
		case "version":
			out.Version, err = d.str(val, p)
		case "python_version":
			out.PythonVersion, err = d.str(val, p)
		case "environment_digest":
			var s string
			s, err = d.str(val, p)
			out.EnvironmentDigest = canon.Digest(s)
		case "manifest_digest":
			var s string
			s, err = d.str(val, p)
			out.ManifestDigest = canon.Digest(s)
		case "factory":
			out.Factory, err = d.str(val, p)
		case "generation":
			if val.Kind != canon.Integer {
				return d.typeErr(val, p, "JSON integer")
			}
			out.Generation = val.Int
		case "manifests":
			if val.Kind != canon.Array {
				return d.typeErr(val, p, "array of CapabilityManifest")
			}
			out.Manifests = make([]CapabilityManifest, len(val.Elems))
			for i := range val.Elems {
				if out.Manifests[i], err = decodeManifest(&val.Elems[i], ptrIndex(p, i)); err != nil {
					return err
				}
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := validateBindingFields(&out); err != nil {
		return err
	}
	*b = out
	return nil
}
