//go:build linux

package ipc_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// helperEnv names the role a re-executed test binary plays.
const helperEnv = "IPC_TEST_HELPER"

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role))
	}
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines("runtimeipc/ipc."); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to two seconds for every goroutine running
// code of the named package to end, and returns the stacks of those left.
func leakedGoroutines(pkg string) string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, pkg) && !strings.Contains(g, "leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// helperMain runs in a child process holding a dup of the host's end of
// the socketpair as FD 3. It writes what its role says and exits.
func helperMain(role string) int {
	f := os.NewFile(3, "host")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer c.Close()
	raw, err := io.ReadAll(os.Stdin) // the bytes to send, prepared by the parent
	if err != nil {
		return 2
	}
	switch role {
	case "write":
		if _, err := c.Write(raw); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
	case "bootstrap":
		// raw is a template with PID in place of this process's pid.
		body := strings.Replace(string(raw), `"pid":0`, `"pid":`+strconv.Itoa(os.Getpid()), 1)
		if err := ipc.WriteFrame(c, []byte(body), 0); err != nil {
			return 3
		}
		rep, err := ipc.ReadFrame(c, 0)
		if err != nil {
			return 4
		}
		r, err := ipc.DecodeReply(rep, 0)
		if err != nil {
			return 5
		}
		fmt.Print(r.State)
	}
	return 0
}

// helper starts the test binary as a helper holding a dup of host as FD 3,
// feeding it stdin, and waits for it.
func helper(t *testing.T, host *net.UnixConn, role string, stdin []byte) (pid int, stdout string) {
	t.Helper()
	f, err := host.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdin = strings.NewReader(string(stdin))
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid = cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper %s: %v", role, err)
	}
	return pid, out.String()
}

// TestCredentialsForeignProcess: bytes written on the host's socket by a
// forked helper process holding a dup of it are refused, whether the whole
// frame or only its body comes from the helper.
func TestCredentialsForeignProcess(t *testing.T) {
	f := newFixture(t) // ChildPID is this test process
	for _, tc := range []struct {
		name  string
		split int // bytes of the admit frame this process writes before the helper
	}{{"whole frame", 0}, {"body only", 4}, {"last byte only", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			rt, host := socketpair(t)
			s := ipc.NewSession(rt, f.config())
			wait := serve(t, s, &allowAll{})
			if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
				t.Fatal(err)
			}
			if _, err := ipc.ReadFrame(host, 0); err != nil {
				t.Fatal(err)
			}
			admit := frame(t, f.env(2, ipc.MethodAdmit, admitPayload()))
			split := tc.split
			if split < 0 {
				split = len(admit) - 1
			}
			if split > 0 {
				if _, err := host.Write(admit[:split]); err != nil {
					t.Fatal(err)
				}
			}
			pid, _ := helper(t, host, "write", admit[split:])
			err := wait()
			if !isRule(err, ipc.ErrPeerCredentials) {
				t.Fatalf("Serve = %v, want ErrPeerCredentials", err)
			}
			if !strings.Contains(err.Error(), "pid "+strconv.Itoa(pid)) {
				t.Errorf("error does not name the helper's pid %d: %v", pid, err)
			}
			if sum := s.Summary(); sum.Frames != 1 || len(sum.Exchanges) != 1 {
				t.Errorf("summary %+v: the foreign frame was counted or answered", sum)
			}
		})
	}
}

// TestCredentialsRealChild: a helper process that is the named child
// bootstraps successfully (its own pid in payload and SCM_CREDENTIALS);
// then a write from this process, which is not the child, is refused.
func TestCredentialsRealChild(t *testing.T) {
	f := newFixture(t)
	rt, host := socketpair(t)
	// The child's pid is known only after it starts: serve after Start,
	// exactly as the launcher will, with SO_PASSCRED on beforehand.
	if err := ipc.EnablePassCred(rt); err != nil {
		t.Fatal(err)
	}
	tmpl := f.bootstrap()
	tmpl["pid"] = int64(0)
	hf, err := host.File()
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=bootstrap")
	cmd.ExtraFiles = []*os.File{hf}
	cmd.Stdin = strings.NewReader(string(body(t, f.env(1, ipc.MethodBootstrap, tmpl))))
	var out strings.Builder
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cfg := f.config()
	cfg.ChildPID = cmd.Process.Pid
	cfg.Credentials = ipc.CredentialsRequired
	s := ipc.NewSession(rt, cfg)
	wait := serve(t, s, &allowAll{})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if out.String() != string(ipc.StateAllowed) {
		t.Fatalf("child saw %q, want allowed (Serve: %v)", out.String(), wait())
	}
	// Now this process, which is not the child, writes the next request.
	e := f.env(2, ipc.MethodAdmit, admitPayload())
	e.HostNonce = s.Summary().HostNonce
	if _, err := host.Write(frame(t, e)); err != nil {
		t.Fatal(err)
	}
	if err := wait(); !isRule(err, ipc.ErrPeerCredentials) {
		t.Fatalf("Serve = %v, want ErrPeerCredentials", err)
	}
}

// TestCredentialsBeforePassCred: bytes sent before SO_PASSCRED was on
// carry no sender and are refused.
func TestCredentialsBeforePassCred(t *testing.T) {
	f := newFixture(t)
	rt, host := socketpair(t)
	if _, err := host.Write(frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))); err != nil {
		t.Fatal(err)
	}
	err := ipc.NewSession(rt, f.config()).Serve(context.Background(), &allowAll{})
	if !isRule(err, ipc.ErrPeerCredentials) {
		t.Fatalf("Serve = %v, want ErrPeerCredentials", err)
	}
}

// TestCredentialsPassedDescriptor: a descriptor sent with SCM_RIGHTS is
// refused and closed, so nothing leaks into the Runtime.
func TestCredentialsPassedDescriptor(t *testing.T) {
	f := newFixture(t)
	rt, host := socketpair(t)
	s := ipc.NewSession(rt, f.config())
	before := leaktest.OpenFDs(t)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	raw := frame(t, f.env(1, ipc.MethodBootstrap, f.bootstrap()))
	if _, _, err := host.WriteMsgUnix(raw, unix.UnixRights(p[0]), nil); err != nil {
		t.Fatal(err)
	}
	unix.Close(p[0])
	unix.Close(p[1])
	err := s.Serve(context.Background(), &allowAll{})
	if !isRule(err, ipc.ErrPeerCredentials) {
		t.Fatalf("Serve = %v", err)
	}
	host.Close()
	if after := leaktest.OpenFDs(t); after > before-2 { // Serve closed rt, we closed host
		t.Errorf("open descriptors: %d before, %d after", before, after)
	}
}
