package cgroup

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Parent is a delegated cgroup v2 directory under which Groups are made.
type Parent struct {
	dir     string
	limits  []limitFile
	dropped []string
}

// Open returns the Parent o names (o.Parent, else this process's own
// cgroup v2), checked usable: on a cgroup2 file system, writable by this
// process, with cgroup.kill in its children (probed by making and
// removing one). It refuses, wrapping ErrUnavailable, when it is not; and
// with a *LimitError when a limit of o.Limits needs a controller the
// directory does not enable for its children, unless o.BestEffort.
func Open(o Options) (*Parent, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	dir := o.Parent
	if dir == "" {
		var err error
		if dir, err = ownCgroup(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	} else if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("cgroup: parent %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, dir, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return nil, fmt.Errorf("%w: %s is not on a cgroup2 file system (a cgroup v1 hierarchy or no cgroup at all)", ErrUnavailable, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return nil, fmt.Errorf("%w: this process may not create cgroups in %s (%v): delegate it to this user, or name another Parent", ErrUnavailable, dir, err)
	}
	p := &Parent{dir: dir}
	if err := p.probe(); err != nil {
		return nil, err
	}
	enabled, err := readWords(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	for _, lf := range o.Limits.files() {
		if slices.Contains(enabled, lf.controller) {
			p.limits = append(p.limits, lf)
			continue
		}
		if o.BestEffort {
			p.dropped = append(p.dropped, lf.file)
			continue
		}
		avail, _ := readWords(filepath.Join(dir, "cgroup.controllers"))
		return nil, &LimitError{File: lf.file, Controller: lf.controller, Parent: dir, Available: avail}
	}
	return p, nil
}

// probe makes and removes one child of p, which must have cgroup.kill.
func (p *Parent) probe() error {
	g, err := p.mkdir("zeo-probe")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	_, kerr := os.Stat(filepath.Join(g, "cgroup.kill"))
	if err := os.Remove(g); err != nil {
		return fmt.Errorf("%w: removing the probe cgroup %s: %w", ErrUnavailable, g, err)
	}
	if kerr != nil {
		return fmt.Errorf("%w: the kernel has no cgroup.kill (Linux 5.14)", ErrUnavailable)
	}
	return nil
}

// Dir is the parent directory.
func (p *Parent) Dir() string { return p.dir }

// Dropped names the limit files left unset under Options.BestEffort
// because their controller is not enabled.
func (p *Parent) Dropped() []string { return slices.Clone(p.dropped) }

// Limits names the limit files every Group gets.
func (p *Parent) Limits() []string {
	out := make([]string, len(p.limits))
	for i, l := range p.limits {
		out[i] = l.file
	}
	return out
}

// mkdir makes a fresh child of p named prefix-<random>.
func (p *Parent) mkdir(prefix string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	dir := filepath.Join(p.dir, prefix+"-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup: creating %s: %w", dir, err)
	}
	return dir, nil
}

// Group is one cgroup, made for one process and everything it starts.
type Group struct {
	dir string
	fd  *os.File // the directory, for CLONE_INTO_CGROUP

	mu      sync.Mutex // serializes Close
	removed bool
}

// New makes a Group under p named prefix-<random>, with p's limits set.
func (p *Parent) New(prefix string) (*Group, error) {
	dir, err := p.mkdir(prefix)
	if err != nil {
		return nil, err
	}
	for _, l := range p.limits {
		if err := os.WriteFile(filepath.Join(dir, l.file), []byte(l.value), 0); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("cgroup: setting %s to %s in %s: %w", l.file, l.value, dir, err)
		}
	}
	fd, err := os.OpenFile(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("cgroup: opening %s: %w", dir, err)
	}
	return &Group{dir: dir, fd: fd}, nil
}

// Dir is the Group's directory.
func (g *Group) Dir() string { return g.dir }

// FD is the Group's directory descriptor, for
// syscall.SysProcAttr.CgroupFD; valid until Close.
func (g *Group) FD() int { return int(g.fd.Fd()) }

