//go:build unix

// Package sockettest gives tests the socket the protocol runs on: a fresh
// connected AF_UNIX SOCK_STREAM socketpair, both ends as *net.UnixConn.
package sockettest

import (
	"net"
	"os"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/childproc"
)

// Pair returns both ends of a new socketpair, closed when the test ends.
// The first end plays the Runtime, the second the host.
func Pair(tb testing.TB) (runtimeEnd, hostEnd *net.UnixConn) {
	tb.Helper()
	fds, err := childproc.Socketpair()
	if err != nil {
		tb.Fatal(err)
	}
	conv := func(fd int, name string) *net.UnixConn {
		f := os.NewFile(uintptr(fd), name)
		defer f.Close() // FileConn holds its own duplicate
		c, err := net.FileConn(f)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conv(fds[0], "runtime"), conv(fds[1], "host")
}
