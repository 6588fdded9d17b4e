package jsonval

import "testing"

func TestLookupEscapedTokens(t *testing.T) {
	root := map[string]any{
		"a/b": map[string]any{"~k": []any{"zero", "one"}},
	}
	ptr := "#/" + EscapeToken("a/b") + "/" + EscapeToken("~k") + "/1"
	if ptr != "#/a~1b/~0k/1" {
		t.Fatalf("escaped pointer = %q", ptr)
	}
	if got := Lookup(root, ptr); got != "one" {
		t.Fatalf("Lookup(%q) = %v, want \"one\"", ptr, got)
	}
	for _, bad := range []string{"#/a~1b/~0k/2", "#/a~1b/~0k/-1", "#/missing/x", "#anchor", "a/b"} {
		if got := Lookup(root, bad); got != nil {
			t.Errorf("Lookup(%q) = %v, want nil", bad, got)
		}
	}
	if got, ok := Lookup(root, "#").(map[string]any); !ok || len(got) != 1 {
		t.Errorf("Lookup(\"#\") = %v, want root", got)
	}
}

func TestDescribeAndNumber(t *testing.T) {
	for v, want := range map[any]string{"x": `"x"`, nil: "null", 3.5: "3.5", true: "true"} {
		if got := Describe(v); got != want {
			t.Errorf("Describe(%v) = %q, want %q", v, got, want)
		}
	}
	if got := Describe(map[string]any{}); got != "an object" {
		t.Errorf("Describe(object) = %q", got)
	}
	if got := Truncate("héllo", 2); got != "hé…" {
		t.Errorf("Truncate = %q", got)
	}
	if f, ok := Number(int64(7)); !ok || f != 7 {
		t.Errorf("Number(int64 7) = %v, %v", f, ok)
	}
	if _, ok := Number("7"); ok {
		t.Error("Number(\"7\") reported a number")
	}
}
