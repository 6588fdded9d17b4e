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
	self := strconv.Itoa(os.Getpid())
	return processes(t, func(f []string) bool { return len(f) > 1 && f[1] == self })
}

// GroupMembers returns the pids of the live (not zombie) processes in
// process group pgid. It skips the test where /proc is missing.
func GroupMembers(t testing.TB, pgid int) []int {
	t.Helper()
	g := strconv.Itoa(pgid)
	return processes(t, func(f []string) bool { return len(f) > 2 && f[2] == g && f[0] != "Z" })
}

// processes returns the pids of the processes whose /proc/PID/stat
// fields after the command name (state ppid pgrp ...) match.
func processes(t testing.TB, match func(fields []string) bool) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("listing processes: %v", err)
	}
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
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		if match(strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))) {
			out = append(out, pid)
		}
	}
	return out
}
