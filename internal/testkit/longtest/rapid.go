package longtest

import (
	"flag"
	"strconv"
)

// RapidChecksUnderRace is how many cases each rapid property test of a
// package calling ShrinkRapidUnderRace tries under the race detector by
// default (rapid's own default is 100).
const RapidChecksUnderRace = 25

// ShrinkRapidUnderRace, called from a TestMain before m.Run, makes that
// package's rapid property tests try RapidChecksUnderRace cases when the
// tests run under the race detector without ZEO_LONG_TESTS=1 and
// -rapid.checks was not given: the detector sees the same code paths in
// fewer random cases, each of which it slows several times over. CI runs
// the same tests again at rapid's full count without the detector.
func ShrinkRapidUnderRace() {
	if !raceEnabled || Enabled() {
		return
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if f := flag.Lookup("rapid.checks"); f != nil && !given {
		f.Value.Set(strconv.Itoa(RapidChecksUnderRace))
	}
}
