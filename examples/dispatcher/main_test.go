package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/hostsim/hostproc"
)

func TestMain(m *testing.M) {
	hostproc.MainIf(hostMarker)
	os.Exit(m.Run())
}

// TestDispatcher checks each answer's consequence: the refused effect
// spends nothing and is not applied, the uncertain one is applied once
// even though the next attempt sends it again, and the dispatcher is never
// called for a recorded effect.
func TestDispatcher(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `doc-1: succeeded; effect-1 confirmed store-1; effect-2 confirmed store-2
archived: refused; effect-1 not_consumed
  next: needs reconciliation false, refused true
doc-3: needs_reconciliation; effect-1 confirmed store-3; effect-2 unknown
  next: needs reconciliation true, refused false
resolved op-3 effect-2: confirmed store-4
doc-3 again: succeeded; effect-1 confirmed store-3; effect-2 confirmed store-4
dispatcher calls 5; store applied ["prepare doc-1" "commit doc-1" "prepare doc-3" "commit doc-3"]
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
