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

// TestDispatcher checks each answer's consequence: the refused effect
// spends nothing and is not applied, the uncertain one is applied once
// even though the next attempt sends it again, and the dispatcher is never
// called for a recorded effect.
func TestDispatcher(t *testing.T) {
	output(t, run, `doc-1: succeeded; effect-1 confirmed store-1; effect-2 confirmed store-2
archived: refused; effect-1 not_consumed
  next: needs reconciliation false, refused true
doc-3: needs_reconciliation; effect-1 confirmed store-3; effect-2 unknown
  next: needs reconciliation true, refused false
resolved op-3 effect-2: confirmed store-4
doc-3 again: succeeded; effect-1 confirmed store-3; effect-2 confirmed store-4
dispatcher calls 5; store applied ["prepare doc-1" "commit doc-1" "prepare doc-3" "commit doc-3"]
`)
}
