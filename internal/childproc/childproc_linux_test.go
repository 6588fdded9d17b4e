package childproc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// TestSweepCloexec checks both ways of marking stray descriptors: the
// close_range call and the /proc listing older kernels get.
func TestSweepCloexec(t *testing.T) {
	for name, sweep := range map[string]func() error{
		"close_range": SweepCloexec,
		"proc":        func() error { return sweepByListing("/proc/self/fd") },
	} {
		t.Run(name, func(t *testing.T) {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY, 0) // no O_CLOEXEC on purpose
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
				t.Fatalf("fd %d flags %#x, %v: want inheritable before the sweep", fd, flags, err)
			}
			if err := sweep(); err != nil {
				t.Fatal(err)
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err != nil {
				t.Fatalf("fd %d after the sweep: %v (it must mark, never close)", fd, err)
			}
			if flags&unix.FD_CLOEXEC == 0 {
				t.Fatalf("fd %d is still inheritable after the sweep", fd)
			}
		})
	}
}

// TestAwaitExitLeavesTheChildUnreaped: after AwaitExit the child is a
// zombie (its pid still ours to signal), and Wait still reaps it; also
// through the blocking fallback, when no pidfd can be opened or polled.
func TestAwaitExitLeavesTheChildUnreaped(t *testing.T) {
	noPidfd := func(int) (*os.File, error) { return nil, errors.ErrUnsupported }
	// A regular file: the poller refuses it, as it would a pidfd on a
	// kernel that cannot poll them.
	unpollable := func(int) (*os.File, error) {
		return os.OpenFile(filepath.Join(t.TempDir(), "plain"), os.O_CREATE|os.O_RDONLY|unix.O_NONBLOCK, 0o600)
	}
	for name, await := range map[string]func(*os.Process) error{
		"polled":     AwaitExit,
		"no pidfd":   func(p *os.Process) error { return awaitExit(p.Pid, noPidfd) },
		"unpollable": func(p *os.Process) error { return awaitExit(p.Pid, unpollable) },
	} {
		t.Run(name, func(t *testing.T) {
			fds := leaktest.OpenFDs(t)
			cmd, stdin := startCat(t)
			done := make(chan error, 1)
			go func() { done <- await(cmd.Process) }()
			stdin.Close() // cat exits; until then the wait must not return
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !zombie(t, cmd.Process.Pid) {
				t.Fatal("after the wait the child is not a zombie")
			}
			if err := cmd.Wait(); err != nil || cmd.ProcessState.ExitCode() != 0 {
				t.Fatalf("Wait after the wait: %v, exit %d", err, cmd.ProcessState.ExitCode())
			}
			if n := leaktest.OpenFDs(t); n != fds {
				t.Fatalf("%d descriptors open after the wait, %d before", n, fds)
			}
		})
	}
}

// TestAwaitExitHoldsNoThread: children being awaited hold no thread of
// this process each. A goroutine blocked in waitid would: each such
// goroutine occupies an OS thread for the child's whole life, and the Go
// runtime's monitor keeps polling every 20 µs while it does, which is
// what AwaitExit's wait through the poller avoids (BENCHMARKS.md,
// “supervise”).
func TestAwaitExitHoldsNoThread(t *testing.T) {
	const children = 32
	if f, err := pollablePidfd(os.Getpid()); err != nil {
		t.Skipf("no pidfd here (before Linux 5.3, or refused by a seccomp filter), so AwaitExit blocks: %v", err)
	} else {
		f.Close()
	}
	fds := leaktest.OpenFDs(t)
	threads0 := threads(t)
	cmds := make([]*exec.Cmd, children)
	stdins := make([]io.Closer, children)
	done := make(chan error, children)
	for i := range cmds {
		cmds[i], stdins[i] = startCat(t)
		go func(p *os.Process) { done <- AwaitExit(p) }(cmds[i].Process)
	}
	// Until every wait is parked: in the poller, or in the syscall.
	for parked(children) < children {
		time.Sleep(time.Millisecond)
	}
	held := threads(t) - threads0
	for _, c := range stdins {
		c.Close()
	}
	for range children {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Error(err)
		}
	}
	if held >= children/2 {
		t.Fatalf("awaiting %d children took %d more threads", children, held)
	}
	if n := leaktest.OpenFDs(t); n != fds {
		t.Fatalf("%d descriptors open after the waits, %d before", n, fds)
	}
}

// startCat starts cat, which exits once its stdin is closed.
func startCat(t *testing.T) (*exec.Cmd, io.Closer) {
	t.Helper()
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin
}

// zombie reports whether pid has exited and is not yet reaped.
func zombie(t *testing.T, pid int) bool {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("the child was reaped: %v", err)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && len(stat) >= i+3 && stat[i+2] == 'Z'
}

// threads returns how many threads this process has.
func threads(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no thread count in /proc/self/status")
	return 0
}

// parked counts the goroutines waiting in AwaitExit, in the poller or in
// a system call; want sizes the stack dump.
func parked(want int) int {
	buf := make([]byte, (want+16)<<12)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(g, "childproc.AwaitExit") &&
			(strings.Contains(header, "[IO wait") || strings.Contains(header, "[syscall")) {
			count++
		}
	}
	return count
}
