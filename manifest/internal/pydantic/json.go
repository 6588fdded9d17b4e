package pydantic

// maxRefChain bounds how many $ref hops are followed without descending
// into the value, so that a self-referencing schema cannot loop.
const maxRefChain = 32

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
