//go:build !linux

package launch_test

import (
	"fmt"
	"os"
)

// controllerEnv selects the controller helper of TestMain. Only the
// privilege tests set it, and they run on Linux only
// (privilege_linux_test.go).
const controllerEnv = "ZEO_LAUNCH_HELPER_CONTROLLER"

// helperController is the controller helper where there is none: it says
// so and fails.
func helperController() int {
	fmt.Fprintln(os.Stderr, controllerEnv+" is set, but the controller helper runs on Linux only")
	return 2
}
