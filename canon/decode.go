package canon

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
)

// Unmarshaler is implemented by types that decode themselves from a parsed
// [Value], for example to accept several input forms and normalize them.
type Unmarshaler interface {
	UnmarshalCanon(v *Value) error
}

// Unmarshal parses in strictly (see [Parse]) and stores the result in the
// value pointed to by target, using the default limits.
//
// Decoding is strict, like the protocol's wire models: object members are
// matched to struct fields by their exact json tag name (case-sensitive);
// an unknown member is [ErrUnknownField]; a struct field is required unless
// its json tag has omitempty or omitzero or its canon tag is "optional"
// ([ErrMissingField]); a JSON value decodes only into a Go type of its own
// kind ([ErrType]): integers into integer or float types, floats only into
// float types, strings into strings, booleans into bools, null only into
// pointers, interfaces and [Value]. A json.RawMessage receives the
// canonical bytes of its value and a json.Number the canonical text of a
// number. Into an empty interface an object
// becomes map[string]any, an array []any, an integer int64 and a float
// float64, so that [Marshal] gives the same canonical bytes back.
func Unmarshal(in []byte, target any) error { return Options{}.Unmarshal(in, target) }

// Unmarshal is like the package-level [Unmarshal] with o's limits.
func (o Options) Unmarshal(in []byte, target any) error {
	v, err := o.Parse(in)
	if err != nil {
		return err
	}
	return v.Decode(target)
}

// Decode stores v in the value pointed to by target, with the rules of
// [Unmarshal].
func (v *Value) Decode(target any) error {
	rv := reflect.ValueOf(target)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errPath(ErrUnsupportedType, "", "decode target must be a non-nil pointer, got %T", target)
	}
	return decode(v, rv.Elem(), "")
}

