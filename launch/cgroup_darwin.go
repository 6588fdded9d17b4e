package launch

import (
	"syscall"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// intoCgroup does nothing: darwin has no cgroups, and a Launcher there
// never has a cgroup parent.
func intoCgroup(*syscall.SysProcAttr, *cgroup.Group) {}
