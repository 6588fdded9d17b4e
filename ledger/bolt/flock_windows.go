package bolt

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// releaseFile releases the file lock bbolt took on f and closes f,
// without bbolt, after a panic inside bbolt may have left it unable to
// close (see the comment at the top of guard.go). bbolt locks the byte
// range at offset 2^64-1, length 1, with LockFileEx; this unlocks the
// same range.
func releaseFile(f *os.File) error {
	const m1 = 1<<32 - 1
	unlock := windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &windows.Overlapped{Offset: m1, OffsetHigh: m1})
	return errors.Join(unlock, f.Close())
}

// flockHolder finds no holder: Windows has no /proc/locks to name one.
func flockHolder(string) (int, bool) { return 0, false }
