package launch

import (
	"fmt"
	"os"
	"slices"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/zeoruntime/runtimeipc/internal/containinit"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// Warm hosts get the containment of cold ones (doc/design.md,
// “Containment”, “Warm launch”): the zygote's server is started through
// the containment init, so every child it forks inherits its user and
// network namespaces, limits, no_new_privs, seccomp filter and Landlock
// domain; that domain may write where any of the launcher's workspaces
// may be, and each child then enforces, before the host runs, its own
// nested Landlock layer (zygote.py, _contain) with exactly the rules and
// scopes a cold launch of its invocation gets. Where the kernel allows
// (warmEgress), the server's loopback is up and every child's layer also
// governs TCP, with a socket filter beside it: a child allowed the
// network connects only to its own egress listener, which the server
// binds per fork and the launcher's proxy serves (doc/design.md, “Warm
// egress”). An invocation the server cannot serve (one allowed the
// network where that is not possible, or working outside the directory
// the server may write) is launched cold, contained.

// warmContainable reports whether this Launcher's hosts can be launched
// warm with their containment; every containment can.
func (l *Launcher) warmContainable() error { return nil }

// serverWrite is what a zygote server's domain may write: every host's
// shared writable paths, the FilesystemWrite paths (granted to a child
// only when its context asks), and the workspaces' directory
// (Containment.WorkspaceRoot, else Config.Dir).
func (k *container) serverPaths(cfg *Config, scriptDir string) (read, write []string) {
	ws := cfg.Dir
	if k.cfg.WorkspaceRoot != "" {
		ws = k.cfg.WorkspaceRoot
	}
	write = append(slices.Clone(k.cfg.FilesystemWrite), ws)
	read = append(slices.Clone(k.cfg.FilesystemRead), scriptDir)
	return read, write
}

// containServer prepares the contained start of a zygote server with
// argument vector argv, its program in scriptDir, its descriptors ending
// at firstFree (see containPrepare).
func (z *Zygote) containServer(argv []string, scriptDir string, firstFree int) (*containStart, error) {
	l := z.l
	if l.contain == nil {
		return nil, nil
	}
	read, write := l.contain.serverPaths(&l.cfg, scriptDir)
	return l.containPrepareShared(spec{containRead: read, containWrite: write}, argv, l.cfg.Dir, firstFree, l.contain.warmEgress())
}

// warmEgress reports whether a zygote's children can be kept to their
// own egress proxy (warmNetUsable): its server's loopback is then up,
// and every child, allowed the network or not, gets its own Landlock TCP
// rules and socket filter (childContain).
func (k *container) warmEgress() bool {
	return k != nil && k.on&contain.LayerNetwork != 0 && k.warmNet == nil
}

// Landlock's network access rights (ABI 4).
const (
	landlockNetBindTCP    = 1 << 0
	landlockNetConnectTCP = 1 << 1
)

// childContain returns the "contain" member of a fork request for the
// host of s working in dir: the Landlock layer the child enforces, and,
// when the server's loopback is up (warmEgress), its TCP port rules and
// socket filter. egress says that the child is allowed the network: the
// server then binds it an egress listener, and the child's rules allow a
// TCP connection to that listener's port and nothing else. A *coldError
// says the server's domain cannot serve it.
func (z *Zygote) childContain(s spec, dir string) (contain map[string]any, egress bool, err error) {
	k := z.l.contain
	if k == nil {
		return nil, false, nil
	}
	egress = k.egress(s.lc)
	if egress && !k.warmEgress() {
		return nil, false, &coldError{fmt.Errorf("the invocation is allowed the network (network_hosts through its own egress proxy), and this zygote cannot keep a warm host to its own proxy: %w", k.warmNet)}
	}
	if k.cfg.WorkspaceRoot == "" && dir != z.l.cfg.Dir {
		return nil, false, &coldError{fmt.Errorf("the host works in %s, which the zygote's server may not write (only Config.Dir; set Containment.WorkspaceRoot)", dir)}
	}
	p := k.launchPolicy(z.l.cfg.Interpreter, nil, nil, dir, s.lc, s.workspace)
	netRules := k.warmEgress()
	if !p.FS && !p.Scope && !netRules {
		return nil, false, nil
	}
	var handled, scoped uint64
	full := containinit.LandlockConfigs[p.ABI]
	if p.Scope {
		scoped = uint64(full.Scoped)
	}
	rules := [][]any{}
	if p.FS {
		handled = uint64(full.HandledAccessFS)
		for _, l := range []struct {
			paths []string
			write bool
		}{{p.Read, false}, {p.Write, true}} {
			for _, path := range l.paths {
				fi, err := os.Stat(path)
				if err != nil {
					continue
				}
				rules = append(rules, []any{[]byte(path), accessMask(fi.IsDir(), l.write) & handled})
			}
		}
	}
	contain = map[string]any{"handled_fs": handled, "scoped": scoped, "rules": rules}
	if netRules {
		// No TCP bind, and no TCP connection but, when allowed the
		// network, to its own egress listener's port; no socket of
		// another protocol than TCP beside unix and netlink ones.
		contain["handled_net"] = uint64(landlockNetBindTCP | landlockNetConnectTCP)
		contain["seccomp"] = k.sockFilter
	}
	if egress {
		contain["egress"] = true
		contain["proxy_env"] = egressProxyVars
	}
	return contain, egress, nil
}

// accessMask is the Landlock access a path rule grants, as the cold
// init's go-landlock rules do (RODirs, RWDirs with refer, ROFiles,
// RWFiles with ioctl on devices).
func accessMask(dir, write bool) uint64 {
	const (
		read  = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
		wdirs = ll.AccessFSWriteFile | ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar |
			ll.AccessFSMakeDir | ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo |
			ll.AccessFSMakeBlock | ll.AccessFSMakeSym | ll.AccessFSTruncate | ll.AccessFSRefer
		file = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadFile
	)
	switch {
	case dir && write:
		return read | wdirs
	case dir:
		return read
	case write:
		return file | ll.AccessFSIoctlDev
	}
	return (read & file)
}
