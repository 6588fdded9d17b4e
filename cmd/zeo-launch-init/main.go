// Command zeo-launch-init is the containment init of runtimeipc's
// launcher, for an embedding program that cannot call contain.Init first
// in its own main: install it and name it in launch.Config's
// Containment.InitPath. The launcher starts it in place of each host; it
// applies the launch's containment policy to itself and execs the host's
// interpreter (see contain.Init and doc/design.md, “Containment”). Run any
// other way it does nothing and exits with status 2.
package main

import (
	"fmt"
	"os"

	"github.com/zeoruntime/runtimeipc/internal/containinit"
)

func main() {
	containinit.Main() // does not return when started by a launcher
	fmt.Fprintln(os.Stderr, "zeo-launch-init: this program is started by runtimeipc's launcher (Containment.InitPath), never by hand")
	os.Exit(2)
}
