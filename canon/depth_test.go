package canon_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

// nested returns n arrays nested in each other, and n objects nested in
// each other whose members each need rearranging ({"b":1,"a":{…}}), so
// that Canonicalize takes its tree path.
func nested(n int) (arrays, objects []byte) {
	arrays = []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	objects = []byte(strings.Repeat(`{"b":1,"a":`, n) + "1" + strings.Repeat("}", n))
	return arrays, objects
}

// depthEntries runs every entry point that parses on in with o.
func depthEntries(o canon.Options, in []byte) map[string]error {
	_, canonErr := o.Canonicalize(in)
	_, parseErr := o.Parse(in)
	var v any
	return map[string]error{
		"Canonicalize":   canonErr,
		"CheckCanonical": o.CheckCanonical(in),
		"Parse":          parseErr,
		"Unmarshal":      o.Unmarshal(in, &v),
	}
}

// TestMaxDepthCannotCrash checks that no MaxDepth exhausts the stack: with
// MaxDepth 1<<30 a million nested arrays or objects are refused as
// ErrTooDeep past DepthLimit by every parsing entry point, and nesting at
// DepthLimit itself is accepted (the objects through the tree path, in
// time linear in the depth).
func TestMaxDepthCannotCrash(t *testing.T) {
	o := canon.Options{MaxDepth: 1 << 30, MaxBytes: -1}
	arrays, objects := nested(1_000_000)
	for doc, in := range map[string][]byte{"arrays": arrays, "objects": objects} {
		for entry, err := range depthEntries(o, in) {
			if !errors.Is(err, canon.ErrTooDeep) {
				t.Errorf("%s of a million nested %s: %v, want ErrTooDeep", entry, doc, err)
			}
		}
	}
	arrays, objects = nested(canon.DepthLimit)
	for doc, in := range map[string][]byte{"arrays": arrays, "objects": objects} {
		for entry, err := range depthEntries(o, in) {
			if err != nil && !(entry == "CheckCanonical" && errors.Is(err, canon.ErrNotCanonical)) {
				t.Errorf("%s of %d nested %s: %v", entry, canon.DepthLimit, doc, err)
			}
		}
	}
	got, err := o.Canonicalize(objects)
	if want := strings.Repeat(`{"a":`, canon.DepthLimit) + "1" + strings.Repeat(`,"b":1}`, canon.DepthLimit); err != nil || string(got) != want {
		t.Errorf("Canonicalize of %d nested objects: %.40s… (%v), want %.40s…", canon.DepthLimit, got, err, want)
	}
}

// TestCyclicValuesRefused checks that Marshal of a cyclic Go value and
// AppendCanonical of a Value that contains itself are refused as
// ErrTooDeep instead of recursing until the stack is exhausted.
func TestCyclicValuesRefused(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	if _, err := canon.Marshal(m); !errors.Is(err, canon.ErrTooDeep) {
		t.Errorf("Marshal of a map that holds itself: %v, want ErrTooDeep", err)
	}
	p := new(any)
	*p = p
	if _, err := canon.Marshal(p); !errors.Is(err, canon.ErrTooDeep) {
		t.Errorf("Marshal of a pointer to itself: %v, want ErrTooDeep", err)
	}
	v := canon.Value{Kind: canon.Array, Elems: make([]canon.Value, 1)}
	v.Elems[0] = v // shares the backing array: the element is v itself
	if _, err := v.Canonical(); !errors.Is(err, canon.ErrTooDeep) {
		t.Errorf("AppendCanonical of a Value that contains itself: %v, want ErrTooDeep", err)
	}
	var e *canon.Error
	if _, err := v.Canonical(); errors.As(err, &e) && !strings.HasPrefix(e.Pointer, "/0/0/0") {
		t.Errorf("pointer of the refusal %.20q, want /0/0/0…", e.Pointer)
	}
	// Nesting within the limit is written.
	deep := any(1)
	for range canon.DepthLimit - 1 {
		deep = []any{deep}
	}
	if _, err := canon.Marshal(deep); err != nil {
		t.Errorf("Marshal of %d nested slices: %v", canon.DepthLimit, err)
	}
}
