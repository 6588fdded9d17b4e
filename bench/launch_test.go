package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/zeoruntime/runtimeipc/bench/pluginshared"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/childproc"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

// buildTool builds a main package into dir: pkg relative to the module root
// when root is set, else to the bench module. Every executable compared here
// is built the same way: -trimpath and CGO_ENABLED=0, so each is a static
// binary that the kernel maps and starts without the dynamic loader (the
// net package would otherwise link libc for its resolver, which none of
// these programs uses). What differs between the rows is then only what the
// programs do.
func buildTool(b *testing.B, dir, name, pkg string, root bool) string {
	b.Helper()
	// go test puts the bin directory of the go tool running the
	// benchmarks first on PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if root {
		cmd.Dir = ".."
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("building %s: %v", pkg, err)
	}
	return out
}

type allowAll struct{}

// refuseBootstrap answers the bootstrap refused: the host then ends the
// invocation right after that one exchange, before activation, with state
// refused and exit code 3 (doc/protocol.md, “Host endings”).
type refuseBootstrap struct{ allowAll }

func (refuseBootstrap) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateRefused}, nil
}

func (allowAll) Bootstrap(context.Context, ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (allowAll) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (allowAll) Effect(_ context.Context, c ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{State: ipc.StateAllowed, ReceiptID: "r", AuthorizationID: "a"}, nil
}
func (allowAll) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return ipc.PublishDecision{State: ipc.StateAllowed, ArtifactRefs: []string{"artifact-a"}}, nil
}

// echoInvocation is the recorded echo invocation of the real-host
// transcript s01 (context, request), answered by an allow-all Runtime.
func echoInvocation(b *testing.B) launch.Invocation {
	b.Helper()
	rh := testvectors.RealHost[struct {
		FD3   string `json:"fd3_bytes_utf8"`
		Stdin string `json:"stdin_bytes_utf8"`
	}](b, "s01_echo_success")
	c, err := launch.DecodeContext([]byte(rh.FD3))
	if err != nil {
		b.Fatal(err)
	}
	return launch.Invocation{Context: c, Request: []byte(rh.Stdin), Handler: allowAll{}}
}

