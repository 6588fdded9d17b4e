package launch_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
)

// TestZygoteEgressPortsNeverReused runs the fork server's egress listener
// function in a network namespace of its own whose port range holds 8
// ports: it hands out 8 distinct ports, each listener closed at once (so
// that the kernel could pick the port again), and then none: a port a
// child was given is never given to another child of the same server (a
// descendant that outlived the first keeps its right to connect there),
// and an exhausted range is a refusal, not a crash.
func TestZygoteEgressPortsNeverReused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zygote.py"), launch.ZygoteSource, 0o600); err != nil {
		t.Fatal(err)
	}
	const script = `
import fcntl, json, os, socket, struct, sys
import zygote
s = socket.socket()
flags = struct.unpack("16sH14s", fcntl.ioctl(s.fileno(), 0x8913, struct.pack("16sH14s", b"lo", 0, b"")))[1]
fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))  # the loopback up
s.close()
with open("/proc/sys/net/ipv4/ip_local_port_range", "w") as f:
    f.write("40000 40007")
used, ports = set(), []
for _ in range(9):
    fd, port = zygote._egress_listener(used)
    if fd is None:
        ports.append(0)
        break
    ports.append(port)
    os.close(fd)
print(json.dumps(ports))
`
	// -B, and the copy's directory as the working one, which -c puts
	// first on sys.path: nothing is written beside the package's source.
	cmd := exec.CommandContext(testCtx(t), testpyhost.Interpreter(t), "-B", "-c", script)
	cmd.Env = []string{"PYTHONPATH=" + dir}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}}
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v: %s", err, stderr)
	}
	var ports []int
	if err := json.Unmarshal(out, &ports); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	if len(ports) != 9 || ports[8] != 0 {
		t.Fatalf("ports %v: want 8 ports and then none", ports)
	}
	got := slices.Sorted(slices.Values(ports[:8]))
	for i, p := range got {
		if p != 40000+i {
			t.Fatalf("ports %v: want each of 40000-40007 once", ports)
		}
	}
}

// TestWarmEgressServerLies: a server that hands over, as a child's egress
// listener, a socket that is not a TCP listener on 127.0.0.1 (here one
// bound to every address of its namespace) is lost: the invocation
// launches cold, contained, the log says why, and a fresh server takes
// over.
func TestWarmEgressServerLies(t *testing.T) {
	e := newPyEnv(t)
	src := string(launch.ZygoteSource)
	const old = `ln.bind(("127.0.0.1", 0))`
	if strings.Count(src, old) != 1 {
		t.Fatalf("the server program no longer holds %q once", old)
	}
	var log logBuffer
	l := e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
	z, err := l.StartZygoteFrom(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding,
		Preload: []string{"zeotestcontracts"}}, []byte(strings.Replace(src, old, `ln.bind(("0.0.0.0", 0))`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	server := z.Stats().ServerPID
	inv := e.echo(t)
	inv.Context.NetworkAllowed = true
	inv.Context.NetworkHosts = []string{"api.example.com"}
	out, err := z.Invoke(testCtx(t), inv)
	mustSucceed(t, out, err)
	if out.Process.Warm {
		t.Fatal("launched warm from a lying server")
	}
	waitDead(t, server)
	if want := "the egress listener it passed"; !strings.Contains(log.String(), want) {
		t.Fatalf("the log does not say %q:\n%s", want, log.String())
	}
}
