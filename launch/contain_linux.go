package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/containinit"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// container is a Launcher's frozen containment: what every host gets, and
// how each launch's policy is derived (doc/design.md, “Containment”).
type container struct {
	on       contain.Layers // the layers in force
	initPath string
	abi      int // Landlock ABI version in use; 0 when no Landlock layer is on
	cfg      contain.Config
	read     []string // read-only for every host
	write    []string // read-write for every host
	limits   []policyLimit
	// warmNet says why a zygote's children cannot be kept to their own
	// egress proxy on this kernel or with these layers (nil when they
	// can: see warmNetUsable); netABI is the Landlock ABI their TCP port
	// rules are built for, and sockFilter their socket filter.
	warmNet    error
	netABI     int
	sockFilter []byte
}

// policy is what the containment init applies to itself before it execs
// the host (see contain.Init).
type policy = containinit.Policy

// policyLimit is one rlimit of a policy.
type policyLimit = containinit.Limit

// newContainer checks that every layer c keeps on is available, and
// freezes what every launch shares. It returns nil when every layer is
// off.
func newContainer(cfg *Config) (*container, error) {
	c := cfg.Containment
	on := contain.AllLayers &^ c.Off
	if on == 0 {
		return nil, nil
	}
	if on&contain.LayerNoNewPrivs == 0 && on&(contain.LayerFilesystem|contain.LayerScope|contain.LayerSeccomp) != 0 {
		return nil, fmt.Errorf("%w: Containment.Off turns off %s but keeps %s, which need it; turn those off too",
			ErrInvalidConfig, contain.LayerNoNewPrivs, on&(contain.LayerFilesystem|contain.LayerScope|contain.LayerSeccomp))
	}
	k := &container{on: on, cfg: c}
	var missing []string
	if c.InitPath != "" {
		k.initPath = c.InitPath
		if fi, err := os.Stat(c.InitPath); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			missing = append(missing, fmt.Sprintf("Containment.InitPath %s is not an executable file", c.InitPath))
		}
	} else if !containinit.Called() {
		missing = append(missing, "the containment init: this program's main (or TestMain) did not call contain.Init first; call it, or set Containment.InitPath to a program that does (cmd/zeo-launch-init)")
	} else if exe, err := os.Executable(); err != nil {
		missing = append(missing, fmt.Sprintf("the containment init: this program's path: %v", err))
	} else {
		k.initPath = exe
	}
	if on&(contain.LayerFilesystem|contain.LayerScope) != 0 {
		abi := 0
		if !c.AssumeNoLandlock {
			if v, err := ll.LandlockGetABIVersion(); err == nil {
				abi = v
			}
		}
		switch {
		case abi < 1:
			missing = append(missing, fmt.Sprintf("Landlock (layers %s): the kernel has none (Linux 5.13 or later, with landlock in the lsm= boot list); set Containment.Off |= contain.LayerFilesystem|contain.LayerScope to launch without it",
				on&(contain.LayerFilesystem|contain.LayerScope)))
		case on&contain.LayerScope != 0 && abi < 6:
			missing = append(missing, fmt.Sprintf("Landlock IPC scoping (layer scope): the kernel's Landlock ABI is %d, scoping needs 6 (Linux 6.12); set Containment.Off |= contain.LayerScope to launch without it", abi))
		}
		k.abi = min(abi, containinit.MaxLandlockABI)
	}
	if on&contain.LayerNetwork != 0 {
		if err := userNamespacesUsable(); err != nil {
			missing = append(missing, fmt.Sprintf("network namespaces (layer network): %v; set Containment.Off |= contain.LayerNetwork to launch without them", err))
		}
	}
	if on&contain.LayerSeccomp != 0 {
		if err := containinit.SeccompUsable(); err != nil {
			missing = append(missing, fmt.Sprintf("seccomp (layer seccomp): %v; set Containment.Off |= contain.LayerSeccomp to launch without it", err))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrContainmentUnavailable, strings.Join(missing, "; "))
	}
	if on&contain.LayerNetwork != 0 {
		k.netABI, k.sockFilter, k.warmNet = warmNetUsable(c, on)
	}
	k.read = baseReadPaths(cfg)
	k.write = append(slices.Clone(defaultWritePaths), c.WritePaths...)
	if on&contain.LayerLimits != 0 {
		k.limits = limitsPolicy(c.Limits)
	}
	return k, nil
}

