package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/launch/discovery"
	"github.com/zeoruntime/runtimeipc/launch/environment"
)

func doctorCommand() *command {
	return &command{
		name:      "doctor",
		usageLine: "doctor (-python PATH | -host PATH | -simulated) [-binding FILE] [-env-root DIR]",
		short:     "check that a provider binding will run on a host, and say what to fix",
		long: `Doctor checks, one by one, what must hold before a capability of the binding
can run, and for each failure says what to change:

  binding       the file decodes and passes the inventory validation the host applies
  interpreter   the host's Python version equals the binding's python_version
  distribution  the installed distribution and version equal the binding's
  environment   the environment_digest matches the -env-root tree (only with -env-root)
  host          the host's own 'doctor' accepts the binding

The interpreter and distribution are asked of the -python interpreter (or of
the interpreter named on the -host script's #! line) with the same
environment the host gets; these are mismatches the host would otherwise
report only as a bare protocol_error after launch. Doctor exits 1 when a
check fails.
` + discoveryHelpTail,
		flags: withDiscoveryFlags(func(ctx context.Context, e *env, d *discoveryFlags, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if err := d.host.check(); err != nil {
				return err
			}
			return doctor(ctx, e, d)
		}),
	}
}

// check is one doctor line.
type check struct {
	Name   string `json:"check"`
	OK     bool   `json:"ok"`
	Skip   bool   `json:"skipped,omitempty"`
	Detail string `json:"detail"`
}

func doctor(ctx context.Context, e *env, d *discoveryFlags) error {
	var checks []check
	add := func(c check) {
		checks = append(checks, c)
		if d.json {
			return
		}
		mark := "ok  "
		switch {
		case c.Skip:
			mark = "skip"
		case !c.OK:
			mark = "FAIL"
		}
		fmt.Fprintf(e.stdout, "%s  %-13s %s\n", mark, c.Name, c.Detail)
	}
	defer func() {
		if d.json {
			printJSON(e.stdout, checks)
		}
	}()

	source := d.host.binding
	if source == "" {
		source = "the simulated provider's binding"
	}
	b, err := d.host.loadBinding()
	if err != nil {
		add(check{Name: "binding", Detail: err.Error()})
		return errors.New("the binding is not usable; fix it first (the other checks need it)")
	}
	add(check{Name: "binding", OK: true, Detail: fmt.Sprintf("%s: %s %s, %d capabilities, manifest digest %s",
		source, b.Distribution, b.Version, len(b.Manifests), b.ManifestDigest)})

	e.progress("asking %s for its Python and %s versions", d.host.describeHost(), b.Distribution)
	inst, how, err := d.host.installation(ctx, b.Distribution)
	switch {
	case err != nil:
		add(check{Name: "interpreter", Detail: err.Error()})
	case inst.Python == "":
		add(check{Name: "interpreter", Skip: true, OK: true, Detail: how})
	case inst.Python != b.PythonVersion:
		add(check{Name: "interpreter", Detail: fmt.Sprintf("%s is Python %s but the binding names python_version %q: rebuild the binding on this interpreter, or point -python at a Python %s",
			how, inst.Python, b.PythonVersion, b.PythonVersion)})
	default:
		add(check{Name: "interpreter", OK: true, Detail: fmt.Sprintf("Python %s (%s)", inst.Python, how)})
	}
	switch {
	case err != nil || inst.Python == "":
		add(check{Name: "distribution", Skip: true, OK: true, Detail: "not checked (see interpreter)"})
	case inst.Version == "":
		add(check{Name: "distribution", Detail: fmt.Sprintf("%s is not installed for this interpreter: install %s==%s in the provider environment",
			b.Distribution, b.Distribution, b.Version)})
	case inst.Version != b.Version:
		add(check{Name: "distribution", Detail: fmt.Sprintf("%s %s is installed but the binding names %s: install %s==%s or rebuild the binding",
			b.Distribution, inst.Version, b.Version, b.Distribution, b.Version)})
	default:
		add(check{Name: "distribution", OK: true, Detail: b.Distribution + " " + inst.Version})
	}

	if d.host.envRoot == "" {
		add(check{Name: "environment", Skip: true, OK: true, Detail: "not checked (pass -env-root DIR, the provider's virtual environment, to compare its digest)"})
	} else {
		e.progress("digesting %s", d.host.envRoot)
		root, _ := filepath.Abs(d.host.envRoot)
		if err := (environment.TreeVerifier{Root: root}).VerifyEnvironment(ctx, b); err != nil {
			add(check{Name: "environment", Detail: err.Error() + ": rebuild the binding's environment_digest from this tree, or point -env-root at the environment it was made from"})
		} else {
			add(check{Name: "environment", OK: true, Detail: string(b.EnvironmentDigest)})
		}
	}

	l, cleanup, err := d.host.launcher(&env{stdout: e.stdout, stderr: io.Discard})
	if err != nil {
		add(check{Name: "host", Detail: err.Error()})
	} else {
		defer cleanup()
		hctx, cancel := withTimeout(ctx, d.timeout)
		defer cancel()
		e.progress("asking %s to run doctor", d.host.describeHost())
		if desc, err := discovery.Doctor(hctx, l, b); err != nil {
			add(check{Name: "host", Detail: discoveryHint(err, true).Error()})
		} else {
			add(check{Name: "host", OK: true, Detail: fmt.Sprintf("%s (authorized: %t)", desc.Readiness, desc.Authorized)})
		}
	}

	failed := 0
	for _, c := range checks {
		if !c.OK {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(checks))
	}
	return nil
}

