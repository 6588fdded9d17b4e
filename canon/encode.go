package canon

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
)

// Marshal returns the RFC 8785 canonical bytes of a Go value.
//
// Struct fields are named by their json tags exactly as encoding/json names
// them (omitempty and omitzero are honoured) and, like map keys, written in
// UTF-16 key order. A nil slice is written as [] and a nil map as {}: the
// protocol's arrays and objects are never null unless declared nullable,
// which a Go type expresses with a pointer or an interface. Integers must
// lie within ±(2^53−1) ([ErrUnsafeInteger]), floats must be finite
// ([ErrNonFinite]) and strings valid UTF-8 ([ErrInvalidUTF8]). A [Value] is
// written canonically; a [Marshaler] appends its own canonical bytes; a
// json.Marshaler's output (json.RawMessage, json.Number included) is
// checked strictly and canonicalized.
func Marshal(v any) ([]byte, error) {
	return AppendMarshal(nil, v)
}

// DigestOf returns the digest of the canonical bytes of a Go value.
func DigestOf(v any) (Digest, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", err
	}
	return Sum(b), nil
}

// Marshaler is implemented by types that write their own canonical form.
// [Marshal] prefers it to json.Marshaler: JSON bytes from MarshalJSON are
// re-checked under the strict rules, which refuse the plain digits RFC 8785
// writes for an integral float of magnitude 2^53 or more, whereas an
// AppendCanonical method appends canonical bytes that are taken as they
// are. It must append exactly one canonical JSON value.
type Marshaler interface {
	AppendCanonical(dst []byte) ([]byte, error)
}

var (
	canonMarshalerType = reflect.TypeFor[Marshaler]()
	jsonMarshalerType  = reflect.TypeFor[json.Marshaler]()
	jsonNumberType     = reflect.TypeFor[json.Number]()
)

// appendValue appends the canonical bytes of v, found at ptr, depth
// arrays and objects below the root, and hops pointers and interfaces
// below the innermost of them (a cycle of pointers alone nests nothing).
func appendValue(dst []byte, v reflect.Value, ptr string, depth, hops int) ([]byte, error) {
	if !v.IsValid() {
		return append(dst, "null"...), nil
	}
	if depth > DepthLimit || hops > DepthLimit {
		return dst, errPath(ErrTooDeep, ptr, "Go value nested deeper than %d levels (a cycle?)", DepthLimit)
	}
	t := v.Type()
	if t == valueType {
		val := v.Interface().(Value)
		return val.appendCanonical(dst, ptr, depth)
	}
	if t == jsonNumberType {
		return appendRaw(dst, []byte(v.String()), ptr)
	}
	if t.Implements(canonMarshalerType) && !(t.Kind() == reflect.Pointer && v.IsNil()) {
		out, err := v.Interface().(Marshaler).AppendCanonical(dst)
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return dst, err
			}
			return dst, errPath(ErrUnsupportedType, ptr, "%s.AppendCanonical: %v", t, err)
		}
		return out, nil
	}
	if t.Implements(jsonMarshalerType) && !(t.Kind() == reflect.Pointer && v.IsNil()) {
		raw, err := v.Interface().(json.Marshaler).MarshalJSON()
		if err != nil {
			return dst, errPath(ErrUnsupportedType, ptr, "%s.MarshalJSON: %v", t, err)
		}
		return appendRaw(dst, raw, ptr)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendValue(dst, v.Elem(), ptr, depth, hops+1)
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := v.Int()
		if n > MaxSafeInteger || n < -MaxSafeInteger {
			return dst, errPath(ErrUnsafeInteger, ptr, "%d; send it as a string", n)
		}
		return strconv.AppendInt(dst, n, 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n := v.Uint()
		if n > MaxSafeInteger {
			return dst, errPath(ErrUnsafeInteger, ptr, "%d; send it as a string", n)
		}
		return strconv.AppendUint(dst, n, 10), nil
	case reflect.Float32, reflect.Float64:
		out, err := AppendFloat(dst, v.Float())
		if err != nil {
			err.(*Error).Pointer = ptr
		}
		return out, err
	case reflect.String:
		s := v.String()
		if err := checkText(s, ptr); err != nil {
			return dst, err
		}
		return appendQuoted(dst, s), nil
	case reflect.Slice, reflect.Array:
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendValue(dst, v.Index(i), ptr+"/"+strconv.Itoa(i), depth+1, 0); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return dst, errPath(ErrUnsupportedType, ptr, "map key type %s is not a string type", t.Key())
		}
		keys := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := it.Key().String()
			if err := checkText(k, ptr); err != nil {
				return dst, err
			}
			keys = append(keys, k)
		}
		sortKeys(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, v.MapIndex(reflect.ValueOf(k).Convert(t.Key())), ptr+"/"+escapePointer(k), depth+1, 0); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case reflect.Struct:
		dst = append(dst, '{')
		first := true
		for _, f := range fieldsOf(t) {
			fv, ok := fieldForRead(v, f.index)
			if !ok || f.omitZero && fv.IsZero() || f.omitEmpty && isEmpty(fv) {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendQuoted(dst, f.name)
			dst = append(dst, ':')
			var err error
			if dst, err = appendValue(dst, fv, ptr+"/"+escapePointer(f.name), depth+1, 0); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, errPath(ErrUnsupportedType, ptr, "cannot encode %s", t)
}

// appendRaw canonicalizes JSON bytes produced by a marshaler.
func appendRaw(dst, raw []byte, ptr string) ([]byte, error) {
	c, err := Options{MaxBytes: -1}.Canonicalize(raw)
	if err != nil {
		if e, ok := err.(*Error); ok {
			e.Pointer = ptr
		}
		return dst, err
	}
	return append(dst, c...), nil
}

// fieldForRead follows index through embedded pointers, reporting false
// when one of them is nil (the promoted field is then absent).
func fieldForRead(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// isEmpty is encoding/json's notion of an empty value for omitempty.
func isEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
