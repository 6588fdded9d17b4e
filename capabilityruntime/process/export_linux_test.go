//go:build linux

package process_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// clearCloexec makes fd inheritable, as a descriptor a careless embedder (or
// its parent) opened would be.
func clearCloexec(fd uintptr) error {
	flags, err := unix.FcntlInt(fd, unix.F_GETFD, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(fd, unix.F_SETFD, flags&^unix.FD_CLOEXEC)
	return err
}

// inheritable lists what this process's descriptors from 3 up without
// close-on-exec point at, in ownDescriptors's form.
func inheritable(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed since the listing (the listing's own), or not inherited
		}
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fds = append(fds, e.Name()+" "+target)
	}
	return ownDescriptors(fds)
}
