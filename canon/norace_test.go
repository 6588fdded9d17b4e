//go:build !race

package canon_test

// raceEnabled is true when the tests run under the race detector, which
// slows the long loops several times over.
const raceEnabled = false
