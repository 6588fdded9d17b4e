//go:build linux

package process_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "echo", capabilityruntime.ProtocolJSONV1, 0, nil)
	params := map[string]any{"n": 42, "list": []string{"a"}, "obj": map[string]int{"k": 1}}
	resp, err := f.inst.Execute(t.Context(), &capabilityruntime.Request{Params: params, CorrelationID: "not sent"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 42.0, "list": []any{"a"}, "obj": map[string]any{"k": 1.0}}
	if diff := cmp.Diff(want, resp.Result["params"]); diff != "" {
		t.Errorf("params as the runtime saw them (-want +got):\n%s", diff)
	}
	// The one-shot protocol has no place for ids or a deadline.
	if resp.Result["execution_id"] != "" || resp.Result["correlation_id"] != "" || resp.Result["deadline_ms"] != -1.0 {
		t.Errorf("one-shot call carried ids or a deadline: %v", resp.Result)
	}
	if pidOf(t, f.call(t, nil)) == pidOf(t, resp) {
		t.Error("two one-shot calls ran in one process")
	}
	if err := f.inst.Health(t.Context()); err != nil {
		t.Errorf("Health: %v", err)
	}
	if err := closeInstance(t, f.inst); err != nil {
		t.Fatal(err)
	}
	if _, err := f.inst.Execute(t.Context(), nil); !errors.Is(err, process.ErrClosed) {
		t.Errorf("Execute after Close: %v, want ErrClosed (upstream ran it anyway)", err)
	}
	if err := f.inst.Health(t.Context()); !errors.Is(err, process.ErrClosed) {
		t.Errorf("Health after Close: %v, want ErrClosed", err)
	}
	requireNoLeftovers(t, f.entry, f.cfg.TempDir)
}

// TestControlledFailure: Response.Error reaches the caller as a
// *RuntimeError next to the Response, on both protocols.
func TestControlledFailure(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{capabilityruntime.ProtocolV1, capabilityruntime.ProtocolJSONV1} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			b := newBackend(t, cfg)
			root, entry := runtimeFile(t, "echo")
			inst := start(t, b, spec(root, entry, protocol, 1))
			resp, err := inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"fail": "issue 12 not found"}})
			var re *capabilityruntime.RuntimeError
			if !errors.As(err, &re) || !errors.Is(err, capabilityruntime.ErrRuntimeFailure) {
				t.Fatalf("Execute: %v, want a *RuntimeError", err)
			}
			if re.Message != "issue 12 not found" || re.Type != "acme:"+fileBase(entry) || re.Version != "1.0.0" {
				t.Errorf("RuntimeError = %+v", re)
			}
			if resp == nil || resp.Error != "issue 12 not found" || resp.Result == nil {
				t.Errorf("Response = %+v; want the error and a non-nil result", resp)
			}
			// A controlled failure is an answer, not a broken worker.
			if _, err := inst.Execute(t.Context(), nil); err != nil {
				t.Errorf("call after a controlled failure: %v", err)
			}
			if err := closeInstance(t, inst); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestJSONFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		behaviour string
		deadline  time.Duration
		want      error
		stdout    string
	}{
		{"garbage", time.Minute, process.ErrBadOutput, "starting up"},
		{"twodocs", time.Minute, process.ErrBadOutput, `{"result":{}}`},
		{"flood", time.Minute, process.ErrOutputTooLarge, ""},
		{"exit3", time.Minute, process.ErrExitStatus, ""},
		{"spawner", 300 * time.Millisecond, context.DeadlineExceeded, ""},
	}
	for _, tt := range tests {
		t.Run(tt.behaviour, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig(t)
			cfg.MaxResponseBytes = 64 << 10
			b := newBackend(t, cfg)
			root, entry := runtimeFile(t, tt.behaviour)
			inst := start(t, b, spec(root, entry, capabilityruntime.ProtocolJSONV1, 0))
			ctx, cancel := context.WithTimeout(t.Context(), tt.deadline)
			defer cancel()
			resp, err := inst.Execute(ctx, nil)
			var ce *process.CallError
			if resp != nil || !errors.As(err, &ce) || !errors.Is(err, tt.want) {
				t.Fatalf("Execute = %v, %v; want a *CallError wrapping %v", resp, err, tt.want)
			}
			if !strings.HasPrefix(ce.Stdout, tt.stdout) {
				t.Errorf("CallError.Stdout = %q, want it to begin %q", ce.Stdout, tt.stdout)
			}
			if tt.behaviour == "exit3" && ce.ExitCode != 3 {
				t.Errorf("ExitCode = %d, want 3", ce.ExitCode)
			}
			if tt.behaviour == "spawner" {
				// The whole group went at the deadline, grandchild included.
				m := regexp.MustCompile(`grandchild (\d+)`).FindStringSubmatch(ce.Stderr)
				if m == nil {
					t.Fatalf("no grandchild pid in stderr %q", ce.Stderr)
				}
				pid, _ := strconv.Atoi(m[1])
				waitFor(t, "the grandchild to be gone", func() bool { return !alive(pid) })
			}
			requireNoLeftovers(t, entry, cfg.TempDir)
			if err := closeInstance(t, inst); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestUnsupportedValues(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{capabilityruntime.ProtocolV1, capabilityruntime.ProtocolJSONV1} {
		cfg := testConfig(t)
		b := newBackend(t, cfg)
		root, entry := runtimeFile(t, "echo")
		inst := start(t, b, spec(root, entry, protocol, 1))
		for _, v := range []any{math.NaN(), int64(1) << 60, make(chan int)} {
			_, err := inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"v": v}})
			if !errors.Is(err, process.ErrUnsupportedValue) || !strings.Contains(err.Error(), "params.v") {
				t.Errorf("%s: param %T: %v, want ErrUnsupportedValue naming params.v", protocol, v, err)
			}
		}
		if n := len(processes(entry)); n != 0 {
			t.Errorf("%s: refused params started %d processes", protocol, n)
		}
		if err := closeInstance(t, inst); err != nil {
			t.Fatal(err)
		}
	}
}

