package pydantic

import (
	"fmt"
	"strconv"
	"strings"
)

// The small JSON helpers below are also in manifest, which keeps its own
// copies rather than widen this package's surface.

// maxRefChain bounds how many $ref hops are followed without descending
// into the value, so that a self-referencing schema cannot loop.
const maxRefChain = 32

// lookupPointer resolves a "#/a/b" fragment pointer in root; anchors and
// anything else give nil.
func lookupPointer(root map[string]any, ref string) any {
	if ref == "#" {
		return root
	}
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for tok := range strings.SplitSeq(ref[2:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

// pointerEscape escapes one reference token per RFC 6901.
func pointerEscape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}

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

// describeJSON names a plain JSON value for a message.
func describeJSON(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", truncate(x, 80))
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	default:
		return fmt.Sprintf("%v", x)
	}
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
