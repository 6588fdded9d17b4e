package main

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWrapLine checks the demo's line wrapping: every line within the
// width (counted in runes), continuations indented, no word lost, split
// or reordered, and a word wider than a line left whole.
func TestWrapLine(t *testing.T) {
	long := "  outcome    needs_reconciliation — effect.request answered needs_reconciliation: dispatch of effect \"effect-1\" is uncertain: the service did not answer in time"
	for _, tt := range []struct {
		name, line string
		width      int
	}{
		{"fits", "  ipc        invoke.admit    -> allowed", 100},
		{"exactly the width", strings.Repeat("x", 50) + " " + strings.Repeat("y", 49), 100},
		{"one break", long, 100},
		{"several breaks", long, 40},
		{"ellipses count as one column", "  ledger     " + strings.Repeat("attempt-1234abcd… ", 12), 60},
		{"a word wider than a line", "  artifact   " + strings.Repeat("z", 120) + " tail", 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := wrapLine(tt.line, tt.width, 13)
			if !strings.HasSuffix(out, "\n") {
				t.Fatalf("%q does not end in a newline", out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for i, l := range lines {
				n := utf8.RuneCountInString(l)
				wide := strings.Contains(l, strings.Repeat("z", 120))
				if n > tt.width && !wide {
					t.Errorf("line %d has %d columns, want at most %d: %q", i, n, tt.width, l)
				}
				if i > 0 && !strings.HasPrefix(l, strings.Repeat(" ", 13)) {
					t.Errorf("continuation %d is not indented: %q", i, l)
				}
			}
			if got, want := strings.Fields(out), strings.Fields(tt.line); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("words changed:\n got %q\nwant %q", got, want)
			}
			if utf8.RuneCountInString(tt.line) <= tt.width && out != tt.line+"\n" {
				t.Errorf("a line that fits was changed: %q", out)
			}
		})
	}
}

// TestWrapWriter checks that lines written in pieces are wrapped whole,
// and Flush writes an unfinished one.
func TestWrapWriter(t *testing.T) {
	var b strings.Builder
	ww := &wrapWriter{w: &b, width: 20, indent: 2}
	for _, p := range []string{"one two ", "three four five", " six\nseven", " eight"} {
		if _, err := ww.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	ww.Flush()
	want := "one two three four\n  five six\nseven eight"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
