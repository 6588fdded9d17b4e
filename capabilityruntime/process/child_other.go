//go:build unix && !linux

package process

import (
	"syscall"

	"github.com/zeoruntime/runtimeipc/internal/cgroup"
)

// intoCgroup does nothing: cgroups exist on Linux only, and a Parent is
// never opened elsewhere.
func intoCgroup(*syscall.SysProcAttr, *cgroup.Group) {}
