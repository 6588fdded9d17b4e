package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// Goroutines returns a check to run when the test's work is done (defer
// it, or hand it to t.Cleanup before the cleanups that close things, which
// run first): it fails the test when the number of goroutines has not come
// back to what it is now within five seconds, and prints every stack. It
// counts the whole process, so it is for tests that do not run in parallel.
func Goroutines(t testing.TB) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left running, %d before:\n%s", n-before, before, buf[:runtime.Stack(buf, true)])
		}
	}
}
