package longtest

import (
	"flag"
	"strconv"
)

// RapidChecks is how many cases each rapid property test of a package
// calling ShrinkRapid tries by default (rapid's own default is 100).
const RapidChecks = 25

// ShrinkRapid, called from a TestMain before m.Run, makes that package's
// rapid property tests try RapidChecks cases unless ZEO_LONG_TESTS=1 is
// set or -rapid.checks was given: `go test ./...` sees every property on
// a quarter of rapid's cases (and the race detector, which slows each case
// several times over, sees the same code paths), and CI runs the same
// tests again at rapid's full count.
func ShrinkRapid() {
	if !Enabled() {
		shrinkRapid()
	}
}

// ShrinkRapidAlways is ShrinkRapid for a package whose property tests wait
// on a server for every step: RapidChecks cases even with
// ZEO_LONG_TESTS=1, and more only when -rapid.checks is given (.ci/slow
// gives 100).
func ShrinkRapidAlways() { shrinkRapid() }

func shrinkRapid() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if f := flag.Lookup("rapid.checks"); f != nil && !given {
		f.Value.Set(strconv.Itoa(RapidChecks))
	}
}
