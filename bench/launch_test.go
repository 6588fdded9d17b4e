package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/zeoruntime/runtimeipc/bench/pluginshared"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
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
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			b.Fatal(err)
		}
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
// refused and exit code 3 (spec §4.10).
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
	raw, err := os.ReadFile("../testdata/real-host/s01_echo_success.json")
	if err != nil {
		b.Fatal(err)
	}
	var rh struct {
		FD3   string `json:"fd3_bytes_utf8"`
		Stdin string `json:"stdin_bytes_utf8"`
	}
	if err := json.Unmarshal(raw, &rh); err != nil {
		b.Fatal(err)
	}
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
//     links none of the host's packages: go-plugin's own floor.
func BenchmarkLaunch(b *testing.B) {
	dir := b.TempDir()
	hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/hostsim/cmd/zeo-hostsim", true)
	pluginBin := buildTool(b, dir, "pluginecho", "./pluginecho", false)
	hostPluginBin := buildTool(b, dir, "pluginhost", "./pluginhost", false)
	work := b.TempDir()

	l, err := launch.New(launch.Config{
		Interpreter: hostsim, Dir: work, Verifier: launch.TrustEnvironment{},
		Env: []string{"ZEO_HOSTSIM_PYTHON_VERSION=3.11.7"},
	})
	if err != nil {
		b.Fatal(err)
	}
	inv := echoInvocation(b)

	b.Run("Hostsim", func(b *testing.B) {
		benchInvoke(b, l, inv, launch.StateSucceeded, 0)
	})

	b.Run("Bootstrap", func(b *testing.B) {
		refused := inv
		refused.Handler = refuseBootstrap{}
		benchInvoke(b, l, refused, launch.StateRefused, 3)
	})

	b.Run("BareExec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cmd := exec.Command(hostsim)
			cmd.Env = []string{}
			cmd.Dir = work
			cmd.Stdout = io.Discard
			if err := cmd.Run(); err != nil {
				if _, ok := err.(*exec.ExitError); !ok {
					b.Fatal(err)
				}
			}
		}
	})

	// The floors of the go-plugin rows: each plugin executable run without
	// the handshake cookie, so go-plugin's Serve refuses at once (exit 1).
	for _, floor := range []struct{ name, bin string }{
		{"PluginBareExec", pluginBin}, {"PluginHostBareExec", hostPluginBin},
	} {
		b.Run(floor.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cmd := exec.Command(floor.bin)
				cmd.Env = []string{}
				cmd.Dir = work
				cmd.Stdout = io.Discard
				cmd.Stderr = io.Discard
				if err := cmd.Run(); err != nil {
					if _, ok := err.(*exec.ExitError); !ok {
						b.Fatal(err)
					}
				}
			}
		})
	}

	// The equivalent plugin: one call does the simulated host's own work
	// for the same context and request (see pluginhost).
	hostArgs := pluginshared.InvokeArgs{Context: invocationContext(b, inv), Request: inv.Request}
	b.Run("GoPlugin", func(b *testing.B) {
		benchGoPlugin(b, hostPluginBin, pluginshared.HostHandshake, "host", &pluginshared.HostPlugin{}, func(raw any) error {
			rep, err := raw.(pluginshared.Invoker).Invoke(hostArgs)
			if err != nil {
				return err
			}
			if string(rep.Data) != `{"text":"hello"}` || rep.DataDigest != string(canon.Sum(rep.Data)) {
				return fmt.Errorf("reply %s %s", rep.Data, rep.DataDigest)
			}
			return nil
		})
	})

	// The light plugin: one call that only echoes.
	b.Run("GoPluginEcho", func(b *testing.B) {
		benchGoPlugin(b, pluginBin, pluginshared.Handshake, "echo", &pluginshared.EchoPlugin{}, func(raw any) error {
			got, err := raw.(pluginshared.Echoer).Echo("hello")
			if err == nil && got != "hello" {
				err = fmt.Errorf("echo %q", got)
			}
			return err
		})
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

// benchGoPlugin starts the go-plugin executable bin, dispenses the plugin
// name, makes one call and kills it, b.N times.
func benchGoPlugin(b *testing.B, bin string, hs plugin.HandshakeConfig, name string, p plugin.Plugin, call func(any) error) {
	logger := hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off})
	// Killing the plugin after its call makes yamux, underneath net/rpc,
	// print "[ERR] yamux: Failed to write header", sometimes after the
	// loop, to the os.Stderr its default config captured when the client
	// was made; that would interleave with the benchmark lines. The clients
	// made here capture /dev/null instead.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = null
	defer func() { os.Stderr = stderr; null.Close() }()
	b.ReportAllocs()
	for b.Loop() {
		client := plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig:  hs,
			Plugins:          map[string]plugin.Plugin{name: p},
			Cmd:              exec.Command(bin),
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolNetRPC},
			Logger:           logger,
		})
		rpcClient, err := client.Client()
		if err != nil {
			client.Kill()
			b.Fatal(err)
		}
		raw, err := rpcClient.Dispense(name)
		if err != nil {
			client.Kill()
			b.Fatal(err)
		}
		if err := call(raw); err != nil {
			client.Kill()
			b.Fatal(err)
		}
		client.Kill()
	}
}

// benchInvoke runs inv through l b.N times, checking the state and exit
// code of each result, and reports child-ns/op: the time from start to reap
// of the host process. The rest of ns/op is the launcher's own work around
// it (context and stdin preparation, descriptors, the session, reaping,
// result parsing).
func benchInvoke(b *testing.B, l *launch.Launcher, inv launch.Invocation, want launch.State, code int) {
	ctx := context.Background()
	var child time.Duration
	b.ReportAllocs()
	for b.Loop() {
		out, err := l.Invoke(ctx, inv)
		if err != nil {
			b.Fatal(err)
		}
		if out.Result.State != want || out.Process.ExitCode != code {
			b.Fatalf("state %s exit %d, want %s exit %d", out.Result.State, out.Process.ExitCode, want, code)
		}
		child += out.Process.Elapsed
	}
	b.ReportMetric(float64(child.Nanoseconds())/float64(b.N), "child-ns/op")
}
