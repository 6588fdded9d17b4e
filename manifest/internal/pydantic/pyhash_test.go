package pydantic

import (
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"
)

// The fast hashes of ints and floats are CPython's exact-rational hash,
// which hashRat computes with big arithmetic.
func TestHashFastPaths(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.OneOf(rapid.Int64(), rapid.Int64Range(-3, 3), rapid.Int64Range(pyHashModulus-3, pyHashModulus+3)).Draw(t, "n")
		if got, want := hashInt(n), hashRat(new(big.Rat).SetInt64(n)); got != want {
			t.Fatalf("hashInt(%d) = %d, want %d", n, int64(got), int64(want))
		}
		f := rapid.OneOf(rapid.Float64(), rapid.Float64Range(-10, 10), rapid.Float64Range(-1e-300, 1e-300)).Draw(t, "f")
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return
		}
		if got, want := hashFloat(f), hashRat(new(big.Rat).SetFloat64(f)); got != want {
			t.Fatalf("hashFloat(%v) = %d, want %d", f, int64(got), int64(want))
		}
	})
	// Values CPython prints for hash(x).
	for _, tt := range []struct {
		f    float64
		want int64
	}{{0.5, 1152921504606846976}, {-0.5, -1152921504606846976}, {1.5, 1152921504606846977}, {1e300, 1224995262755759164}, {-1, -2}, {2.5e-300, 52920977297143526}} {
		if got := int64(hashFloat(tt.f)); got != tt.want {
			t.Errorf("hashFloat(%v) = %d, CPython %d", tt.f, got, tt.want)
		}
	}
}