// BenchmarkLaunch compares, on the same machine in one run:
//
//   - Hostsim: launch → bootstrap → invoke.admit → result.publish → HostResult
//     of the simulated host executable through launch.Invoke: the whole
//     invocation, including the simulated host's own work (binding and
//     schema validation, request preparation, response validation);
//   - Bootstrap: launch → bootstrap → HostResult, the handler refusing the
//     bootstrap, so the host ends after that one exchange, before
//     activation, with state refused and exit code 3: the launcher, one IPC
//     exchange and result parsing around the host's fixed startup;
//   - BareExec: exec + wait of the same executable doing nothing (no
//     arguments: it prints its invalid_request line and exits), the floor
//     any launcher pays;
//   - PluginBareExec, PluginHostBareExec: exec + wait of the go-plugin echo
//     and host executables refusing to start (no handshake cookie), the
//     floors of the two go-plugin rows;
//   - GoPlugin: hashicorp/go-plugin v1.8.0 starting the equivalent Go
//     plugin (net/rpc), dispensing it, making one call that does the
//     simulated host's own work for the same context and request (see
//     pluginhost), and killing it;
//   - GoPluginEcho: the same with a plugin whose call only echoes, which
//     links none of the host's packages: go-plugin's own floor;
//   - Paired: one Hostsim, one BareExec, one GoPlugin and one GoPluginEcho
//     in turn in every iteration, reported as hostsim-, bare-, goplugin-
//     and echo-ns/op and the ratios x-bare and x-goplugin. The rows above
//     run one after another for seconds each, and on a shared machine the
//     load drifts between them; here every ratio is of runs interleaved
//     within milliseconds.
func BenchmarkLaunch(b *testing.B) {
	dir := b.TempDir()
	hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
	pluginBin := buildTool(b, dir, "pluginecho", "./pluginecho", false)
	hostPluginBin := buildTool(b, dir, "pluginhost", "./pluginhost", false)
	work := b.TempDir()

	l, err := launch.New(launch.Config{
		Interpreter: hostsim, Dir: work, Verifier: environment.Trust{}, AllowRootHost: true,
		Env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.11.7"},
		// Uncontained, as these rows always were; BenchmarkContainment
		// measures what containment adds.
		Containment: contain.Config{Off: contain.AllLayers},
	})
	if err != nil {
		b.Fatal(err)
	}
	inv := echoInvocation(b)
	refused := inv
	refused.Handler = refuseBootstrap{}
	hostArgs := pluginshared.InvokeArgs{Context: invocationContext(b, inv), Request: inv.Request}

	// Each run does one operation and returns the host's own lifetime
	// where it has one.
	full := func(b *testing.B) time.Duration { return invokeOnce(b, l, inv, launch.StateSucceeded, 0) }
	bootstrap := func(b *testing.B) time.Duration { return invokeOnce(b, l, refused, launch.StateRefused, 3) }
	bare := func(bin string) func(b *testing.B) time.Duration {
		return func(b *testing.B) time.Duration { bareExecOnce(b, bin, work); return 0 }
	}
	// The equivalent plugin: one call does the simulated host's own work
	// for the same context and request (see pluginhost).
	hostPlugin := func(b *testing.B) time.Duration {
		goPluginOnce(b, hostPluginBin, pluginshared.HostHandshake, "host", &pluginshared.HostPlugin{}, func(raw any) error {
			rep, err := raw.(pluginshared.Invoker).Invoke(hostArgs)
			if err != nil {
				return err
			}
			if string(rep.Data) != `{"text":"hello"}` || rep.DataDigest != string(canon.Sum(rep.Data)) {
				return fmt.Errorf("reply %s %s", rep.Data, rep.DataDigest)
			}
			return nil
		})
		return 0
	}
	// The light plugin: one call that only echoes.
	echoPlugin := func(b *testing.B) time.Duration {
		goPluginOnce(b, pluginBin, pluginshared.Handshake, "echo", &pluginshared.EchoPlugin{}, func(raw any) error {
			got, err := raw.(pluginshared.Echoer).Echo("hello")
			if err == nil && got != "hello" {
				err = fmt.Errorf("echo %q", got)
			}
			return err
		})
		return 0
	}

	defer quietStderr(b)()
	for _, row := range []struct {
		name  string
		run   func(*testing.B) time.Duration
		child bool
	}{
		{"Hostsim", full, true},
		{"Bootstrap", bootstrap, true},
		{"BareExec", bare(hostsim), false},
		{"PluginBareExec", bare(pluginBin), false},
		{"PluginHostBareExec", bare(hostPluginBin), false},
		{"GoPlugin", hostPlugin, false},
		{"GoPluginEcho", echoPlugin, false},
	} {
		b.Run(row.name, func(b *testing.B) {
			var child time.Duration
			b.ReportAllocs()
			for b.Loop() {
				child += row.run(b)
			}
			if row.child {
				b.ReportMetric(float64(child.Nanoseconds())/float64(b.N), "child-ns/op")
			}
		})
	}

	b.Run("Paired", func(b *testing.B) {
		runs := []struct {
			metric string
			run    func(*testing.B) time.Duration
			total  time.Duration
		}{{"hostsim", full, 0}, {"bare", bare(hostsim), 0}, {"goplugin", hostPlugin, 0}, {"echo", echoPlugin, 0}}
		for b.Loop() {
			for i := range runs {
				start := time.Now()
				runs[i].run(b)
				runs[i].total += time.Since(start)
			}
		}
		for _, r := range runs {
			b.ReportMetric(float64(r.total.Nanoseconds())/float64(b.N), r.metric+"-ns/op")
		}
		b.ReportMetric(float64(runs[0].total)/float64(runs[1].total), "x-bare")
		b.ReportMetric(float64(runs[0].total)/float64(runs[2].total), "x-goplugin")
	})
}

