package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envDelegatedHelper makes this test binary, re-executed, the unprivileged
// controller of TestUnprivilegedDelegated.
const envDelegatedHelper = "ZEO_CGROUP_DELEGATED_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(envDelegatedHelper) == "1" {
		os.Exit(delegatedHelper())
	}
	os.Exit(m.Run())
}

// delegatedHelper runs as an unprivileged user inside a cgroup delegated
// to it: it discovers its own cgroup, makes a Group, starts a setsid
// grandchild into it, ends the child, closes the Group and reports.
func delegatedHelper() int {
	fail := func(format string, a ...any) int {
		fmt.Printf("fail: "+format+"\n", a...)
		return 1
	}
	p, err := Open(Options{})
	if err != nil {
		return fail("Open: %v", err)
	}
	g, err := p.New("zeo-test")
	if err != nil {
		return fail("New: %v", err)
	}
	cmd := exec.Command("/bin/sh", "-c", `setsid /bin/sh -c 'echo $$; exec sleep 300' </dev/null & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, UseCgroupFD: true, CgroupFD: g.FD()}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fail("%v", err)
	}
	if err := cmd.Start(); err != nil {
		return fail("starting into %s: %v", g.Dir(), err)
	}
	var gc int
	if _, err := fmt.Fscan(out, &gc); err != nil {
		return fail("reading the grandchild's pid: %v", err)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	if Dead(gc) {
		return fail("the grandchild %d ended with its group", gc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := g.Close(ctx); err != nil {
		return fail("Close: %v", err)
	}
	if !Dead(gc) {
		return fail("the grandchild %d outlived Close", gc)
	}
	if _, err := os.Stat(g.Dir()); !errors.Is(err, os.ErrNotExist) {
		return fail("%s left: %v", g.Dir(), err)
	}
	fmt.Printf("ok %s %d\n", p.Dir(), os.Getuid())
	return 0
}

// TestUnprivilegedDelegated: an unprivileged controller placed in a
// cgroup delegated to its user (the directory and its cgroup.procs,
// cgroup.threads and cgroup.subtree_control given to it, as systemd's
// Delegate= does) discovers it as its own, and its Groups end a setsid
// grandchild as root's do. It needs root to set the delegation up.
func TestUnprivilegedDelegated(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting up a delegated cgroup needs root")
	}
	own := openOrSkip(t, Options{})
	const nobody = 65534
	d, err := own.New("zeo-test-delegated")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(context.Background())
	for _, f := range []string{"", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control"} {
		if err := os.Chown(filepath.Join(d.Dir(), f), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	// The test binary, where nobody may run it.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bindir, err := os.MkdirTemp("", "zeo-cgroup-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(bindir)
	if err := os.Chmod(bindir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(bindir, "cgroup.test")
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		_, err = io.Copy(dst, src)
		dst.Close()
	}
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	helper := func(g *Group) string {
		cmd := exec.Command(bin)
		cmd.Dir = "/"
		cmd.Env = []string{envDelegatedHelper + "=1"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}},
			UseCgroupFD: true, CgroupFD: g.FD()}
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := helper(d); !strings.HasPrefix(out, fmt.Sprintf("ok %s %d", d.Dir(), nobody)) {
		t.Fatalf("the unprivileged controller in a delegated cgroup: %s", out)
	}
	// The control: in a cgroup not delegated to it, the same program finds
	// no usable cgroup.
	root, err := own.New("zeo-test-not-delegated")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close(context.Background())
	if out := helper(root); !strings.Contains(out, "fail: Open: "+ErrUnavailable.Error()) || !strings.Contains(out, "may not create cgroups") {
		t.Errorf("the unprivileged controller in a cgroup not delegated to it: %s, want ErrUnavailable", out)
	}
}
