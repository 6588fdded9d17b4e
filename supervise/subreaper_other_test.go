//go:build !linux

package supervise_test

import "testing"

// becomeSubreaper skips the test: only Linux lets a process reap its
// descendants' orphans (PR_SET_CHILD_SUBREAPER), which the test needs to
// account for the killed controller's host.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	t.Skip("needs PR_SET_CHILD_SUBREAPER, which only Linux has")
}
