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
	// The test binary is the host the example launches.
	hostproc.MainIf(hostMarker)
	os.Exit(m.Run())
}

func TestQuickstart(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `echo: succeeded, artifact {"text":"hello"}
two_effects: succeeded, budget 2 of 2 used
  effect-1: confirmed, receipt receipt-effect-1
  effect-2: confirmed, receipt receipt-effect-2
again: succeeded, reconnected true, launched false, same result true
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
