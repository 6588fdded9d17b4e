package canon

import (
	"reflect"
	"slices"
	"strings"
)

// field is one JSON member of a struct type, found through its json tag the
// way encoding/json finds it, so wire structs decode identically with both.
type field struct {
	name      string
	index     []int
	optional  bool // may be absent on input
	omitEmpty bool
	omitZero  bool
}

// fieldsOf lists the JSON members of struct type t in canonical key order.
// Embedded structs without a json tag are flattened; unexported and "-"
// fields are skipped.
func fieldsOf(t reflect.Type) []field {
	var out []field
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag, hasTag := sf.Tag.Lookup("json")
			if tag == "-" {
				continue
			}
			index := append(slices.Clip(prefix), i)
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && !hasTag {
				ft := sf.Type
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, index)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			f := field{name: name, index: index}
			for opt := range strings.SplitSeq(opts, ",") {
				switch opt {
				case "omitempty":
					f.omitEmpty = true
				case "omitzero":
					f.omitZero = true
				}
			}
			f.optional = f.omitEmpty || f.omitZero || sf.Tag.Get("canon") == "optional"
			out = append(out, f)
		}
	}
	walk(t, nil)
	slices.SortFunc(out, func(a, b field) int { return compareUTF16([]byte(a.name), []byte(b.name)) })
	return out
}
