package launch

import (
	"context"
	"net"

	"github.com/zeoruntime/runtimeipc/canon"
)

// History is the evidence a host's result is judged against, for the
// tests of the coherence rules.
type History = history

// KnownExitCode is knownExitCode, for the tests of the exit-code table.
var KnownExitCode = knownExitCode

// InvokeWithPeer is Invoke with serve standing in for the ipc.Session, for
// tests whose Runtime peer must break the protocol on purpose.
func (l *Launcher) InvokeWithPeer(ctx context.Context, inv Invocation,
	serve func(ctx context.Context, conn net.Conn, pid int, launchDigest canon.Digest) error) (*Outcome, error) {
	inv.peer = serve
	return l.invoke(ctx, inv, nil)
}

// InvokeWithPeer is Zygote.Invoke with serve standing in for the
// ipc.Session.
func (z *Zygote) InvokeWithPeer(ctx context.Context, inv Invocation,
	serve func(ctx context.Context, conn net.Conn, pid int, launchDigest canon.Digest) error) (*Outcome, error) {
	inv.peer = serve
	return z.l.invoke(ctx, inv, z)
}

// SetGroupSignals makes z signal its hosts' process groups through the
// kernel (pidfd_send_signal with PIDFD_SIGNAL_PROCESS_GROUP) or, when
// false, through the server, as on kernels before Linux 6.9.
func (z *Zygote) SetGroupSignals(kernel bool) { z.groupFlag = kernel }
