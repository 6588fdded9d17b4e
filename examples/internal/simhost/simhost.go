// Package simhost gives the examples their provider host: the module's
// simulated host, run by the example's own executable re-executed with
// Marker. It is the one part of an example to replace for a real provider:
// there, launch.Config.Interpreter is the provider environment's python,
// Args {"-m", "zeo_core.adapters.runtime_host"}, and the Verifier a
// launch.TreeVerifier of that environment.
package simhost

import (
	"os"

	"github.com/zeoruntime/runtimeipc/internal/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Marker is the first argument that makes an example's executable the
// simulated host.
const Marker = "__example_host"

// MainIf makes the process the containment init of a host it launched
// (launch.Init) or the simulated host, and does not return then. Call it
// first in main, and in TestMain.
func MainIf() {
	launch.Init()
	hostproc.MainIf(Marker)
}

// Launcher returns a launcher whose host is the simulated host, with env
// as the host's whole environment, working in a fresh temporary directory
// that cleanup removes.
func Launcher(env ...string) (l *launch.Launcher, cleanup func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "example-host-")
	if err != nil {
		return nil, nil, err
	}
	l, err = launch.New(launch.Config{Interpreter: self, Args: []string{Marker}, Env: env, Dir: dir,
		Verifier:      launch.TrustEnvironment{},
		AllowRootHost: true}) // the simulated host runs as whoever runs the example, root included
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return l, func() { os.RemoveAll(dir) }, nil
}

// PythonVersion is the interpreter version the simulated host reports,
// what supervise.Config.HostPythonVersion names; a real provider's is its
// interpreter's platform.python_version().
const PythonVersion = hostsim.DefaultPythonVersion

// Binding is the simulated provider's binding, the one in
// testdata/examples/binding.json; a real provider's comes from
// manifest.DecodeBinding of its file.
func Binding() manifest.ProviderBinding { return hostsim.DemoBinding() }
