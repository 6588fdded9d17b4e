package ipc

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
)

const (
	// DefaultRPCTimeout bounds one exchange when SessionConfig.RPCTimeout is
	// zero; it matches the LaunchContext default rpc_timeout_ms of 5000.
	DefaultRPCTimeout = 5 * time.Second
	// MaxRPCTimeout is the largest exchange bound (rpc_timeout_ms ≤ 30000).
	MaxRPCTimeout = 30 * time.Second
)

// CredentialCheck says whether a Session checks the SCM_CREDENTIALS of the
// bytes it reads.
type CredentialCheck uint8

const (
	// CredentialsAuto, the zero value, checks credentials when the
	// connection is a *net.UnixConn on Linux and skips the check otherwise.
	CredentialsAuto CredentialCheck = iota
	// CredentialsRequired checks credentials and makes Serve fail with
	// ErrConfig when the connection cannot carry them.
	CredentialsRequired
	// CredentialsOff never checks credentials. Only for tests that replay
	// recorded frames from a process other than the named child.
	CredentialsOff
)

// SessionConfig configures a Session. The zero value of every optional field
// means its default; ChildPID, Binding, BootstrapID and LaunchDigest are
// required. NewSession copies the config; later changes to the caller's value
// have no effect.
type SessionConfig struct {
	// ChildPID is the host process's pid. Bootstrap's payload.pid must equal
	// it, and with the credential check on, every byte read must have been
	// sent by it. Required (> 0).
	ChildPID int
	// Binding is the AttemptBinding the child was launched with; every
	// request must carry a binding equal to it field by field, and every
	// reply carries it. Required and valid (AttemptBinding.Validate).
	Binding AttemptBinding
	// BootstrapID is the LaunchContext's bootstrap_id, which bootstrap must
	// present. Required Identifier.
	BootstrapID string
	// LaunchDigest is the Runtime's digest of the LaunchContext it sent
	// (doc/protocol.md, “What is hashed”); bootstrap's launch_digest must
	// equal it. Required.
	LaunchDigest canon.Digest
	// RPCTimeout bounds each whole exchange: reading the rest of a request
	// once its first byte has arrived, deciding and writing the reply. It
	// should equal the LaunchContext's rpc_timeout_ms. Zero means
	// DefaultRPCTimeout; otherwise it must lie in [1 ms, MaxRPCTimeout].
	RPCTimeout time.Duration
	// MaxMessageBytes is the largest request body accepted and reply body
	// sent, as in the LaunchContext. Zero means MaxMessageBytes; otherwise it
	// must lie in [MinMessageBytes, MaxMessageBytes].
	MaxMessageBytes int
	// Deadline is the attempt deadline (the LaunchContext's
	// deadline_unix_ms). No exchange may start at or after it nor run past
	// it, and waiting for the next request ends at it. The zero value means
	// no attempt deadline: only RPCTimeout bounds exchanges and only the
	// context bounds the wait between them.
	Deadline time.Time
	// Credentials selects the SCM_CREDENTIALS check; the zero value is
	// CredentialsAuto.
	Credentials CredentialCheck
	// Logger receives one debug record per exchange and one warning per
	// violation. Nil means no logging.
	Logger *slog.Logger
}

// Validate reports whether c is usable, with every problem joined in one
// error wrapping ErrConfig. NewSession runs it; callers may run it first to
// fail before launching a child.
func (c SessionConfig) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ChildPID <= 0 {
		add("ChildPID must be a positive pid, got %d", c.ChildPID)
	}
	if err := c.Binding.Validate(); err != nil {
		add("Binding: %w", err)
	}
	if !ValidIdentifier(c.BootstrapID) {
		add("BootstrapID must be 1..%d code points", MaxIdentifierRunes)
	}
	if err := c.LaunchDigest.Validate(); err != nil {
		add("LaunchDigest: %w", err)
	}
	if c.RPCTimeout != 0 && (c.RPCTimeout < time.Millisecond || c.RPCTimeout > MaxRPCTimeout) {
		add("RPCTimeout %v is outside [1ms, %v]", c.RPCTimeout, MaxRPCTimeout)
	}
	if c.MaxMessageBytes != 0 && (c.MaxMessageBytes < MinMessageBytes || c.MaxMessageBytes > MaxMessageBytes) {
		add("MaxMessageBytes %d is outside [%d, %d]", c.MaxMessageBytes, MinMessageBytes, MaxMessageBytes)
	}
	if c.Credentials > CredentialsOff {
		add("Credentials %d is not a CredentialCheck", c.Credentials)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
}
