package launch

import (
	"context"
	"os"
	"os/exec"

	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// Containment layers are Linux's (Landlock, namespaces, seccomp): on
// darwin a Launcher applies none, whatever Containment says, and ContainmentSummary
// says so (doc/design.md, “Containment”).

type container struct{}

func newContainer(*Config) (*container, error) { return nil, nil }

// ContainmentSummary says, in one line, what containment the Launcher applies to
// its hosts: none on darwin.
func (l *Launcher) ContainmentSummary() string {
	return "containment: none (Linux only)" + l.cgroupSummary()
}

type containStart struct{ files []*os.File }

func (l *Launcher) containPrepare(spec, []string, string, int) (*containStart, error) {
	return nil, nil
}
func (cs *containStart) apply(*exec.Cmd, *contain.User) {}
func (cs *containStart) started()                       {}
func (cs *containStart) close()                         {}
func (cs *containStart) await(context.Context) error    { return nil }
func (cs *containStart) startError(err error) error     { return err }
