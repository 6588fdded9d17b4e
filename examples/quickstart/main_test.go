package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/supervise/supervisetest"
)

// TestMain makes the test binary the host the example launches.
func TestMain(m *testing.M) { supervisetest.Main(m) }

// output runs run and compares what it writes with want.
func output(t *testing.T, run func(context.Context, io.Writer) error, want string) {
	t.Helper()
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestQuickstart(t *testing.T) {
	output(t, run, `echo: succeeded, artifact {"text":"hello"}
two_effects: succeeded, budget 2 of 2 used
  effect-1: confirmed, receipt receipt-effect-1
  effect-2: confirmed, receipt receipt-effect-2
again: succeeded, reconnected true, launched false, same result true
`)
}