// installation is what an interpreter reports about itself.
type installation struct {
	Python  string `json:"python"`
	Version string `json:"version"` // of the distribution; "" when not installed
}

// probeScript prints the interpreter's version and the version of the
// distribution named by argv[1] (null when it is not installed).
const probeScript = `import json, platform, sys
try:
    import importlib.metadata as m
    v = m.version(sys.argv[1])
except Exception:
    v = None
print(json.dumps({"python": platform.python_version(), "version": v}))`

// installation asks the host's interpreter for its Python version and the
// installed version of dist. An empty Python with a nil error means it
// cannot be asked (how says why).
func (h *hostFlags) installation(ctx context.Context, dist string) (inst installation, how string, err error) {
	if h.simulated {
		python, installed, version := hostsim.DefaultPythonVersion, hostsim.DefaultDistribution, hostsim.DefaultVersion
		for _, kv := range h.env {
			switch k, v, _ := strings.Cut(kv, "="); k {
			case hostproc.EnvPythonVersion:
				python = v
			case hostproc.EnvDistribution:
				installed = v
			case hostproc.EnvVersion:
				version = v
			}
		}
		inst.Python = python
		if installed == dist {
			inst.Version = version
		}
		return inst, "the simulated host", nil
	}
	python := h.python
	if python == "" {
		python = shebang(h.hostExe)
		if python == "" {
			return inst, "not checked: " + h.hostExe + " has no #! line naming its interpreter; use -python to check", nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", probeScript, dist)
	cmd.Env = h.env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return inst, python, fmt.Errorf("running %s to ask its version: %w (%s); check that -python names the provider environment's interpreter",
			python, err, strings.TrimSpace(lastLines(stderr.String(), 3)))
	}
	var got struct {
		Python  string  `json:"python"`
		Version *string `json:"version"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil || got.Python == "" {
		return inst, python, fmt.Errorf("%s answered %q to a version probe; is it a Python interpreter?", python, strings.TrimSpace(string(out)))
	}
	inst.Python = got.Python
	if got.Version != nil {
		inst.Version = *got.Version
	}
	return inst, python, nil
}

// shebang returns the absolute interpreter a script's #! line names, or "".
func shebang(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 || !filepath.IsAbs(fields[0]) || strings.HasSuffix(fields[0], "/env") {
		return ""
	}
	return fields[0]
}
