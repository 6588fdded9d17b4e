//go:build unix

package bolt

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseFile releases the file lock bbolt took on f and closes f,
// without bbolt, after a panic inside bbolt may have left it unable to
// close (see the comment at the top of guard.go). The lock is released
// explicitly: bbolt's memory map keeps the open file description, and with
// it the lock, alive after the descriptor is closed.
func releaseFile(f *os.File) error {
	return errors.Join(syscall.Flock(int(f.Fd()), syscall.LOCK_UN), f.Close())
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
