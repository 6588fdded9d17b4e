package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// cgroupOf returns the directory of pid's cgroup v2 under parent.
func cgroupOf(t *testing.T, parent string, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		t.Fatalf("reading pid %d's cgroup: %v", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return filepath.Join(parent, filepath.Base(rest))
		}
	}
	t.Fatalf("pid %d has no cgroup v2: %s", pid, b)
	return ""
}

// setsidPID calls the instance with setsid_child and returns the
// grandchild's pid.
func setsidPID(t *testing.T, inst capabilityruntime.BackendInstance) (worker, grandchild int) {
	t.Helper()
	resp, err := inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"setsid_child": true}})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := resp.Result["setsid_pid"].(float64)
	if !ok {
		t.Fatalf("no setsid_pid in %v", resp.Result)
	}
	return pidOf(t, resp), int(f)
}

func requireCgroups(t *testing.T, b *process.Backend) string {
	t.Helper()
	dir := b.Cgroups()
	if dir == "" {
		_, err := process.New(process.Config{Cgroup: process.Cgroup{Required: true}})
		t.Skipf("no cgroup layer on this machine: %v", err)
	}
	return dir
}

// TestSetsidGrandchildEndsWithItsWorker: a grandchild that left its
// worker's process group (setsid) is in the worker's cgroup, and is gone
// once the instance's Close, the Backend's Close, or the one-shot call
// returned; each cgroup directory is removed.
func TestSetsidGrandchildEndsWithItsWorker(t *testing.T) {
	defer leaktest.Goroutines(t)()
	fds := leaktest.OpenFDs(t)
	for _, tc := range []struct {
		name     string
		protocol string
		end      func(t *testing.T, f *fixture)
	}{
		{"instance Close", capabilityruntime.ProtocolV1, func(t *testing.T, f *fixture) { f.close(t) }},
		{"Backend Close", capabilityruntime.ProtocolV1, func(t *testing.T, f *fixture) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := f.b.Close(ctx); err != nil {
				t.Fatal(err)
			}
			requireNoLeftovers(t, f.entry, f.cfg.TempDir)
		}},
		{"worker crash", capabilityruntime.ProtocolV1, func(t *testing.T, f *fixture) {
			if _, err := f.inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"crash": true}}); err == nil {
				t.Fatal("a crashing call succeeded")
			}
			waitFor(t, "the crashed worker's processes to go", func() bool { return len(processes(f.entry)) == 0 })
		}},
		{"one-shot call", capabilityruntime.ProtocolJSONV1, func(t *testing.T, f *fixture) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "echo", tc.protocol, 1, nil)
			parent := requireCgroups(t, f.b)
			worker, gc := setsidPID(t, f.inst)
			dir := cgroupOf(t, parent, gc)
			if tc.protocol == capabilityruntime.ProtocolV1 {
				if w := cgroupOf(t, parent, worker); w != dir {
					t.Fatalf("worker %d in %s, its grandchild %d in %s", worker, w, gc, dir)
				}
				if sid, _ := unix.Getsid(gc); sid != gc {
					t.Fatalf("grandchild %d is in session %d, not its own", gc, sid)
				}
			}
			tc.end(t, f)
			if alive(gc) {
				t.Errorf("setsid grandchild %d outlived its worker", gc)
				_ = syscall.Kill(gc, syscall.SIGKILL)
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("cgroup %s left behind (%v)", dir, err)
			}
			_ = closeInstance(t, f.inst)
		})
	}
	if n := leaktest.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open, %d before", n, fds)
	}
}

// TestSetsidGrandchildFallback: with the cgroup layer off, the documented
// limit holds: a grandchild that left its worker's process group outlives
// the worker, the instance's Close and the Backend's Close.
func TestSetsidGrandchildFallback(t *testing.T) {
	f := newFixture(t, "echo", capabilityruntime.ProtocolV1, 1, func(c *process.Config) { c.Cgroup.Off = true })
	if d := f.b.Cgroups(); d != "" {
		t.Fatalf("Cgroups() = %q with Cgroup.Off", d)
	}
	_, gc := setsidPID(t, f.inst)
	defer syscall.Kill(gc, syscall.SIGKILL)
	f.close(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := f.b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !alive(gc) {
		t.Errorf("setsid grandchild %d ended without the cgroup layer: the documented fallback says it survives", gc)
	}
}

// TestCgroupRefusals: Required where the layer is unavailable, and a limit
// whose controller is not enabled, are refused with their errors; with
// BestEffortLimits the limit is dropped.
func TestCgroupRefusals(t *testing.T) {
	_, err := process.New(process.Config{Cgroup: process.Cgroup{Required: true, Parent: t.TempDir()}})
	if !errors.Is(err, process.ErrCgroupUnavailable) {
		t.Errorf("Required with a Parent outside cgroup2: %v, want ErrCgroupUnavailable", err)
	}
	if _, err := process.New(process.Config{Cgroup: process.Cgroup{Off: true, Required: true}}); err == nil {
		t.Error("Off and Required together accepted")
	}
	b, err := process.New(process.Config{})
	if err != nil {
		t.Fatal(err)
	}
	parent := b.Cgroups()
	b.Close(t.Context())
	if parent == "" {
		// No cgroup at all: any limit is unavailable.
		if _, err := process.New(process.Config{Cgroup: process.Cgroup{Pids: 10}}); !errors.Is(err, process.ErrCgroupLimitUnavailable) {
			t.Errorf("a limit without a cgroup: %v, want ErrCgroupLimitUnavailable", err)
		}
		return
	}
	enabled, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if strings.Contains(string(enabled), "pids") {
		t.Skipf("%s enables pids: the limit is available", parent)
	}
	if _, err := process.New(process.Config{Cgroup: process.Cgroup{Pids: 10}}); !errors.Is(err, process.ErrCgroupLimitUnavailable) || !strings.Contains(err.Error(), "pids.max") {
		t.Errorf("pids.max without the pids controller: %v, want ErrCgroupLimitUnavailable naming pids.max", err)
	}
	b, err = process.New(process.Config{Cgroup: process.Cgroup{Pids: 10, BestEffortLimits: true}})
	if err != nil {
		t.Fatalf("BestEffortLimits: %v", err)
	}
	b.Close(t.Context())
}
