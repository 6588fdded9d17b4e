package cgroup

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// openOrSkip opens the discovered parent, skipping where this machine has
// none (saying why).
func openOrSkip(t *testing.T, o Options) *Parent {
	t.Helper()
	p, err := Open(o)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no usable delegated cgroup v2 here: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p
}

// Dead reports whether pid has exited: no /proc entry, or a zombie
// waiting for its reaper (which, for an orphan, is not this process).
func Dead(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// startSetsidGrandchild starts sh in g (nil: in no cgroup of ours) that
// starts a grandchild in a new session and prints its pid; it returns the
// command and the grandchild's pid.
func startSetsidGrandchild(t *testing.T, g *Group) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", `setsid /bin/sh -c 'echo $$; exec sleep 300' </dev/null & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if g != nil {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, g.FD()
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the grandchild's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", line, err)
	}
	sid, err := unix.Getsid(pid)
	if err != nil || sid != pid {
		t.Fatalf("grandchild %d: session %d (%v), want its own", pid, sid, err)
	}
	return cmd, pid
}

func TestCloseEndsSetsidGrandchild(t *testing.T) {
	p := openOrSkip(t, Options{})
	defer leaktest.Goroutines(t)()
	fds := leaktest.OpenFDs(t)

	g, err := p.New("zeo-test")
	if err != nil {
		t.Fatal(err)
	}
	cmd, gc := startSetsidGrandchild(t, g)
	procs, err := g.Procs()
	if err != nil || !slices.Contains(procs, gc) || !slices.Contains(procs, cmd.Process.Pid) {
		t.Fatalf("cgroup.procs %v (%v), want the child %d and the grandchild %d", procs, err, cmd.Process.Pid, gc)
	}
	// The child's end, and its whole process group's, leave the
	// grandchild running: it is in a session of its own.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if Dead(gc) {
		t.Fatalf("grandchild %d ended with its process group: the test shows nothing", gc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !Dead(gc) {
		t.Errorf("grandchild %d outlived the cgroup's Close", gc)
	}
	if _, err := os.Stat(g.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s left behind: %v", g.Dir(), err)
	}
	if err := g.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if n := leaktest.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open, %d before", n, fds)
	}
}

// TestCloseBoundedByContext: the wait for the cgroup to empty ends with
// its context, saying so, and the directory stays until a Close succeeds.
func TestCloseBoundedByContext(t *testing.T) {
	p := openOrSkip(t, Options{})
	g, err := p.New("zeo-test")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.awaitEmpty(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("awaitEmpty with a live process and an ended context: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(g.Dir()); err != nil {
		t.Errorf("cgroup %s gone while a process is in it: %v", g.Dir(), err)
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(g.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s left behind: %v", g.Dir(), err)
	}
}

// TestExplicitParent: a Parent named by the embedder is used, and a
// directory outside cgroup2 is refused.
func TestExplicitParent(t *testing.T) {
	own := openOrSkip(t, Options{})
	sub, err := own.New("zeo-test-parent")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(context.Background())
	p, err := Open(Options{Parent: sub.Dir()})
	if err != nil {
		t.Fatalf("Open(%s): %v", sub.Dir(), err)
	}
	g, err := p.New("zeo-test")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(g.Dir()) != sub.Dir() {
		t.Errorf("group %s is not under %s", g.Dir(), sub.Dir())
	}
	if err := g.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Parent: t.TempDir()}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open(a plain directory) = %v, want ErrUnavailable", err)
	}
	if _, err := Open(Options{Parent: "relative"}); err == nil {
		t.Error("Open(a relative path) accepted it")
	}
}

// TestLimitNeedsController: a limit whose controller the parent does not
// enable is a *LimitError naming it, or, BestEffort, dropped and named.
func TestLimitNeedsController(t *testing.T) {
	own := openOrSkip(t, Options{})
	enabled, err := readWords(filepath.Join(own.Dir(), "cgroup.subtree_control"))
	if err != nil {
		t.Fatal(err)
	}
	var lim Limits
	var want, ctrl string
	switch {
	case !slices.Contains(enabled, "pids"):
		lim, want, ctrl = Limits{Pids: 10}, "pids.max", "pids"
	case !slices.Contains(enabled, "memory"):
		lim, want, ctrl = Limits{MemoryBytes: 1 << 30}, "memory.max", "memory"
	case !slices.Contains(enabled, "cpu"):
		lim, want, ctrl = Limits{CPUPercent: 50}, "cpu.max", "cpu"
	default:
		t.Skipf("%s enables pids, memory and cpu: no limit is unavailable", own.Dir())
	}
	_, err = Open(Options{Limits: lim})
	var le *LimitError
	if !errors.As(err, &le) || !errors.Is(err, ErrLimitUnavailable) || le.File != want || le.Controller != ctrl {
		t.Fatalf("Open(%+v) = %v, want a *LimitError for %s", lim, err, want)
	}
	p, err := Open(Options{Limits: lim, BestEffort: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Dropped(); !slices.Equal(got, []string{want}) {
		t.Errorf("Dropped() = %v, want [%s]", got, want)
	}
}

// TestPidsLimitStopsForkBomb: with pids enabled, a fork bomb in a Group
// stops at pids.max.
func TestPidsLimitStopsForkBomb(t *testing.T) {
	own := openOrSkip(t, Options{})
	enabled, _ := readWords(filepath.Join(own.Dir(), "cgroup.subtree_control"))
	if !slices.Contains(enabled, "pids") {
		avail, _ := readWords(filepath.Join(own.Dir(), "cgroup.controllers"))
		t.Skipf("controller pids is not enabled for the children of %s (cgroup.subtree_control %v; cgroup.controllers offers %v): "+
			"on this machine pids is bound to a cgroup v1 hierarchy, so no cgroup v2 limit can stop a fork bomb here", own.Dir(), enabled, avail)
	}
	p, err := Open(Options{Limits: Limits{Pids: 20}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.New("zeo-test")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(context.Background())
	// Each sh forks two more until fork fails; the leader reports the
	// first failure and exits.
	cmd := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt 100 ]; do sleep 300 & if [ $? -ne 0 ]; then echo stopped; exit 0; fi; i=$((i+1)); done; echo unstopped`)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: g.FD()}
	out, _ := cmd.CombinedOutput()
	procs, _ := g.Procs()
	if len(procs) > 20 {
		t.Errorf("%d processes in a cgroup with pids.max 20", len(procs))
	}
	if strings.Contains(string(out), "unstopped") {
		t.Errorf("100 forks succeeded under pids.max 20: %s", out)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/x\1`: `/x\1`, `/t\011`: "/t\t"} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCloseRemovedElsewhere: a Group whose directory someone else removed
// closes cleanly, its descriptor released.
func TestCloseRemovedElsewhere(t *testing.T) {
	p := openOrSkip(t, Options{})
	fds := leaktest.OpenFDs(t)
	g, err := p.New("zeo-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(g.Dir()); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(context.Background()); err != nil {
		t.Errorf("Close of a removed group: %v", err)
	}
	if n := leaktest.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open, %d before", n, fds)
	}
}