// invocationContext is the LaunchContext bytes the launcher writes on FD 3
// for inv.
func invocationContext(b *testing.B, inv launch.Invocation) []byte {
	b.Helper()
	enc, err := inv.Context.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return enc.Bytes
}

// quietStderr points os.Stderr at /dev/null until the returned function
// runs. Killing a go-plugin plugin after its call makes yamux, underneath
// net/rpc, print "[ERR] yamux: Failed to write header", sometimes after
// the loop, to the os.Stderr its default config captured when the client
// was made; that would interleave with the benchmark lines. Clients made
// meanwhile capture /dev/null instead.
func quietStderr(b *testing.B) func() {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = null
	return func() { os.Stderr = stderr; null.Close() }
}

// goPluginOnce starts the go-plugin executable bin, dispenses the plugin
// name, makes one call and kills it.
func goPluginOnce(b *testing.B, bin string, hs plugin.HandshakeConfig, name string, p plugin.Plugin, call func(any) error) {
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  hs,
		Plugins:          map[string]plugin.Plugin{name: p},
		Cmd:              exec.Command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolNetRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
	})
	defer client.Kill()
	rpcClient, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpcClient.Dispense(name)
	if err != nil {
		b.Fatal(err)
	}
	if err := call(raw); err != nil {
		b.Fatal(err)
	}
}

// bareExecOnce runs bin with no arguments and an empty environment in dir,
// and waits for it: the floor of any launch.
func bareExecOnce(b *testing.B, bin, dir string) {
	cmd := exec.Command(bin)
	cmd.Env = []string{}
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	cmd.Stderr = io.Discard
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			b.Fatal(err)
		}
	}
}

// invokeOnce runs inv through l, checks the state and exit code of its
// result, and returns the host process's lifetime, start to reap. The rest
// of the call is the launcher's own work around it (context and stdin
// preparation, descriptors, the session, reaping, result parsing).
func invokeOnce(b *testing.B, l *launch.Launcher, inv launch.Invocation, want launch.State, code int) time.Duration {
	out, err := l.Invoke(context.Background(), inv)
	if err != nil {
		b.Fatal(err)
	}
	if out.Result.State != want || out.Process.ExitCode != code {
		b.Fatalf("state %s exit %d, want %s exit %d", out.Result.State, out.Process.ExitCode, want, code)
	}
	return out.Process.Elapsed
}

// BenchmarkLaunchChildClose measures what closing every descriptor but
// 0–4 in the child costs a launch (the launcher pads ExtraFiles with nil
// entries up to childproc.ChildFDBound, and the child closes each number
// between fork and exec): in every iteration it runs the bare exec of the
// simulated host twice, once padded as the launcher does and once not,
// and reports both and their ratio. bound-ns/op is the parent's part,
// finding the bound (listing /proc/self/fd).
//
//	cd bench && go test -run '^$' -bench LaunchChildClose -count 5
func BenchmarkLaunchChildClose(b *testing.B) {
	hostsim := buildTool(b, b.TempDir(), "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
	work := b.TempDir()
	run := func(pad bool) time.Duration {
		start := time.Now()
		cmd := exec.Command(hostsim)
		cmd.Env = []string{}
		cmd.Dir = work
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if pad {
			n, err := childproc.ChildFDBound()
			if err != nil {
				b.Fatal(err)
			}
			cmd.ExtraFiles = make([]*os.File, n-3)
		}
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	var padded, plain, bound time.Duration
	closes := 0
	for b.Loop() {
		padded += run(true)
		plain += run(false)
		start := time.Now()
		n, _ := childproc.ChildFDBound()
		bound += time.Since(start)
		closes = n - 5
	}
	b.ReportMetric(float64(padded.Nanoseconds())/float64(b.N), "padded-ns/op")
	b.ReportMetric(float64(plain.Nanoseconds())/float64(b.N), "plain-ns/op")
	b.ReportMetric(float64(padded)/float64(plain), "x-plain")
	b.ReportMetric(float64(bound.Nanoseconds())/float64(b.N), "bound-ns/op")
	b.ReportMetric(float64(closes), "child-closes")
}