// baseReadPaths is what every host of cfg may read: the interpreter (and
// the file it resolves to), the directories holding it and, for a
// <prefix>/bin/python layout, the prefix (a virtual environment or an
// installation); the PYTHONPATH, PYTHONHOME and VIRTUAL_ENV entries of
// the host's environment; the system paths; Containment.ReadPaths.
func baseReadPaths(cfg *Config) []string {
	var out []string
	addExe := func(p string) {
		out = append(out, p)
		d := filepath.Dir(p)
		out = append(out, d)
		if filepath.Base(d) == "bin" {
			out = append(out, filepath.Dir(d))
		}
	}
	addExe(cfg.Interpreter)
	if r, err := filepath.EvalSymlinks(cfg.Interpreter); err == nil && r != cfg.Interpreter {
		addExe(r)
	}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV":
			for _, p := range filepath.SplitList(v) {
				if filepath.IsAbs(p) {
					out = append(out, p)
				}
			}
		}
	}
	out = append(out, defaultReadPaths...)
	out = append(out, cfg.Containment.ReadPaths...)
	return dedupe(out)
}

func dedupe(ps []string) []string {
	seen := map[string]bool{}
	out := ps[:0:0]
	for _, p := range ps {
		p = filepath.Clean(p)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// limitsPolicy returns lim as the init sets them.
func limitsPolicy(lim contain.Limits) []policyLimit {
	var out []policyLimit
	add := func(res int, v int64) {
		if v >= 0 {
			out = append(out, policyLimit{Resource: res, Value: uint64(v)})
		}
	}
	add(unix.RLIMIT_NPROC, limitOr(lim.Processes, contain.DefaultLimitProcesses))
	add(unix.RLIMIT_NOFILE, limitOr(lim.OpenFiles, contain.DefaultLimitOpenFiles))
	add(unix.RLIMIT_DATA, limitOr(lim.DataBytes, contain.DefaultLimitDataBytes))
	add(unix.RLIMIT_FSIZE, limitOr(lim.FileBytes, contain.DefaultLimitFileBytes))
	if lim.CoreBytes >= 0 {
		add(unix.RLIMIT_CORE, lim.CoreBytes)
	}
	return out
}

// userNamespacesUsable reports why this process cannot create a user
// namespace, as far as the sysctls tell; the clone itself is the final
// word (an EPERM from it is reported with ErrContainmentUnavailable).
func userNamespacesUsable() error {
	if _, err := os.Lstat("/proc/self/ns/user"); errors.Is(err, os.ErrNotExist) {
		return errors.New("the kernel has no user namespaces")
	}
	if v, err := readSysctl("/proc/sys/user/max_user_namespaces"); err == nil && v == "0" {
		return errors.New("user.max_user_namespaces is 0")
	}
	if v, err := readSysctl("/proc/sys/user/max_net_namespaces"); err == nil && v == "0" {
		return errors.New("user.max_net_namespaces is 0")
	}
	if os.Geteuid() != 0 {
		if v, err := readSysctl("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && v == "0" {
			return errors.New("kernel.unprivileged_userns_clone is 0 and this process is not root")
		}
	}
	return nil
}

func readSysctl(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// ContainmentSummary says, in one line, what containment the Launcher applies to
// its hosts: the layers in force and the limits, or "none", and when a
// zygote cannot fork hosts allowed the network warm, why.
func (l *Launcher) ContainmentSummary() string {
	k := l.contain
	if k == nil {
		return "containment: none (Containment.Off is AllLayers)" + l.cgroupSummary()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "containment: %s", k.on)
	if k.abi > 0 {
		fmt.Fprintf(&b, " (Landlock ABI %d)", k.abi)
	}
	if k.on&contain.LayerLimits != 0 {
		lim := k.cfg.Limits
		fmt.Fprintf(&b, "; limits: processes %s, open files %s, data %s, file size %s, core %s",
			limitText(limitOr(lim.Processes, contain.DefaultLimitProcesses), false),
			limitText(limitOr(lim.OpenFiles, contain.DefaultLimitOpenFiles), false),
			limitText(limitOr(lim.DataBytes, contain.DefaultLimitDataBytes), true),
			limitText(limitOr(lim.FileBytes, contain.DefaultLimitFileBytes), true),
			limitText(max(lim.CoreBytes, -1), true))
	}
	if off := k.cfg.Off; off != 0 {
		fmt.Fprintf(&b, "; off: %s", off)
	}
	if k.on&contain.LayerNetwork != 0 && k.warmNet != nil {
		fmt.Fprintf(&b, "; zygotes launch hosts allowed the network cold: %v", k.warmNet)
	}
	b.WriteString(l.cgroupSummary())
	return b.String()
}

func limitText(v int64, bytes bool) string {
	switch {
	case v < 0:
		return "unchanged"
	case bytes && v >= 1<<30 && v%(1<<30) == 0:
		return strconv.FormatInt(v>>30, 10) + " GiB"
	case bytes && v >= 1<<20 && v%(1<<20) == 0:
		return strconv.FormatInt(v>>20, 10) + " MiB"
	}
	return strconv.FormatInt(v, 10)
}

// launchPolicy returns the policy of one launch: argv and env are the
// host's, dir its working directory. lc is the context it serves (nil for
// discovery and the zygote server); workspace is the directory the
// launcher created for it, or "" when its working directory is its
// workspace (an invocation) or it has none (discovery).
func (k *container) launchPolicy(path string, argv, env []string, dir string, lc *LaunchContext, workspace string) policy {
	p := policy{Path: path, Argv: argv, Env: env, ABI: k.abi,
		FS: k.on&contain.LayerFilesystem != 0, Scope: k.on&contain.LayerScope != 0,
		NoNewPrivs: k.on&contain.LayerNoNewPrivs != 0, Seccomp: k.on&contain.LayerSeccomp != 0, Limits: k.limits}
	if p.FS {
		p.Read = slices.Clone(k.read)
		p.Write = slices.Clone(k.write)
		switch {
		case workspace != "":
			p.Write = append(p.Write, workspace)
		case lc != nil:
			p.Write = append(p.Write, dir)
		default:
			p.Read = append(p.Read, dir)
		}
		if lc != nil && lc.FilesystemRead {
			p.Read = append(p.Read, k.cfg.FilesystemRead...)
		}
		if lc != nil && lc.FilesystemWrite {
			p.Write = append(p.Write, k.cfg.FilesystemWrite...)
		}
	}
	return p
}

// netns reports whether a launch serving lc gets its own network
// namespace: every launch when the network layer is on; one whose
// context allows the network also gets the egress proxy (egress).
func (k *container) netns(lc *LaunchContext) bool {
	return k.on&contain.LayerNetwork != 0
}

// warmNetUsable returns what a zygote needs to fork hosts allowed the
// network warm, or why it cannot (doc/design.md, “Containment”, “Warm
// hosts”): Landlock TCP port rules (ABI 4, Linux 6.7), no_new_privs in
// the server (the children add a Landlock layer and a seccomp filter of
// their own, which need it) and seccomp. Without them the server's
// loopback stays down and such invocations are launched cold.
func warmNetUsable(c contain.Config, on contain.Layers) (abi int, filter []byte, err error) {
	if on&contain.LayerNoNewPrivs == 0 {
		return 0, nil, fmt.Errorf("the %s layer is off, and a warm host's own Landlock layer and socket filter need it", contain.LayerNoNewPrivs)
	}
	if !c.AssumeNoLandlock {
		abi, _ = ll.LandlockGetABIVersion()
	}
	if abi < 4 {
		return 0, nil, fmt.Errorf("Landlock TCP port rules (ABI 4, Linux 6.7) are missing: the kernel's Landlock ABI is %d", max(abi, 0))
	}
	if err := containinit.SeccompUsable(); err != nil {
		return 0, nil, fmt.Errorf("a warm host's socket filter needs seccomp: %w", err)
	}
	filter, err = containinit.SocketFilter()
	if err != nil {
		return 0, nil, err
	}
	return min(abi, containinit.MaxLandlockABI), filter, nil
}

// containStart is one contained start in progress: the policy and status
// descriptors handed to the init, and the parent's end of the status
// pipe.
type containStart struct {
	k        *container
	policyFD int // descriptor number of the policy in the child
	files    []*os.File
	status   *os.File // read end
	userns   bool
	eg       *egressStart // nil without the egress proxy
	// netAdmin gives the init CAP_NET_ADMIN in its user namespace as its
	// one ambient capability: an unprivileged controller's init is not
	// root there (its uid is unmapped), and it needs the capability to
	// bring the loopback interface up; it clears it before it execs the
	// host.
	netAdmin bool
}

// containPrepare prepares a contained start of the host s describes,
// with argument vector argv and working directory dir, whose inherited
// descriptors end at firstFree: the files it returns in
// containStart.files go at the end of the command's ExtraFiles (the
// policy, then the status pipe's write end). A nil *containStart means no
// containment.
func (l *Launcher) containPrepare(s spec, argv []string, dir string, firstFree int) (*containStart, error) {
	return l.containPrepareShared(s, argv, dir, firstFree, false)
}

// containPrepareShared is containPrepare, with shared set for a zygote
// server whose loopback its children's egress listeners use
// (containinit.Policy.SharedLoopback).
func (l *Launcher) containPrepareShared(s spec, argv []string, dir string, firstFree int, shared bool) (*containStart, error) {
	k := l.contain
	if k == nil {
		return nil, nil
	}
	p := k.launchPolicy(l.cfg.Interpreter, argv, l.cfg.Env, dir, s.lc, s.workspace)
	p.SharedLoopback = shared
	eg, err := l.egressPrepare(&p, s.lc)
	if err != nil {
		return nil, err
	}
	if u := l.cfg.User; u != nil {
		p.User = &containinit.User{UID: u.UID, GID: u.GID}
	}
	if p.FS {
		p.Read = append(p.Read, s.containRead...)
		p.Write = append(p.Write, s.containWrite...)
	}
	b, err := json.Marshal(p)
	if err != nil {
		eg.close()
		return nil, fmt.Errorf("launch: encoding the containment policy: %w", err)
	}
	pf, err := sealedFile("zeo-launch-policy", b)
	if err != nil {
		eg.close()
		return nil, fmt.Errorf("launch: containment policy descriptor: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		eg.close()
		pf.Close()
		return nil, fmt.Errorf("launch: containment status pipe: %w", err)
	}
	cs := &containStart{k: k, policyFD: firstFree, files: []*os.File{pf, w}, status: r, userns: k.netns(s.lc), eg: eg, netAdmin: shared || eg != nil}
	if eg != nil {
		cs.files = append(cs.files, eg.child) // the descriptor after the status pipe
	}
	return cs, nil
}

// apply turns cmd, prepared to start the host, into the start of the
// containment init that becomes it: the init program with only the
// marker in its environment (the host's argv and environment are in the
// policy), and the namespaces.
func (cs *containStart) apply(cmd *exec.Cmd, user *contain.User) {
	cmd.Path = cs.k.initPath
	cmd.Args = []string{"zeo-launch-init"}
	cmd.Env = []string{containinit.Env + "=" + strconv.Itoa(cs.policyFD)}
	// The init switches to Config.User itself, after its exec: the init
	// program need not be executable by that user.
	cmd.SysProcAttr.Credential = nil
	if !cs.userns {
		return
	}
	a := cmd.SysProcAttr
	a.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET
	if cs.netAdmin {
		a.AmbientCaps = append(a.AmbientCaps, unix.CAP_NET_ADMIN)
	}
	if os.Geteuid() != 0 {
		// An unprivileged controller cannot write the maps: its child is
		// non-dumpable until it execs (New marks this process so), which
		// makes the child's /proc files root's. The host then runs with
		// its uid and gid unmapped: it keeps its identity outside (its
		// files, its credentials on the socket) and appears as the
		// overflow uid inside.
		return
	}
	// A root controller maps root to itself (the init switches to
	// Config.User itself, which needs the mapping and the capability
	// inside) and the host's user to itself.
	a.GidMappingsEnableSetgroups = true
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	if user != nil && user.UID != 0 {
		a.UidMappings = append(a.UidMappings, syscall.SysProcIDMap{ContainerID: int(user.UID), HostID: int(user.UID), Size: 1})
	}
	if user != nil && user.GID != 0 {
		a.GidMappings = append(a.GidMappings, syscall.SysProcIDMap{ContainerID: int(user.GID), HostID: int(user.GID), Size: 1})
	}
}

// started closes the parent's copies of the child's descriptors.
func (cs *containStart) started() {
	for _, f := range cs.files {
		f.Close()
	}
}

// close releases everything, the egress proxy included; safe after
// started.
func (cs *containStart) close() {
	cs.started()
	cs.status.Close()
	cs.eg.close()
}

// await waits until the init has execed the host (its status pipe's
// write end, close-on-exec, closes with no byte written) or has failed
// (it writes why and exits), and returns the failure. When ctx ends
// first it returns nil: the process has started, and the launcher's stop
// sequence ends it as it would end a host (the init never execs a host
// without its whole policy, so nothing uncontained can run meanwhile).
func (cs *containStart) await(ctx context.Context) error {
	defer cs.status.Close()
	_ = cs.status.SetReadDeadline(time.Now().Add(DefaultDiscoveryTimeout))
	stop := context.AfterFunc(ctx, func() { _ = cs.status.SetReadDeadline(time.Now()) })
	defer stop()
	msg, err := io.ReadAll(io.LimitReader(cs.status, 4096))
	switch {
	case len(msg) > 0:
		return fmt.Errorf("%w: the containment init refused to start the host: %s", ErrContainmentUnavailable, msg)
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("%w: waiting for the containment init: %w", ErrContainmentUnavailable, err)
	}
	return cs.eg.serve(ctx)
}

// startError wraps a start failure of a contained host: a user namespace
// the kernel refuses is a missing layer.
func (cs *containStart) startError(err error) error {
	if cs != nil && cs.userns && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC)) {
		return fmt.Errorf("%w: creating the host's user and network namespaces (layer network; set Containment.Off |= contain.LayerNetwork to launch without them): %w", ErrContainmentUnavailable, err)
	}
	return err
}
