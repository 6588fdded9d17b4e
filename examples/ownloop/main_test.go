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

func TestOwnLoop(t *testing.T) {
	output(t, run, `attempt-1 (generation 1): exit status 1, 0 requests answered, no valid host result
attempt-2 (generation 2): exit status 0, 5 requests answered, host says succeeded
  bootstrap -> allowed
  invoke.admit -> allowed
  effect.request -> allowed (effect-1, receipt receipt-effect-1, redelivery false)
  effect.request -> allowed (effect-2, receipt receipt-effect-2, redelivery false)
  result.publish -> allowed
result accepted from generation 2: {"receipts":["receipt-effect-1","receipt-effect-2"],"target":"doc-1"}
evidence of generation 1: protocol_error, exit status 1, 0 exchanges
evidence of generation 2: succeeded, exit status 0, 5 exchanges
`)
}
