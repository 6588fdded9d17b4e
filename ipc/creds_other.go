//go:build !linux

package ipc

import (
	"fmt"
	"io"
	"net"
)

// newSource returns the reader a Session reads requests from. Outside Linux
// SCM_CREDENTIALS is not available: CredentialsAuto skips the check and
// CredentialsRequired refuses to serve.
func newSource(conn net.Conn, mode CredentialCheck, pid int) (io.Reader, error) {
	return conn, nil
}

// prepareConn refuses CredentialsRequired outside Linux.
func prepareConn(conn net.Conn, mode CredentialCheck) error {
	if mode == CredentialsRequired {
		return fmt.Errorf("%w: SCM_CREDENTIALS checks need Linux", ErrConfig)
	}
	return nil
}

// EnablePassCred does nothing outside Linux, where SCM_CREDENTIALS does not
// exist; it exists so that callers build on every platform.
func EnablePassCred(c *net.UnixConn) error { return nil }
