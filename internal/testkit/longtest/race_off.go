//go:build !race

package longtest

// raceEnabled: the binary was built with the race detector.
const raceEnabled = false
