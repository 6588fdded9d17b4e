package testvectors_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
)

// TestFiles: the embedded folder holds what the packages' tests read.
func TestFiles(t *testing.T) {
	want := []string{"s01_echo_success", "s02_two_effects_success", "s04_effect_needs_reconciliation", "s08c_list_limit1_offset0"}
	if d := cmp.Diff(want, testvectors.RealHostNames()); d != "" {
		t.Errorf("real-host transcripts (-want +got):\n%s", d)
	}
	reqs, reps := testvectors.Frames(t)
	// The worked example's three exchanges and its effect request, and
	// the transcripts' 3 + 5 + 3 + 0 exchanges.
	if len(reqs) != 3+1+11 || len(reps) != 3+11 {
		t.Errorf("Frames: %d requests, %d replies", len(reqs), len(reps))
	}
	for i, b := range append(reqs, reps...) {
		if len(b) == 0 {
			t.Errorf("frame %d is empty", i)
		}
	}
	for _, name := range []string{"host-result.schema.json", "provider-binding.schema.json", testvectors.InlineFile} {
		if len(testvectors.File(t, name)) == 0 {
			t.Errorf("%s is empty", name)
		}
	}
}
