package manifest

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// pythonMultipleOf makes every "multipleOf" of a compiled schema run as
// the host's Python jsonschema runs it (see pyMultipleOf) instead of the
// library's exact decimal division: with a float divisor Python divides
// in floating point, so 3.8000000000000003 is a multiple of 0.1 there and
// 0.3 is not. It walks every schema reachable from root once.
func pythonMultipleOf(root *jsonschema.Schema, doc any) {
	seen := map[*jsonschema.Schema]bool{}
	var walk func(s *jsonschema.Schema)
	walkAny := func(v any) {
		switch x := v.(type) {
		case *jsonschema.Schema:
			walk(x)
		case []*jsonschema.Schema:
			for _, s := range x {
				walk(s)
			}
		}
	}
	walk = func(s *jsonschema.Schema) {
		if s == nil || seen[s] {
			return
		}
		seen[s] = true
		if s.MultipleOf != nil {
			if d := divisorAt(doc, s.Location); d != nil {
				s.Extensions = append(s.Extensions, &pyMultipleOfExt{want: s.MultipleOf, divisor: d})
				s.MultipleOf = nil
			}
		}
		for _, sub := range []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.PropertyNames,
			s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema} {
			walk(sub)
		}
		if s.DynamicRef != nil {
			walk(s.DynamicRef.Ref)
		}
		for _, list := range [][]*jsonschema.Schema{s.AllOf, s.AnyOf, s.OneOf, s.PrefixItems} {
			for _, sub := range list {
				walk(sub)
			}
		}
		for _, sub := range s.Properties {
			walk(sub)
		}
		for _, sub := range s.PatternProperties {
			walk(sub)
		}
		for _, sub := range s.DependentSchemas {
			walk(sub)
		}
		for _, dep := range s.Dependencies {
			walkAny(dep)
		}
		walkAny(s.AdditionalProperties)
		walkAny(s.Items)
		walkAny(s.AdditionalItems)
	}
	walk(root)
}

// divisorAt is the "multipleOf" value (int64 or float64) of the schema at
// a compiled location ("url#/json/pointer"), or nil.
func divisorAt(doc any, location string) any {
	_, frag, _ := strings.Cut(location, "#")
	root, _ := doc.(map[string]any)
	s, _ := jsonval.Lookup(root, "#"+frag).(map[string]any)
	switch d := s["multipleOf"].(type) {
	case int64, float64:
		return d
	}
	return nil
}

// pyMultipleOfExt is "multipleOf" with Python's arithmetic.
type pyMultipleOfExt struct {
	want    *big.Rat
	divisor any
}

func (e *pyMultipleOfExt) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if pyMultipleOf(v, e.divisor) {
		return
	}
	got, _ := new(big.Rat).SetString(fmt.Sprintf("%v", v))
	ctx.AddError(&kind.MultipleOf{Got: got, Want: e.want})
}

// pyMultipleOf is the host's JSON Schema check of "multipleOf" (Python's
// jsonschema): for a float divisor the quotient is taken in floating
// point and must be integral, falling back to exact fractions when it
// overflows; for an integer divisor the remainder must be zero. Values
// that are not numbers pass (the type check is another keyword's).
func pyMultipleOf(v, divisor any) bool {
	x, isNum := jsonval.Number(v)
	if !isNum {
		return true
	}
	switch d := divisor.(type) {
	case float64:
		q := x / d
		if math.IsInf(q, 0) {
			r := new(big.Rat)
			if i, isInt := v.(int64); isInt {
				r.SetInt64(i)
			} else {
				r.SetFloat64(x)
			}
			return r.Quo(r, new(big.Rat).SetFloat64(d)).IsInt()
		}
		return q == math.Trunc(q)
	case int64:
		if d == 0 {
			return true
		}
		if i, isInt := v.(int64); isInt {
			return i%d == 0
		}
		return math.Mod(x, float64(d)) == 0
	}
	return true
}
