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

func TestOwnLoop(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out); err != nil {
		t.Fatal(err)
	}
	want := `attempt-1 (generation 1): exit status 1, 0 requests answered, no valid host result
attempt-2 (generation 2): exit status 0, 5 requests answered, host says succeeded
  bootstrap -> allowed
  invoke.admit -> allowed
  effect.request -> allowed (effect-1, receipt receipt-effect-1, redelivery false)
  effect.request -> allowed (effect-2, receipt receipt-effect-2, redelivery false)
  result.publish -> allowed
result accepted from generation 2: {"receipts":["receipt-effect-1","receipt-effect-2"],"target":"doc-1"}
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
