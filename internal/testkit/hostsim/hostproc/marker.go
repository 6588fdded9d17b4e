package hostproc

import "os"

// MainIf turns the process into the simulated host when its first argument
// is marker: it runs Main with the arguments after the marker and exits
// with its code. Otherwise it returns at once. An executable that launches
// itself as the host (zeoctl, the examples, tests) calls it first in main,
// and in TestMain when its tests re-execute the test binary, with the
// marker it passes in launch.Config.Args.
func MainIf(marker string) {
	if len(os.Args) > 1 && os.Args[1] == marker {
		os.Exit(Main(os.Args[2:]))
	}
}
