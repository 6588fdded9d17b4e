package childproc

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSweepCloexec checks both ways of marking stray descriptors: the
// close_range call and the /proc listing older kernels get.
func TestSweepCloexec(t *testing.T) {
	for name, sweep := range map[string]func() error{
		"close_range": SweepCloexec,
		"proc":        func() error { return sweepByListing("/proc/self/fd") },
	} {
		t.Run(name, func(t *testing.T) {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0) // no O_CLOEXEC on purpose
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
				t.Fatalf("fd %d flags %#x, %v: want inheritable before the sweep", fd, flags, err)
			}
			if err := sweep(); err != nil {
				t.Fatal(err)
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil {
				t.Fatalf("fd %d after the sweep: %v (it must mark, never close)", fd, err)
			}
			if flags&unix.FD_CLOEXEC == 0 {
				t.Fatalf("fd %d is still inheritable after the sweep", fd)
			}
		})
	}
}

// TestAwaitExitLeavesTheChildUnreaped: after AwaitExit the child is a
// zombie (its pid still ours to signal), and Wait still reaps it.
func TestAwaitExitLeavesTheChildUnreaped(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exit 7")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := AwaitExit(cmd.Process); err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatalf("the child was reaped by AwaitExit: %v", err)
	}
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || len(stat) < i+3 || stat[i+2] != 'Z' {
		t.Fatalf("after AwaitExit the child is not a zombie: %s", stat)
	}
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 7 {
		t.Fatalf("Wait after AwaitExit: %v, exit %d", err, cmd.ProcessState.ExitCode())
	}
}
