package launch

import (
	"fmt"
	"os"
	"syscall"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// intoCgroup makes the process start inside g (clone3 with
// CLONE_INTO_CGROUP), so that nothing it runs is ever outside it; nil g
// changes nothing.
func intoCgroup(a *syscall.SysProcAttr, g *cgroup.Group) {
	if g != nil {
		a.UseCgroupFD, a.CgroupFD = true, g.FD()
	}
}

// warmCgroup makes the cgroup of one warm host and opens its
// cgroup.procs for the forked child, which moves itself in before the
// host runs (zygote.py, _enter_cgroup); nil, nil without the layer.
func (l *Launcher) warmCgroup() (*cgroup.Group, *os.File, error) {
	g, err := l.newCgroup("warm-host")
	if g == nil || err != nil {
		return nil, nil, err
	}
	f, err := g.OpenProcs()
	if err != nil {
		l.endCgroup(g)
		return nil, nil, fmt.Errorf("launch: the warm host's cgroup: %w", err)
	}
	return g, f, nil
}
