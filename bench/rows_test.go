package bench

import (
	"testing"
	"time"
)

// benchRows runs each named row, in order, as its own benchmark.
func benchRows(b *testing.B, rows map[string]func(), order ...string) {
	for _, name := range order {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rows[name]()
			}
		})
	}
}

// benchPaired runs first and second alternately in one benchmark, the
// order swapped every iteration so that a drifting load reaches both
// alike, and reports each one's time per op (as label-ns/op) and their
// ratio (first ÷ second) as the metric ratio.
func benchPaired(b *testing.B, name string, first, second func(), firstLabel, secondLabel, ratio string) {
	b.Run(name, func(b *testing.B) {
		var total [2]time.Duration
		run := func(i int, row func()) {
			t0 := time.Now()
			row()
			total[i] += time.Since(t0)
		}
		odd := false
		for b.Loop() {
			if odd {
				run(1, second)
				run(0, first)
			} else {
				run(0, first)
				run(1, second)
			}
			odd = !odd
		}
		b.ReportMetric(float64(total[0].Nanoseconds())/float64(b.N), firstLabel+"-ns/op")
		b.ReportMetric(float64(total[1].Nanoseconds())/float64(b.N), secondLabel+"-ns/op")
		b.ReportMetric(float64(total[0])/float64(total[1]), ratio)
	})
}