// TestChildEnvironmentAndDescriptors: a runtime sees only the allowlisted
// variables and its protocol's, RootDir as its working directory, its own
// process group, and descriptors 0–2 only, even when this process holds a
// descriptor without close-on-exec. (Beyond 0–2 the child lists what its own
// Go runtime opened before main, such as cgroup files and the poller: a bare
// exec of the same program, which does inherit this process's inheritable
// descriptors, less those, gives that baseline.)
func TestChildEnvironmentAndDescriptors(t *testing.T) {
	// Not parallel: it sets environment variables of the test process.
	t.Setenv("RUNTIMEIPC_TEST_SECRET", "hunter2")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "leak-me-not")
	t.Setenv("TZ", "Europe/Paris")
	leaky, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer leaky.Close()
	if err := clearCloexec(leaky.Fd()); err != nil {
		t.Fatal(err)
	}
	root, entry := runtimeFile(t, "echo")
	inherited := inheritable(t)
	if !slices.Contains(inherited, os.DevNull) {
		t.Fatalf("the stray descriptor is not inheritable: %q", inherited)
	}
	bare := exec.Command(entry)
	bare.Stdin = strings.NewReader(`{"params":{"introspect":true}}`)
	out, err := bare.Output()
	if err != nil {
		t.Fatal(err)
	}
	var baseline capabilityruntime.Response
	if err := json.Unmarshal(out, &baseline); err != nil {
		t.Fatal(err)
	}
	own := ownDescriptors(toStrings(baseline.Result["fds"]))
	for _, fd := range inherited {
		i := slices.Index(own, fd)
		if i < 0 {
			t.Fatalf("a bare exec did not inherit %s (it has %q): the check below proves nothing", fd, own)
		}
		own = slices.Delete(own, i, i+1)
	}

	cfg := testConfig(t)
	b := newBackend(t, cfg)
	var allowed []string
	for _, k := range process.EnvAllowlist() {
		if v, ok := os.LookupEnv(k); ok {
			allowed = append(allowed, k+"="+v)
		}
	}
	for _, protocol := range []string{capabilityruntime.ProtocolV1, capabilityruntime.ProtocolJSONV1} {
		t.Run(protocol, func(t *testing.T) {
			inst := start(t, b, spec(root, entry, protocol, 1))
			defer closeInstance(t, inst)
			resp, err := inst.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"introspect": true}})
			if err != nil {
				t.Fatal(err)
			}
			wantEnv := append([]string{}, allowed...)
			wantEnv = append(wantEnv,
				capabilityruntime.EnvProtocol+"="+protocol,
				capabilityruntime.EnvType+"=acme:"+fileBase(entry),
				capabilityruntime.EnvVersion+"=1.0.0",
			)
			wantFDs := []string{"0 /dev/null", "1 /dev/null", "2 pipe:"}
			if protocol == capabilityruntime.ProtocolV1 {
				// The socket lives in the worker's private directory.
				var socket string
				for _, kv := range toStrings(resp.Result["env"]) {
					if v, ok := strings.CutPrefix(kv, capabilityruntime.EnvSocket+"="); ok {
						socket = v
					}
				}
				if !strings.HasPrefix(socket, cfg.TempDir+"/neuron-capability-runtime-") || !strings.HasSuffix(socket, "/capability-runtime.sock") {
					t.Errorf("socket %q is not capability-runtime.sock in a private directory under %s", socket, cfg.TempDir)
				}
				dir := strings.TrimSuffix(socket, "capability-runtime.sock")
				wantEnv = append(wantEnv, capabilityruntime.EnvReady+"="+dir+"ready", capabilityruntime.EnvSocket+"="+socket)
			} else {
				wantFDs = []string{"0 pipe:", "1 pipe:", "2 pipe:"}
			}
			slices.Sort(wantEnv)
			if diff := cmp.Diff(wantEnv, toStrings(resp.Result["env"])); diff != "" {
				t.Errorf("runtime environment (-want +got):\n%s", diff)
			}
			fds := toStrings(resp.Result["fds"])
			if len(fds) < 3 {
				t.Fatalf("runtime descriptors at start: %q", fds)
			}
			for i, fd := range fds[:3] {
				if !strings.HasPrefix(fd, wantFDs[i]) {
					t.Errorf("descriptor %q, want %q…", fd, wantFDs[i])
				}
			}
			if diff := cmp.Diff(own, ownDescriptors(fds)); diff != "" {
				t.Errorf("descriptors above 2 differ from what the program opens itself (-own +got):\n%s", diff)
			}
			if resp.Result["cwd"] != root {
				t.Errorf("working directory %v, want the root %s", resp.Result["cwd"], root)
			}
			if resp.Result["pgid"] != resp.Result["pid"] {
				t.Errorf("pgid %v, pid %v: the runtime does not lead its own process group", resp.Result["pgid"], resp.Result["pid"])
			}
		})
	}
}

