package process

import (
	"syscall"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// intoCgroup makes the process start inside g (clone3 with
// CLONE_INTO_CGROUP): nothing it runs is ever outside it.
func intoCgroup(a *syscall.SysProcAttr, g *cgroup.Group) {
	a.UseCgroupFD, a.CgroupFD = true, g.FD()
}
