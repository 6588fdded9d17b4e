//go:build !race

package launch_test

const raceEnabled = false
