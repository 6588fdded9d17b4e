package launch_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	cmd := exec.CommandContext(testCtx(t), testpyhost.Interpreter(t), "-c", script)
	cmd.Env = []string{"PYTHONPATH=" + dir}
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
