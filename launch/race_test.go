//go:build race

package launch_test

// raceEnabled: the race detector slows each launch several times over.
const raceEnabled = true
