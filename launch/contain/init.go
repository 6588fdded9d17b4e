package contain

import "github.com/zeoruntime/runtimeipc/internal/containinit"

// Init must be the first statement of main (or TestMain) in every program
// that launches contained hosts without setting Config.InitPath
// (doc/design.md, “Containment”). A contained host is started as this very
// program re-executed, and Init is where it takes over: when the process
// was started as a containment init, Init applies the launch's policy to
// itself — resource limits, launch.Config.User, no_new_privs, the Landlock
// ruleset and scopes, the seccomp filter; the namespaces are already in
// place — and then replaces itself with the host's interpreter. It never
// returns then: if it cannot apply the whole policy it reports why to the
// launcher and exits with status 125 without running the host.
//
// In any other process Init returns at once, having recorded that this
// program calls it; launch.New refuses to contain hosts without that record
// (launch.ErrContainmentUnavailable), since re-executing a program that does not
// call Init would run its main instead.
//
// Nothing before Init in main may have side effects: package init
// functions run in the containment init too, before Init, and their cost
// is paid by every launch (cmd/zeo-launch-init, set as InitPath, pays
// almost none).
func Init() {
	containinit.Main()
}