// OpenProcs opens the Group's cgroup.procs for writing. A process given
// it moves itself into the Group by writing "0"; the kernel checks the
// move against the credentials of this process, which opened it, so the
// writer needs no access of its own to the cgroup file system. Close the
// file once the move is done.
func (g *Group) OpenProcs() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(g.dir, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup: opening %s/cgroup.procs: %w", g.dir, err)
	}
	return f, nil
}

// Kill sends SIGKILL to every process in the Group (cgroup.kill).
func (g *Group) Kill() error {
	if err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return fmt.Errorf("cgroup: killing %s: %w", g.dir, err)
	}
	return nil
}

// Populated reports whether any process is in the Group (cgroup.events;
// a zombie waiting to be reaped is not).
func (g *Group) Populated() (bool, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.events"))
	if err != nil {
		return false, fmt.Errorf("cgroup: reading %s/cgroup.events: %w", g.dir, err)
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && k == "populated" {
			return v != "0", nil
		}
	}
	return false, fmt.Errorf("cgroup: %s/cgroup.events has no populated line", g.dir)
}

// Procs returns the pids in the Group (cgroup.procs).
func (g *Group) Procs() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading %s/cgroup.procs: %w", g.dir, err)
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// Close kills every process in the Group, waits until none is left
// (bounded by ctx) and removes the directory. When ctx ends first it
// returns an error and the directory stays; a later Close tries again.
// It is safe to call more than once and concurrently.
func (g *Group) Close(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.removed {
		return nil
	}
	if err := g.Kill(); errors.Is(err, os.ErrNotExist) {
		// Removed by someone else: nothing can be in it.
		g.removed = true
		g.fd.Close()
		return nil
	} else if err != nil {
		return err
	}
	if err := g.awaitEmpty(ctx); err != nil {
		return err
	}
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgroup: removing %s: %w", g.dir, err)
	}
	g.removed = true
	g.fd.Close()
	return nil
}

// awaitEmpty waits for "populated 0", woken by inotify on cgroup.events
// (the kernel signals every change of it as a modification).
func (g *Group) awaitEmpty(ctx context.Context) error {
	if pop, err := g.Populated(); err != nil || !pop {
		return err
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("cgroup: inotify: %w", err)
	}
	f := os.NewFile(uintptr(ifd), "cgroup-events") // nonblocking: in the poller, so deadlines work
	defer f.Close()
	if _, err := unix.InotifyAddWatch(ifd, filepath.Join(g.dir, "cgroup.events"), unix.IN_MODIFY); err != nil {
		return fmt.Errorf("cgroup: watching %s/cgroup.events: %w", g.dir, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	defer stop()
	buf := make([]byte, 4096)
	for {
		// Checked after the watch is in place, so no change is missed.
		pop, err := g.Populated()
		if err != nil || !pop {
			return err
		}
		if _, err := f.Read(buf); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("cgroup: %s still holds processes after cgroup.kill: %w", g.dir, context.Cause(ctx))
			}
			return fmt.Errorf("cgroup: waiting on %s/cgroup.events: %w", g.dir, err)
		}
	}
}

// ownCgroup returns the directory of this process's cgroup v2.
func ownCgroup() (string, error) {
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			rel, ok := strings.CutPrefix(rest, root)
			if !ok {
				return "", fmt.Errorf("this process's cgroup %s is outside the cgroup2 mount's root %s", rest, root)
			}
			return filepath.Join(mount, rel), nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 (/proc/self/cgroup has no 0:: line)")
}

// cgroup2Mount returns the first cgroup2 mount point and the root of the
// hierarchy it shows.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+1 >= len(fields) || fields[sep+1] != "cgroup2" {
			continue
		}
		return unescapeMount(fields[4]), unescapeMount(fields[3]), nil
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	return "", "", errors.New("no cgroup2 file system is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + c - '0'
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// readWords returns the space-separated words of a cgroup file.
func readWords(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return strings.Fields(string(b)), nil
}
