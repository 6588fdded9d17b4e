package launch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/containinit"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// egressProxyVars are the variables a host allowed the network gets, all
// naming its egress proxy; the NO_PROXY forms are removed.
var egressProxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// egress reports whether a launch serving lc gets the egress proxy: its
// context allows the network, and the network layer is on (the host is
// then in its own network namespace like every other, with the proxy as
// its one way out).
func (k *container) egress(lc *LaunchContext) bool {
	return k.on&contain.LayerNetwork != 0 && lc != nil && lc.NetworkAllowed
}

// egressEnv returns env with every proxy variable replaced by the egress
// proxy's address and NO_PROXY removed.
func egressEnv(env []string) []string {
	proxy := "http://" + net.JoinHostPort(containinit.EgressListenAddr, strconv.Itoa(EgressPort))
	out := withoutProxyEnv(env)
	for _, k := range egressProxyVars {
		out = append(out, k+"="+proxy)
	}
	return out
}

// withoutProxyEnv returns env without its proxy variables and NO_PROXY,
// with room for egressProxyVars.
func withoutProxyEnv(env []string) []string {
	out := make([]string, 0, len(env)+len(egressProxyVars))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// egressSocket returns the launcher's and the init's ends of the socket
// the init hands the egress listener over on.
func egressSocket() (parent, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("launch: egress socket: %w", os.NewSyscallError("socketpair", err))
	}
	return os.NewFile(uintptr(fds[0]), "zeo-egress"), os.NewFile(uintptr(fds[1]), "zeo-egress-init"), nil
}

// receiveEgressListener takes the listener the init sent on sock before
// it execed the host (so it is queued by now, or was never sent).
func receiveEgressListener(sock *os.File) (net.Listener, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) {
			return nil, errors.New("the init sent no egress listener")
		}
		return nil, fmt.Errorf("receiving the egress listener: %w", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || n != 1 || len(msgs) != 1 {
		return nil, fmt.Errorf("the init's egress message is malformed (%d bytes, %d control messages, %v)", n, len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("the init's egress message carries %d descriptors (%v)", len(fds), err)
	}
	f := os.NewFile(uintptr(fds[0]), "zeo-egress-listener")
	defer f.Close()
	ln, err := net.FileListener(f) // dups
	if err != nil {
		return nil, fmt.Errorf("wrapping the egress listener: %w", err)
	}
	return ln, nil
}

// egressStart is the egress side of one contained start: the socket the
// init hands the listener over on, then the proxy serving it until the
// host ends (containStart.close).
type egressStart struct {
	log    *slog.Logger
	hosts  []string
	parent *os.File // the launcher's end
	child  *os.File // the init's end, passed after the status pipe
	proxy  *egressProxy
}

// egressPrepare gives p, the policy of a launch serving lc, the egress
// proxy when lc allows the network: the listener's port and the proxy
// variables. It returns nil when the launch gets none.
func (l *Launcher) egressPrepare(p *policy, lc *LaunchContext) (*egressStart, error) {
	if !l.contain.egress(lc) {
		return nil, nil
	}
	parent, child, err := egressSocket()
	if err != nil {
		return nil, err
	}
	p.EgressPort = EgressPort
	p.Env = egressEnv(p.Env)
	log := l.log.With("attempt", lc.Attempt.AttemptID, "distribution", lc.Provider.Distribution)
	return &egressStart{log: log, hosts: slices.Clone(lc.NetworkHosts), parent: parent, child: child}, nil
}

// serve starts the proxy on the listener the init sent. When ctx ended
// before the init execed the host there may be none: the host then runs
// without a way out until the launcher stops it.
func (e *egressStart) serve(ctx context.Context) error {
	if e == nil {
		return nil
	}
	ln, err := receiveEgressListener(e.parent)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: the egress proxy (layer network): %w", ErrContainmentUnavailable, err)
	}
	e.proxy = startEgress(ln, e.hosts, e.log, net.DefaultResolver)
	return nil
}

// close stops the proxy and releases the socket; safe on nil and twice.
func (e *egressStart) close() {
	if e == nil {
		return
	}
	e.proxy.close()
	e.proxy = nil
	e.parent.Close()
	e.child.Close()
}

// egressListenerPort checks that f, which a zygote's server bound for a
// child allowed the network, is a listening TCP socket on
// EgressListenAddr (in the server's network namespace), and returns its
// port.
func egressListenerPort(f *os.File) (int, error) {
	fd := int(f.Fd())
	for _, o := range []struct {
		name      string
		opt, want int
	}{{"SO_TYPE", unix.SO_TYPE, unix.SOCK_STREAM}, {"SO_PROTOCOL", unix.SO_PROTOCOL, unix.IPPROTO_TCP},
		{"SO_ACCEPTCONN", unix.SO_ACCEPTCONN, 1}} {
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt)
		if err != nil {
			return 0, fmt.Errorf("not a socket: %w", os.NewSyscallError("getsockopt", err))
		}
		if v != o.want {
			return 0, fmt.Errorf("not a listening TCP socket (%s %d)", o.name, v)
		}
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0, os.NewSyscallError("getsockname", err)
	}
	in, ok := sa.(*unix.SockaddrInet4)
	if !ok || in.Addr != [4]byte{127, 0, 0, 1} || in.Port == 0 {
		return 0, fmt.Errorf("bound to %+v, not to %s", sa, containinit.EgressListenAddr)
	}
	return in.Port, nil
}

// childEgress starts the egress proxy of the host of s, a warm child,
// on the listener its server bound (c.egress, which the proxy then
// owns); the caller closes the proxy once the host has ended.
func (z *Zygote) childEgress(s spec, c *zchild) (*egressProxy, error) {
	f := c.egress
	c.egress = nil
	defer f.Close()
	ln, err := net.FileListener(f) // dups
	if err != nil {
		return nil, fmt.Errorf("%w: the warm host's egress listener (layer network): %w", ErrContainmentUnavailable, err)
	}
	log := z.l.log.With("attempt", s.lc.Attempt.AttemptID, "distribution", s.lc.Provider.Distribution)
	return startEgress(ln, slices.Clone(s.lc.NetworkHosts), log, net.DefaultResolver), nil
}
