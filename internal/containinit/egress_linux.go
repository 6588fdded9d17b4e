package containinit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// EgressListenAddr is the loopback address, inside a host's own network
// namespace, where the init binds the egress listener; the host's proxy
// variables name it with Policy.EgressPort.
const EgressListenAddr = "127.0.0.1"

// egressListener brings the loopback interface of this process's network
// namespace up, binds a TCP listener on EgressListenAddr:port in it and
// sends the listener to the launcher over the socket sock (one byte, the
// descriptor in SCM_RIGHTS); the launcher's egress proxy serves it. Both
// descriptors are closed here. It needs CAP_NET_ADMIN in the namespace's
// user namespace, which the launcher raised as the init's one ambient
// capability; dropAmbient clears it before the exec.
func egressListener(sock, port int) error {
	defer unix.Close(sock)
	if err := loopbackUp(); err != nil {
		return err
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress: listener socket: %w", err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("egress: binding %s:%d: %w", EgressListenAddr, port, err)
	}
	if err := unix.Listen(ln, 128); err != nil {
		return fmt.Errorf("egress: listen: %w", err)
	}
	if err := unix.Sendmsg(sock, []byte{'L'}, unix.UnixRights(ln), nil, 0); err != nil {
		return fmt.Errorf("egress: handing the listener to the launcher: %w", err)
	}
	return nil
}

// loopbackUp brings the loopback interface of this process's network
// namespace up (CAP_NET_ADMIN in its user namespace).
func loopbackUp() error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("egress: socket for the loopback interface: %w", err)
	}
	defer unix.Close(s)
	ifr, err := unix.NewIfreq("lo")
	if err == nil {
		err = unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr)
	}
	if err == nil {
		ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
		err = unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr)
	}
	if err != nil {
		return fmt.Errorf("egress: bringing the loopback interface up: %w", err)
	}
	return nil
}

// sharedLoopback prepares a zygote server's network namespace, which its
// children share, for warm hosts allowed the network: the loopback up
// (each child's egress listener is bound there), and CAP_NET_ADMIN and
// CAP_NET_RAW out of the bounding set when this init may drop them (it
// is root in its user namespace, a root controller's server: it and its
// children would otherwise hold them after the exec, and could take the
// loopback down, rewrite the namespace's packet filter to send one
// child's connections to another's proxy, or sniff it). An init that is
// not root there loses every capability at the exec anyway, its ambient
// one being cleared by dropAmbient.
func sharedLoopback() error {
	if err := loopbackUp(); err != nil {
		return err
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("egress: capget: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) == 0 {
		return nil
	}
	for _, c := range []uintptr{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW} {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			return fmt.Errorf("egress: dropping capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// dropAmbient clears this thread's ambient capabilities, and the
// inheritable set raising one required, so that the exec (from this
// thread) gives a host that is not root in its user namespace no
// capability at all, whatever file capabilities the programs it runs
// carry.
func dropAmbient() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("egress: clearing the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("egress: capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("egress: clearing the inheritable capabilities: %w", err)
	}
	return nil
}
