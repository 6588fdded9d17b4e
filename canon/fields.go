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
	tagged    bool // named by a json tag
}

// fieldsOf lists the JSON members of struct type t in canonical key order.
// Embedded structs without a json tag are flattened; unexported and "-"
// fields are skipped. When several fields claim one name, encoding/json's
// rule decides: the shallowest wins, then the one named by a tag, and a
// tie hides the name altogether.
func fieldsOf(t reflect.Type) []field {
	var out []field
	var walk func(t reflect.Type, prefix []int)
	onPath := map[reflect.Type]bool{} // an embedding cycle ends the walk
	walk = func(t reflect.Type, prefix []int) {
		if onPath[t] {
			return
		}
		onPath[t] = true
		defer delete(onPath, t)
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
			f := field{name: name, index: index, tagged: hasTag && tag != "" && !strings.HasPrefix(tag, ",")}
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
	// Sort by name, then by dominance, and keep each name's dominant field.
	slices.SortStableFunc(out, func(a, b field) int {
		if c := compareUTF16([]byte(a.name), []byte(b.name)); c != 0 {
			return c
		}
		if len(a.index) != len(b.index) {
			return len(a.index) - len(b.index)
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return 0
	})
	kept := out[:0]
	for i := 0; i < len(out); {
		j := i + 1
		for j < len(out) && out[j].name == out[i].name {
			j++
		}
		if j == i+1 || len(out[i].index) < len(out[i+1].index) || out[i].tagged && !out[i+1].tagged {
			kept = append(kept, out[i])
		}
		i = j
	}
	return kept
}
