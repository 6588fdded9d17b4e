package manifest

import (
	"math"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Fast paths to canonical bytes. canon.Marshal works on any Go value by
// reflection; the values this package hashes over and over (schemas,
// arguments, manifests) are plain JSON trees and fixed structs, so they are
// turned into a canon.Value directly and written by canon's own encoder
// (Value.AppendCanonical): the bytes are canon's, only the reflection is
// skipped. Anything else falls back to canon.Marshal.

// plainValue converts a plain JSON Go value (nil, bool, string, int, int64,
// float64, []any, map[string]any, and []string / map[string]string) into a
// canon.Value. ok is false when some value has another Go type or breaks
// a canonical rule (invalid UTF-8, an integer beyond ±(2^53−1), a
// non-finite float); canon.Marshal then reports the exact error.
func plainValue(v any) (canon.Value, bool) {
	switch x := v.(type) {
	case nil:
		return canon.Value{Kind: canon.Null}, true
	case bool:
		return canon.Value{Kind: canon.Bool, Bool: x}, true
	case string:
		return canon.Value{Kind: canon.String, Str: x}, utf8.ValidString(x)
	case int64:
		return canon.Value{Kind: canon.Integer, Int: x}, -canon.MaxSafeInteger <= x && x <= canon.MaxSafeInteger
	case int:
		return plainValue(int64(x))
	case float64:
		return canon.Value{Kind: canon.Float, Float: x}, !math.IsNaN(x) && !math.IsInf(x, 0)
	case []any:
		elems := make([]canon.Value, len(x))
		for i, e := range x {
			var ok bool
			if elems[i], ok = plainValue(e); !ok {
				return canon.Value{}, false
			}
		}
		return canon.Value{Kind: canon.Array, Elems: elems}, true
	case []string:
		for _, e := range x {
			if !utf8.ValidString(e) {
				return canon.Value{}, false
			}
		}
		return stringsValue(x), true
	case map[string]any:
		return objectValue(x)
	case map[string]string:
		ms := make([]canon.Member, 0, len(x))
		for k, e := range x {
			if !utf8.ValidString(k) || !utf8.ValidString(e) {
				return canon.Value{}, false
			}
			ms = append(ms, canon.Member{Key: k, Value: canon.Value{Kind: canon.String, Str: e}})
		}
		return canon.Value{Kind: canon.Object, Members: ms}, true
	}
	return canon.Value{}, false
}

func objectValue(x map[string]any) (canon.Value, bool) {
	ms := make([]canon.Member, 0, len(x))
	for k, e := range x {
		ev, ok := plainValue(e)
		if !ok || !utf8.ValidString(k) {
			return canon.Value{}, false
		}
		ms = append(ms, canon.Member{Key: k, Value: ev})
	}
	return canon.Value{Kind: canon.Object, Members: ms}, true
}

func stringsValue(s []string) canon.Value {
	elems := make([]canon.Value, len(s))
	for i, e := range s {
		elems[i] = canon.Value{Kind: canon.String, Str: e}
	}
	return canon.Value{Kind: canon.Array, Elems: elems}
}

// canonicalOf returns the canonical bytes of a Go value.
func canonicalOf(v any) ([]byte, error) {
	if pv, ok := plainValue(v); ok {
		return pv.AppendCanonical(nil)
	}
	return canon.Marshal(v)
}

// plainJSON returns a fresh plain JSON copy of a Go value (what
// santhosh and the digests expect), checking that it has a canonical form
// (safe integers, finite floats, valid UTF-8).
func plainJSON(v any) (any, error) {
	if c, ok := copyPlain(v); ok {
		return c, nil
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return nil, err
	}
	val, err := canon.Parse(b)
	if err != nil {
		return nil, err
	}
	return val.Interface(), nil
}

func strPtrValue(s *string) canon.Value {
	if s == nil {
		return canon.Value{Kind: canon.Null}
	}
	return canon.Value{Kind: canon.String, Str: *s}
}

func boolValue(b bool) canon.Value { return canon.Value{Kind: canon.Bool, Bool: b} }

func strValue(s string) canon.Value { return canon.Value{Kind: canon.String, Str: s} }

func obj(ms ...canon.Member) canon.Value { return canon.Value{Kind: canon.Object, Members: ms} }

// manifestValue returns the fully materialized manifest as a canon.Value
// (the same tree canon.Marshal writes for the struct). ok is false when a
// schema, metadata or example payload holds a non-plain Go type.
func manifestValue(m *CapabilityManifest) (canon.Value, bool) {
	examples := make([]canon.Value, len(m.Examples))
	for i := range m.Examples {
		ex := &m.Examples[i]
		req, ok := objectValue(ex.Request)
		if !ok {
			return canon.Value{}, false
		}
		resp, ok := plainValue(ex.Response)
		if !ok {
			return canon.Value{}, false
		}
		examples[i] = obj(
			canon.Member{Key: "description", Value: strPtrValue(ex.Description)},
			canon.Member{Key: "name", Value: strPtrValue(ex.Name)},
			canon.Member{Key: "request", Value: req},
			canon.Member{Key: "response", Value: resp},
		)
	}
	reqSchema, ok1 := objectValue(m.RequestSchema)
	respSchema, ok2 := objectValue(m.ResponseSchema)
	meta, ok3 := objectValue(m.Metadata)
	if !ok1 || !ok2 || !ok3 {
		return canon.Value{}, false
	}
	kinds := make([]canon.Value, len(m.Effects.Kinds))
	for i, k := range m.Effects.Kinds {
		kinds[i] = strValue(string(k))
	}
	r := &m.Requirements
	return obj(
		canon.Member{Key: "deprecation", Value: obj(
			canon.Member{Key: "deprecated", Value: boolValue(m.Deprecation.Deprecated)},
			canon.Member{Key: "note", Value: strPtrValue(m.Deprecation.Note)},
			canon.Member{Key: "successor", Value: strPtrValue(m.Deprecation.Successor)},
		)},
		canon.Member{Key: "description", Value: strValue(m.Description)},
		canon.Member{Key: "effects", Value: obj(
			canon.Member{Key: "concurrency", Value: strValue(string(m.Effects.Concurrency))},
			canon.Member{Key: "kinds", Value: canon.Value{Kind: canon.Array, Elems: kinds}},
			canon.Member{Key: "resource_key_fields", Value: stringsValue(m.Effects.ResourceKeyFields)},
		)},
		canon.Member{Key: "error_codes", Value: stringsValue(m.ErrorCodes)},
		canon.Member{Key: "examples", Value: canon.Value{Kind: canon.Array, Elems: examples}},
		canon.Member{Key: "id", Value: obj(
			canon.Member{Key: "name", Value: strValue(m.ID.Name)},
			canon.Member{Key: "namespace", Value: strValue(m.ID.Namespace)},
			canon.Member{Key: "version", Value: strValue(m.ID.Version)},
		)},
		canon.Member{Key: "metadata", Value: meta},
		canon.Member{Key: "projection_name", Value: strPtrValue(m.ProjectionName)},
		canon.Member{Key: "request_schema", Value: reqSchema},
		canon.Member{Key: "requirements", Value: obj(
			canon.Member{Key: "binaries", Value: stringsValue(r.Binaries)},
			canon.Member{Key: "credentials", Value: stringsValue(r.Credentials)},
			canon.Member{Key: "filesystem", Value: obj(
				canon.Member{Key: "read", Value: boolValue(r.Filesystem.Read)},
				canon.Member{Key: "roles", Value: stringsValue(r.Filesystem.Roles)},
				canon.Member{Key: "write", Value: boolValue(r.Filesystem.Write)},
			)},
			canon.Member{Key: "network", Value: obj(
				canon.Member{Key: "hosts", Value: stringsValue(r.Network.Hosts)},
				canon.Member{Key: "required", Value: boolValue(r.Network.Required)},
			)},
			canon.Member{Key: "services", Value: stringsValue(r.Services)},
		)},
		canon.Member{Key: "response_schema", Value: respSchema},
		canon.Member{Key: "schema_version", Value: strValue(m.SchemaVersion)},
		canon.Member{Key: "tags", Value: stringsValue(m.Tags)},
	), true
}

// copyPlain deep-copies a plain JSON Go value into the form canon.Parse
// gives (int becomes int64, []string becomes []any, ...), checking the
// canonical rules as plainValue does. ok is false when it cannot.
func copyPlain(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case int64:
		return x, -canon.MaxSafeInteger <= x && x <= canon.MaxSafeInteger
	case int:
		return copyPlain(int64(x))
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var ok bool
			if out[i], ok = copyPlain(e); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, ok := copyPlain(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	}
	return nil, false
}
