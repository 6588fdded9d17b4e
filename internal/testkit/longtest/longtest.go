// Package longtest sizes the module's long test campaigns (thousands of
// launches, crash and corruption campaigns, long random sweeps). By default
// they run small, so that the README's `go test ./...` is quick and still
// exercises every guarantee at least once; with ZEO_LONG_TESTS=1 in the
// environment, as .ci/run sets it, they run at full size. It is the one
// switch for that, for tests only.
package longtest

import "os"

// Env is the environment variable that turns the full-size campaigns on
// when it is "1".
const Env = "ZEO_LONG_TESTS"

// Enabled reports whether the long campaigns run at full size.
func Enabled() bool { return os.Getenv(Env) == "1" }

// Size returns full when the long campaigns are enabled and small
// otherwise: the number of iterations, files or operations a campaign runs.
func Size(small, full int) int {
	if Enabled() {
		return full
	}
	return small
}
