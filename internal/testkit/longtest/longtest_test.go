package longtest_test

import (
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
)

func TestSize(t *testing.T) {
	t.Setenv(longtest.Env, "")
	if longtest.Enabled() || longtest.Size(3, 300) != 3 {
		t.Fatalf("unset: enabled %v, size %d", longtest.Enabled(), longtest.Size(3, 300))
	}
	t.Setenv(longtest.Env, "0")
	if longtest.Enabled() {
		t.Fatal(`"0" enables the long campaigns`)
	}
	t.Setenv(longtest.Env, "1")
	if !longtest.Enabled() || longtest.Size(3, 300) != 300 {
		t.Fatalf("set: enabled %v, size %d", longtest.Enabled(), longtest.Size(3, 300))
	}
}
