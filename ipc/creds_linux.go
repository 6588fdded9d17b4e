//go:build linux

package ipc

import (
	"fmt"
	"io"
	"net"

	"golang.org/x/sys/unix"
)

// credReader reads a *net.UnixConn with SO_PASSCRED on and checks the
// SCM_CREDENTIALS of every read that returns data. On a SOCK_STREAM socket
// with SO_PASSCRED set the kernel never merges bytes sent by different
// processes into one read, so checking each read checks every byte.
type credReader struct {
	c   *net.UnixConn
	pid int32
	oob []byte
}

// oobSpace holds one SCM_CREDENTIALS message and room to notice (and
// close) a few SCM_RIGHTS descriptors a foreign writer might push.
var oobSpace = unix.CmsgSpace(unix.SizeofUcred) + unix.CmsgSpace(4*16)

// newSource returns the reader a Session reads requests from.
// SO_PASSCRED is already on (NewSession turned it on).
func newSource(conn net.Conn, mode CredentialCheck, pid int) (io.Reader, error) {
	uc, ok := conn.(*net.UnixConn)
	if mode == CredentialsOff || !ok {
		return conn, nil
	}
	return &credReader{c: uc, pid: int32(pid), oob: make([]byte, oobSpace)}, nil
}

// prepareConn turns SO_PASSCRED on for a Session that checks credentials.
func prepareConn(conn net.Conn, mode CredentialCheck) error {
	if mode == CredentialsOff {
		return nil
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		if mode == CredentialsRequired {
			return fmt.Errorf("%w: credential check required but the connection is a %T, not a *net.UnixConn", ErrConfig, conn)
		}
		return nil
	}
	if err := EnablePassCred(uc); err != nil {
		return fmt.Errorf("%w: cannot enable SO_PASSCRED: %w", ErrConfig, err)
	}
	return nil
}

// EnablePassCred turns SO_PASSCRED on for the Runtime's end of the
// socketpair, without putting the descriptor in blocking mode. The kernel
// attaches the sender's credentials to bytes only if SO_PASSCRED was on
// when they were sent: call it before starting the child (NewSession calls
// it too, which is too late if the child may already have written). Bytes
// sent earlier arrive with pid 0 and are refused with ErrPeerCredentials.
func EnablePassCred(c *net.UnixConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("setsockopt SO_PASSCRED: %w", serr)
	}
	return nil
}

func (r *credReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, oobn, flags, _, err := r.c.ReadMsgUnix(p, r.oob)
	if cerr := r.check(max(n, 0), r.oob[:max(oobn, 0)], flags); cerr != nil {
		return 0, cerr
	}
	if n <= 0 {
		if err == nil {
			err = io.EOF // orderly shutdown of the stream
		}
		return 0, err
	}
	return n, err
}

// check verifies the ancillary data of one read. It closes any descriptor
// that arrived, so a foreign writer cannot leak files into the Runtime.
func (r *credReader) check(n int, oob []byte, flags int) error {
	msgs, perr := unix.ParseSocketControlMessage(oob)
	var (
		havePID bool
		pid     int32
		rights  int
	)
	for i := range msgs {
		m := &msgs[i]
		if m.Header.Level != unix.SOL_SOCKET {
			continue
		}
		switch m.Header.Type {
		case unix.SCM_CREDENTIALS:
			if uc, err := unix.ParseUnixCredentials(m); err == nil {
				havePID, pid = true, uc.Pid
			}
		case unix.SCM_RIGHTS:
			if fds, err := unix.ParseUnixRights(m); err == nil {
				for _, fd := range fds {
					_ = unix.Close(fd)
				}
				rights += len(fds)
			}
		}
	}
	switch {
	case rights > 0 || flags&unix.MSG_CTRUNC != 0:
		return fmt.Errorf("%w: %d bytes came with file descriptors (closed), which the protocol never sends", ErrPeerCredentials, n)
	case n == 0:
		return nil
	case perr != nil:
		return fmt.Errorf("%w: unreadable ancillary data: %v", ErrPeerCredentials, perr)
	case !havePID:
		return fmt.Errorf("%w: %d bytes arrived without SCM_CREDENTIALS", ErrPeerCredentials, n)
	case pid == 0:
		return fmt.Errorf("%w: %d bytes came with pid 0: sent before SO_PASSCRED was enabled, or by a process outside this pid namespace", ErrPeerCredentials, n)
	case pid != r.pid:
		return fmt.Errorf("%w: %d bytes were sent by pid %d, the child is pid %d", ErrPeerCredentials, n, pid, r.pid)
	}
	return nil
}
