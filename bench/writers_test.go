package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// runWriters runs b.N calls of fn over w goroutines, timed by b; fn gets
// the goroutine's index. A failing call fails the benchmark.
func runWriters(b *testing.B, w int, fn func(i int) error) {
	b.ReportAllocs()
	b.ResetTimer()
	rounds(b, w, b.N, fn)
	b.StopTimer()
	if b.Failed() {
		b.FailNow()
	}
}

// rounds runs n calls of fn spread over w goroutines (fn gets the
// goroutine's number) and returns the wall time they took. A failing call
// fails b and stops its goroutine.
func rounds(b *testing.B, w, n int, fn func(i int) error) time.Duration {
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range w {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := fn(i); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}
