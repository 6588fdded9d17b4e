//go:build linux

package hostproc_test

import (
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch/contain"
)

// hostMarker is the argument that makes this test binary the simulated
// host, as zeoctl's hidden host mode does.
const hostMarker = "__hostproc_test_host"

func TestMain(m *testing.M) {
	contain.Init() // the contained hosts of these tests start as this binary
	hostproc.MainIf(hostMarker)
	os.Exit(m.Run())
}

// settings are every environment variable and scenario the host knows.
func settings() []string {
	return append([]string{hostproc.EnvPythonVersion, hostproc.EnvDistribution, hostproc.EnvVersion,
		hostproc.EnvScenario}, hostproc.ScenarioNames()...)
}

// TestSettingsDocumented checks that the package documentation and Usage
// both name every setting, so that neither can fall behind the code.
func TestSettingsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	pkgDoc := f.Doc.Text()
	usage := hostproc.Usage()
	for _, s := range settings() {
		if !strings.Contains(pkgDoc, s) {
			t.Errorf("the package documentation does not name %s", s)
		}
		if !strings.Contains(usage, s) {
			t.Errorf("Usage does not name %s", s)
		}
	}
}

// host runs the test binary as the simulated host with args and env.
func host(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d)
	}
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{hostMarker}, args...)...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

func TestUnknownScenarioRefused(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := host(t, []string{hostproc.EnvScenario + "=hnag"}, "describe")
	if code != 8 || !strings.Contains(stdout, `"state":"protocol_error"`) {
		t.Errorf("exit %d, stdout %q; want protocol_error and exit 8", code, stdout)
	}
	if !strings.Contains(stderr, `"hnag"`) || !strings.Contains(stderr, "hang-ignore-term") {
		t.Errorf("stderr %q does not name the unknown scenario and the known ones", stderr)
	}
}

func TestBadCommandLine(t *testing.T) {
	t.Parallel()
	stdout, _, code := host(t, nil, "frobnicate")
	if code != 2 || !strings.Contains(stdout, `"state":"invalid_request"`) {
		t.Errorf("exit %d, stdout %q; want invalid_request and exit 2", code, stdout)
	}
}

func TestMarkerArgs(t *testing.T) {
	for _, tt := range []struct {
		name         string
		osArgs, args []string
		want         []string
	}{
		{"no marker", []string{"zeo-hostsim", "invoke", "--context-fd", "3"}, []string{"invoke", "--context-fd", "3"}, []string{}},
		{"marker", []string{"zeoctl", "__host", "describe"}, []string{"describe"}, []string{"__host"}},
		{"no arguments", []string{"zeoctl", "__host"}, []string{}, []string{"__host"}},
		{"not a suffix", []string{"zeoctl", "__host", "describe"}, []string{"doctor"}, nil},
		{"longer than os.Args", []string{"zeoctl"}, []string{"a", "b"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := hostproc.MarkerArgs(tt.osArgs, tt.args)
			if strings.Join(got, " ") != strings.Join(tt.want, " ") || (got == nil) != (tt.want == nil) {
				t.Errorf("MarkerArgs(%q, %q) = %#v, want %#v", tt.osArgs, tt.args, got, tt.want)
			}
		})
	}
}
