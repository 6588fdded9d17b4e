package agent

import (
	"errors"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/supervise"
)

// TestEveryEndHasNextAndReason: every state other than succeeded, with or
// without an error code or detail, gets a next step and a reason.
func TestEveryEndHasNextAndReason(t *testing.T) {
	states := []launch.State{launch.StateWaitingApproval, launch.StateNeedsReconciliation, launch.StateProtocolError,
		launch.StateRefused, launch.StateInvalidRequest, launch.StateUnavailable, launch.StateTimedOut,
		launch.StateCancelled, launch.StateFailed}
	for _, s := range states {
		for _, o := range []supervise.Outcome{{OperationID: "op-1", State: s}, {OperationID: "op-1", State: s, ErrorCode: "ZEO_X"}} {
			if n := next(&o, errors.New("x")); n == "" {
				t.Errorf("%s: no next", s)
			}
			for _, detail := range []string{"", "the detail"} {
				r := reasonFor(&o, detail)
				if r == "" || (detail != "" && r != detail) || (detail == "" && o.ErrorCode != "" && !strings.Contains(r, o.ErrorCode)) {
					t.Errorf("%s %q detail %q: reason %q", s, o.ErrorCode, detail, r)
				}
			}
		}
	}
}
