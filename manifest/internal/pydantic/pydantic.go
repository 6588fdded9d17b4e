// Package pydantic normalizes a capability's JSON arguments as the host's
// pydantic v2 model of its request schema would in lax mode: each value is
// coerced to what pydantic would make of it (a numeric string to a number,
// a datetime to its canonical text, a set to CPython's iteration order, …)
// and declared defaults are filled in, or the value is refused with the
// JSON pointer and pydantic's rule. doc/pydantic.md says what is emulated
// and how it is proven against pydantic itself (manifest's differential
// test).
//
// Its surface is two calls: [Compile] turns a request schema (already
// validated as JSON Schema draft 2020-12 by manifest) into a [Plan], and
// [Plan.Normalize] normalizes one request's arguments along it. manifest is
// its only user; the package holds no state.
package pydantic

// MaxSteps bounds the schema nodes visited for one request, so that unions
// nested in unions (each member tried on the same value) cannot make the
// walk exponential.
const MaxSteps = maxNormSteps

// Plan is a request schema compiled for normalization. It is read-only
// once built and safe for concurrent use.
type Plan struct{ root *pyNode }

// Compile builds the normalization plan of a request schema, a plain JSON
// value as decoded by encoding/json.
func Compile(schema any) *Plan { return &Plan{root: buildPlan(schema)} }

// Error is a refusal: the arguments, or the schema when SchemaFault is set,
// cannot be normalized.
type Error struct {
	Pointer     string // RFC 6901 pointer of the refused value in the arguments
	Rule        string // pydantic's error type, as "int_parsing"
	Detail      string // what was wrong
	SchemaFault bool   // the schema, not the value, is at fault
}

func (e *Error) Error() string { return e.Pointer + ": " + e.Rule + ": " + e.Detail }

// Normalize normalizes args (in place where it can) along p, visiting at
// most budget schema nodes (MaxSteps for a request), and fills in declared
// defaults. It returns the normalized arguments or the first refusal.
func (p *Plan) Normalize(args map[string]any, budget int) (map[string]any, *Error) {
	out, err := normalizeArguments(p.root, args, budget)
	if err != nil {
		return nil, &Error{Pointer: err.ptr, Rule: err.rule, Detail: err.detail, SchemaFault: err.abort}
	}
	return out, nil
}
