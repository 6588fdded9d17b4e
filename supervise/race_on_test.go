//go:build race

package supervise_test

// raceEnabled reports whether the tests run with the race detector, which
// multiplies the controllers' CPU: the fleet test runs fewer operations.
const raceEnabled = true
