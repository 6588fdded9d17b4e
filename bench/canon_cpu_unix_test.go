//go:build unix

package bench

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// processCPU returns the CPU time (user + system) the process has used so
// far, all threads included (the garbage collector's too). On a shared
// machine it is steadier than wall time, which also counts waiting for a
// core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU returns the CPU time (user + system) of this process's
// children that have been reaped.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// voluntarySwitches returns how many times a thread of this process has
// gone to sleep waiting (futex, epoll, nanosleep, a blocking syscall).
func voluntarySwitches() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Nvcsw
}

// threadCPU returns the CPU time the calling OS thread has used; with
// runtime.LockOSThread around a call it is the call's own CPU time,
// whatever else waits for a core.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