var (
	valueType       = reflect.TypeFor[Value]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

func typeErr(v *Value, ptr string, want string) *Error {
	return &Error{Err: ErrType, Offset: int64(v.Offset), Pointer: ptr, Detail: fmt.Sprintf("got %s, want %s", v.Kind, want)}
}

func decode(v *Value, dst reflect.Value, ptr string) error {
	if dst.CanAddr() && dst.Addr().Type().Implements(unmarshalerType) {
		if err := dst.Addr().Interface().(Unmarshaler).UnmarshalCanon(v); err != nil {
			return err
		}
		return nil
	}
	switch dst.Type() {
	case valueType:
		dst.Set(reflect.ValueOf(*v))
		return nil
	case rawMessageType:
		b, err := v.appendCanonical(nil, ptr, 0)
		if err != nil {
			return err
		}
		dst.SetBytes(b)
		return nil
	case jsonNumberType:
		if v.Kind != Integer && v.Kind != Float {
			return typeErr(v, ptr, "number")
		}
		b, err := v.appendCanonical(nil, ptr, 0)
		if err != nil {
			return err
		}
		dst.SetString(string(b))
		return nil
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if v.Kind == Null {
			dst.SetZero()
			return nil
		}
		p := reflect.New(dst.Type().Elem())
		if err := decode(v, p.Elem(), ptr); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	case reflect.Interface:
		if dst.NumMethod() != 0 {
			return errPath(ErrUnsupportedType, ptr, "cannot decode into non-empty interface %s", dst.Type())
		}
		if v.Kind == Null {
			dst.SetZero()
			return nil
		}
		dst.Set(reflect.ValueOf(v.Interface()))
		return nil
	case reflect.Struct:
		return decodeStruct(v, dst, ptr)
	case reflect.Map:
		if v.Kind != Object {
			return typeErr(v, ptr, "object")
		}
		if dst.Type().Key().Kind() != reflect.String {
			return errPath(ErrUnsupportedType, ptr, "map key type %s is not a string type", dst.Type().Key())
		}
		m := reflect.MakeMapWithSize(dst.Type(), len(v.Members))
		for i := range v.Members {
			mem := &v.Members[i]
			e := reflect.New(dst.Type().Elem()).Elem()
			if err := decode(&mem.Value, e, ptr+"/"+escapePointer(mem.Key)); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(mem.Key).Convert(dst.Type().Key()), e)
		}
		dst.Set(m)
		return nil
	case reflect.Slice:
		if v.Kind != Array {
			return typeErr(v, ptr, "array")
		}
		s := reflect.MakeSlice(dst.Type(), len(v.Elems), len(v.Elems))
		for i := range v.Elems {
			if err := decode(&v.Elems[i], s.Index(i), ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Array:
		if v.Kind != Array {
			return typeErr(v, ptr, "array")
		}
		if len(v.Elems) != dst.Len() {
			return &Error{Err: ErrType, Offset: int64(v.Offset), Pointer: ptr, Detail: fmt.Sprintf("array of %d elements, want exactly %d", len(v.Elems), dst.Len())}
		}
		for i := range v.Elems {
			if err := decode(&v.Elems[i], dst.Index(i), ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		if v.Kind != String {
			return typeErr(v, ptr, "string")
		}
		dst.SetString(v.Str)
		return nil
	case reflect.Bool:
		if v.Kind != Bool {
			return typeErr(v, ptr, "boolean")
		}
		dst.SetBool(v.Bool)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Kind != Integer {
			return typeErr(v, ptr, "integer")
		}
		if dst.OverflowInt(v.Int) {
			return &Error{Err: ErrType, Offset: int64(v.Offset), Pointer: ptr, Detail: fmt.Sprintf("integer %d overflows %s", v.Int, dst.Type())}
		}
		dst.SetInt(v.Int)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if v.Kind != Integer {
			return typeErr(v, ptr, "integer")
		}
		if v.Int < 0 || dst.OverflowUint(uint64(v.Int)) {
			return &Error{Err: ErrType, Offset: int64(v.Offset), Pointer: ptr, Detail: fmt.Sprintf("integer %d out of range for %s", v.Int, dst.Type())}
		}
		dst.SetUint(uint64(v.Int))
		return nil
	case reflect.Float32, reflect.Float64:
		switch v.Kind {
		case Integer:
			dst.SetFloat(float64(v.Int))
		case Float:
			if dst.Kind() == reflect.Float32 && math.Abs(v.Float) > math.MaxFloat32 {
				return &Error{Err: ErrType, Offset: int64(v.Offset), Pointer: ptr, Detail: "number overflows float32"}
			}
			dst.SetFloat(v.Float)
		default:
			return typeErr(v, ptr, "number")
		}
		return nil
	}
	return errPath(ErrUnsupportedType, ptr, "cannot decode into %s", dst.Type())
}

func decodeStruct(v *Value, dst reflect.Value, ptr string) error {
	if v.Kind != Object {
		return typeErr(v, ptr, "object")
	}
	fields := fieldsOf(dst.Type())
	seen := make([]bool, len(fields))
	for i := range v.Members {
		m := &v.Members[i]
		j := -1
		for k := range fields {
			if fields[k].name == m.Key {
				j = k
				break
			}
		}
		mptr := ptr + "/" + escapePointer(m.Key)
		if j < 0 {
			return &Error{Err: ErrUnknownField, Offset: int64(m.Value.Offset), Pointer: mptr, Detail: fmt.Sprintf("%s has no field %q", dst.Type(), truncate(m.Key))}
		}
		seen[j] = true
		fv, err := fieldByIndex(dst, fields[j].index)
		if err != nil {
			return errPath(ErrUnsupportedType, mptr, "%v", err)
		}
		if err := decode(&m.Value, fv, mptr); err != nil {
			return err
		}
	}
	for k, f := range fields {
		if !seen[k] && !f.optional {
			return &Error{Err: ErrMissingField, Offset: int64(v.Offset), Pointer: ptr + "/" + escapePointer(f.name), Detail: fmt.Sprintf("%s requires %q", dst.Type(), f.name)}
		}
	}
	return nil
}

// fieldByIndex is reflect.Value.FieldByIndex that allocates nil embedded
// struct pointers on the way.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, fmt.Errorf("cannot set embedded pointer to unexported struct %s", v.Type().Elem())
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

// Interface returns v in its natural Go form: nil, bool, int64, float64,
// string, []any or map[string]any.
func (v *Value) Interface() any {
	switch v.Kind {
	case Bool:
		return v.Bool
	case Integer:
		return v.Int
	case Float:
		return v.Float
	case String:
		return v.Str
	case Array:
		s := make([]any, len(v.Elems))
		for i := range v.Elems {
			s[i] = v.Elems[i].Interface()
		}
		return s
	case Object:
		m := make(map[string]any, len(v.Members))
		for i := range v.Members {
			m[v.Members[i].Key] = v.Members[i].Value.Interface()
		}
		return m
	}
	return nil
}
