package supervise_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// becomeSubreaper makes this process the reaper of its descendants'
// orphans.
func becomeSubreaper(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
}
