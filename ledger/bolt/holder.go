package bolt

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockedBy says who holds the lock of the file at path, for the error of
// an Open that timed out waiting for it. Linux lists flock holders in
// /proc/locks by device and inode, with the pid of the process that took
// the lock (a child that inherited the descriptor holds it too, so the pid
// is a hint, not a proof); without it the sentence names no pid.
func lockedBy(path string, readOnly bool) string {
	pid := ""
	if p, ok := flockHolder(path); ok {
		pid = fmt.Sprintf(" (pid %d, per /proc/locks)", p)
	}
	if readOnly {
		return "the file is held by a running controller or another read-write open" + pid +
			", and a read-only open shares it only with other readers: stop that process to inspect the file, or use ledger/postgres for many readers beside a controller"
	}
	return "another owner holds the file lock" + pid + "; stop that owner or use another file"
}

// flockHolder returns the pid /proc/locks gives for a FLOCK on the file
// at path: matched by inode and device when one line matches both, else
// by inode alone when exactly one line has it.
func flockHolder(path string) (int, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, false
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	d := uint64(st.Dev) // uint64 on Linux, int32 elsewhere
	dev := fmt.Sprintf("%02x:%02x:%d", (d>>8)&0xfff|(d>>32)&^0xfff, d&0xff|(d>>12)&^0xff, st.Ino)
	ino := ":" + strconv.FormatUint(st.Ino, 10)
	exact, byInode, inodeLines := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a blocked
		// waiter's line has "->" after the number.
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			continue
		}
		switch id := fields[5]; {
		case id == dev:
			exact = pid
		case strings.HasSuffix(id, ino):
			byInode = pid
			inodeLines++
		}
	}
	switch {
	case exact != 0:
		return exact, true
	case inodeLines == 1:
		return byInode, true
	}
	return 0, false
}
