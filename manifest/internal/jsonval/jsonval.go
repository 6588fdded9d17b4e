// Package jsonval holds the few helpers on plain decoded JSON values
// (map[string]any, []any, string, float64, int64, bool, nil) that both
// manifest and its pydantic normalizer need, so that JSON pointers are
// resolved and escaped one way and values are named alike in messages.
package jsonval

import (
	"fmt"
	"strconv"
	"strings"
)

// Lookup resolves a "#/a/b" fragment pointer (RFC 6901) in root; "#" is
// root itself, and anchors, missing members and anything else give nil.
func Lookup(root map[string]any, ref string) any {
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

// EscapeToken escapes one reference token per RFC 6901 ("~" to "~0",
// "/" to "~1").
func EscapeToken(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}

// Describe names a plain JSON value for an error message: a quoted,
// truncated string, "null", "an object", "an array", or the scalar.
func Describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", Truncate(x, 80))
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

// Truncate cuts s to n runes, marking the cut with "…".
func Truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Number is v as a float64 when v is a JSON number (int64, float64 or int).
func Number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case int:
		return float64(x), true
	}
	return 0, false
}
