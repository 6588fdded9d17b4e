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
	if mode == CredentialsRequired {
		return nil, fmt.Errorf("%w: SCM_CREDENTIALS checks need Linux", ErrConfig)
	}
	return conn, nil
}
