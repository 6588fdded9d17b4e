// Package leaktest counts what a test of real processes and sockets may
// leak: this process's open descriptors and its child processes, read from
// Linux's /proc. It is for tests only.
package leaktest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// OpenFDs returns how many descriptors this process has open. It skips the
// test where /proc is missing.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting descriptors: %v", err)
	}
	return len(ents) - 1 // the directory being read
}

// Children returns the pids of the processes whose parent is this process,
// zombies included. It skips the test where /proc is missing.
func Children(t testing.TB) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("listing processes: %v", err)
	}
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == self {
				out = append(out, pid)
			}
		}
	}
	return out
}