// ownDescriptors returns what the descriptors from 3 up point at, sorted,
// without inode numbers.
func ownDescriptors(fds []string) []string {
	var out []string
	for _, fd := range fds {
		num, target, _ := strings.Cut(fd, " ")
		if n, _ := strconv.Atoi(num); n < 3 {
			continue
		}
		if kind, _, ok := strings.Cut(target, ":["); ok && (kind == "pipe" || kind == "socket") {
			target = kind + ":"
		}
		out = append(out, target)
	}
	slices.Sort(out)
	return out
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, len(l))
	for i, e := range l {
		out[i], _ = e.(string)
	}
	return out
}

// TestNothingLeaks runs a round of everything (warm calls, a cancelled
// call, a crash, a failed start, one-shot calls, Close, Backend.Close) twice
// and requires, after the second, as many open descriptors as after the
// first and no child process at all. Not parallel: it counts this process's
// descriptors.
func TestNothingLeaks(t *testing.T) {
	round := func() {
		cfg := testConfig(t)
		b, err := process.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		root, entry := runtimeFile(t, "echo")
		pool := start(t, b, spec(root, entry, "", 2))
		one := start(t, b, spec(root, entry, capabilityruntime.ProtocolJSONV1, 0))
		_, bad := runtimeFile(t, "crashstart")
		broken := start(t, b, spec(root, bad, "", 1))
		for range 3 {
			for _, inst := range []capabilityruntime.BackendInstance{pool, one} {
				if _, err := inst.Execute(t.Context(), nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		pool.Execute(ctx, nil)
		pool.Execute(t.Context(), &capabilityruntime.Request{Params: map[string]any{"crash": true}})
		broken.Execute(t.Context(), nil)
		if err := closeInstance(t, one); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		requireNoLeftovers(t, entry, cfg.TempDir)
	}
	round()
	fds := leaktest.OpenFDs(t)
	round()
	waitFor(t, "descriptors and children to be released", func() bool {
		return leaktest.OpenFDs(t) <= fds && len(leaktest.Children(t)) == 0
	})
}
