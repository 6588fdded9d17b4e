// Package extest runs an example in its test: the test binary is also the
// example's simulated host, and the example's output is compared with the
// one expected.
package extest

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/examples/internal/simhost"
)

// Main is the examples' TestMain: the test binary is the host they launch.
func Main(m *testing.M) {
	simhost.MainIf()
	os.Exit(m.Run())
}

// Output runs run and compares what it writes with want.
func Output(t *testing.T, run func(context.Context, io.Writer) error, want string) {
	t.Helper()
	var out strings.Builder
	if err := run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
