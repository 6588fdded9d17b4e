package containinit

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp layer (LayerSeccomp) is a classic BPF program of our own:
// a few dozen comparisons, which a library would not make shorter.

// bpf is one instruction whose jumps may name labels, resolved by
// assemble.
type bpf struct {
	code   uint16
	k      uint32
	jt, jf string // "" is the next instruction
}

// seccomp_data offsets.
const (
	seccompNR   = 0
	seccompArch = 4
	seccompArg0 = 16 // low 32 bits on little-endian machines
)

// cloneNamespaceFlags are the clone(2) flags that create namespaces.
const cloneNamespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// seccompProgram returns the filter: a foreign architecture is killed
// (its numbers mean other calls), SeccompDenied and clone with a
// namespace flag fail with EPERM, clone3 with ENOSYS, anything else is
// allowed.
func seccompProgram() ([]unix.SockFilter, error) {
	var prog []bpf
	ld := func(off uint32) { prog = append(prog, bpf{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off}) }
	jeq := func(k uint32, jt, jf string) {
		prog = append(prog, bpf{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf})
	}
	ret := func(k uint32) { prog = append(prog, bpf{code: unix.BPF_RET | unix.BPF_K, k: k}) }

	ld(seccompArch)
	jeq(seccompAuditArch, "nr", "kill")
	labels := map[string]int{}
	labels["nr"] = len(prog)
	ld(seccompNR)
	if seccompX32Bit != 0 {
		prog = append(prog, bpf{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: seccompX32Bit, jt: "deny"})
	}
	for _, name := range SeccompDenied() {
		nr, ok := seccompNumbers[name]
		if !ok {
			continue // not a call of this architecture
		}
		jeq(nr, "deny", "")
	}
	jeq(unix.SYS_CLONE3, "enosys", "")
	jeq(unix.SYS_CLONE, "", "allow")
	ld(seccompArg0)
	prog = append(prog, bpf{code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, k: cloneNamespaceFlags, jt: "deny", jf: "allow"})
	labels["allow"] = len(prog)
	ret(unix.SECCOMP_RET_ALLOW)
	labels["deny"] = len(prog)
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	labels["enosys"] = len(prog)
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	labels["kill"] = len(prog)
	ret(unix.SECCOMP_RET_KILL_PROCESS)

	return assemble(prog, labels)
}

// assemble resolves prog's jump labels.
func assemble(prog []bpf, labels map[string]int) ([]unix.SockFilter, error) {
	out := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		out[i] = unix.SockFilter{Code: in.code, K: in.k}
		for _, j := range []struct {
			label string
			to    *uint8
		}{{in.jt, &out[i].Jt}, {in.jf, &out[i].Jf}} {
			if j.label == "" {
				continue
			}
			d, ok := labels[j.label]
			d -= i + 1
			if !ok || d < 0 || d > 255 {
				return nil, fmt.Errorf("seccomp program: jump to %s out of range", j.label)
			}
			*j.to = uint8(d)
		}
	}
	return out, nil
}

// SocketFilter returns, as the bytes of a struct sock_filter array in
// this machine's byte order, the seccomp filter a warm host of a zygote
// whose server shares its loopback installs before it runs (launch,
// zygote.py): socket(2) is allowed for AF_UNIX and AF_NETLINK, and for
// AF_INET and AF_INET6 only as SOCK_STREAM with protocol 0 or
// IPPROTO_TCP, the one protocol the child's Landlock TCP port rules
// govern; every other socket (UDP, ICMP, raw, SCTP, MPTCP, packet,
// vsock, ...) fails with EAFNOSUPPORT, and io_uring, whose socket and
// connect operations bypass seccomp, and every x32 call, with EPERM. A
// foreign architecture is killed.
func SocketFilter() ([]byte, error) {
	nr := func(name string) (uint32, error) {
		n, ok := seccompNumbers[name]
		if !ok || seccompAuditArch == 0 {
			return 0, fmt.Errorf("the socket filter: no system call %s on this architecture", name)
		}
		return n, nil
	}
	socket, err := nr("socket")
	if err != nil {
		return nil, err
	}
	var prog []bpf
	ld := func(off uint32) { prog = append(prog, bpf{code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, k: off}) }
	jeq := func(k uint32, jt, jf string) {
		prog = append(prog, bpf{code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, k: k, jt: jt, jf: jf})
	}
	ret := func(k uint32) { prog = append(prog, bpf{code: unix.BPF_RET | unix.BPF_K, k: k}) }
	labels := map[string]int{}
	ld(seccompArch)
	jeq(seccompAuditArch, "nr", "kill")
	labels["nr"] = len(prog)
	ld(seccompNR)
	if seccompX32Bit != 0 {
		// x32 calls have numbers of their own, socket's among them.
		prog = append(prog, bpf{code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, k: seccompX32Bit, jt: "deny"})
	}
	for _, name := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		n, err := nr(name)
		if err != nil {
			return nil, err
		}
		jeq(n, "deny", "")
	}
	jeq(socket, "", "allow")
	ld(seccompArg0) // the domain
	jeq(unix.AF_UNIX, "allow", "")
	jeq(unix.AF_NETLINK, "allow", "")
	jeq(unix.AF_INET, "inet", "")
	jeq(unix.AF_INET6, "inet", "noaf")
	labels["inet"] = len(prog)
	ld(seccompArg0 + 8) // the type, with its SOCK_NONBLOCK and SOCK_CLOEXEC flags
	prog = append(prog, bpf{code: unix.BPF_ALU | unix.BPF_AND | unix.BPF_K, k: 0xf})
	jeq(unix.SOCK_STREAM, "", "noaf")
	ld(seccompArg0 + 16) // the protocol
	jeq(0, "allow", "")
	jeq(unix.IPPROTO_TCP, "allow", "noaf")
	labels["allow"] = len(prog)
	ret(unix.SECCOMP_RET_ALLOW)
	labels["deny"] = len(prog)
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	labels["noaf"] = len(prog)
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT))
	labels["kill"] = len(prog)
	ret(unix.SECCOMP_RET_KILL_PROCESS)
	f, err := assemble(prog, labels)
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(f)*int(unsafe.Sizeof(f[0]))), nil
}

// installSeccomp installs the filter on the calling thread (no_new_privs
// is already set).
func installSeccomp() error {
	prog, err := seccompProgram()
	if err != nil {
		return err
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fp)), 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECCOMP): %w", err)
	}
	return nil
}

// SeccompUsable reports why the kernel cannot filter system calls.
func SeccompUsable() error {
	if seccompAuditArch == 0 {
		return errors.New("this architecture has no seccomp filter here (amd64 and arm64 only)")
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("the kernel has no seccomp (prctl(PR_GET_SECCOMP): %w)", err)
	}
	return nil
}
