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
func newSource(conn net.Conn, mode CredentialCheck, pid int) (io.Reader, error) {
	if mode == CredentialsOff {
		return conn, nil
	}
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		if mode == CredentialsRequired {
			return nil, fmt.Errorf("%w: credential check required but the connection is a %T, not a *net.UnixConn", ErrConfig, conn)
		}
		return conn, nil
	}
	if err := setPassCred(uc); err != nil {
		return nil, &ViolationError{Rule: ErrIO, Detail: "cannot enable SO_PASSCRED", Err: err}
	}
	return &credReader{c: uc, pid: int32(pid), oob: make([]byte, oobSpace)}, nil
}

// setPassCred turns SO_PASSCRED on, without putting the descriptor in
// blocking mode (no Fd()).
func setPassCred(uc *net.UnixConn) error {
	rc, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return err
	}
	return serr
}

func (r *credReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, oobn, flags, _, err := r.c.ReadMsgUnix(p, r.oob)
	if n == 0 && oobn == 0 && err == nil {
		return 0, io.EOF // orderly shutdown of the stream
	}
	if cerr := r.check(n, r.oob[:oobn], flags); cerr != nil {
		return 0, cerr
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
	case pid != r.pid:
		return fmt.Errorf("%w: %d bytes were sent by pid %d, the child is pid %d", ErrPeerCredentials, n, pid, r.pid)
	}
	return nil
}
