package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testbin"
)

// zeoctlPath is the zeoctl binary, built once by TestMain.
var zeoctlPath string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "zeoctl-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if zeoctlPath, err = testbin.Build(dir, "zeoctl", "."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// result is one run of zeoctl.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// zeoctl runs the binary with args, bounded by the test's deadline.
func zeoctl(t *testing.T, args ...string) result {
	t.Helper()
	return zeoctlAt(t, zeoctlPath, t.TempDir(), args...)
}

// zeoctlAt runs the zeoctl binary at exe with args and TMPDIR tmp, which
// must be empty again when it exits.
func zeoctlAt(t *testing.T, exe, tmp string, args ...string) result {
	t.Helper()
	r, err := tryZeoctlAt(t, exe, tmp, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// zeoctlAll runs zeoctl once for each argument list, all at once, and
// returns their results in order: for commands that each wait.
func zeoctlAll(t *testing.T, argLists ...[]string) []result {
	t.Helper()
	rs := make([]result, len(argLists))
	errs := make([]error, len(argLists))
	var wg sync.WaitGroup
	for i, args := range argLists {
		wg.Go(func() { rs[i], errs[i] = tryZeoctlAt(t, zeoctlPath, t.TempDir(), args...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return rs
}

// tryZeoctlAt is zeoctlAt, with a failure to run zeoctl at all returned
// instead of ending the test, so that it can run off the test's
// goroutine.
func tryZeoctlAt(t *testing.T, exe, tmp string, args ...string) (result, error) {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-5*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Dir = t.TempDir()
	// A TMPDIR of its own, which must be empty again when zeoctl exits:
	// every temporary file and directory it makes is its to remove.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return result{}, fmt.Errorf("zeoctl %s: %w", strings.Join(args, " "), err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("zeoctl %s left %d entries in TMPDIR, e.g. %s", strings.Join(args, " "), len(left), left[0].Name())
	}
	return result{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}, nil
}

// wantRun checks the exit code and that stdout and stderr contain the
// given fragments.
func wantRun(t *testing.T, r result, code int, stdout, stderr []string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\n%s", r.code, code, r)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q\n%s", s, r)
		}
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr lacks %q\n%s", s, r)
		}
	}
}

// commandNames are every command, as 'zeoctl help' lists them.
func commandNames(t *testing.T) []string {
	t.Helper()
	r := zeoctl(t, "help")
	var names []string
	inList := false
	for _, line := range strings.Split(r.stdout, "\n") {
		switch {
		case line == "Commands:":
			inList = true
		case inList && strings.HasPrefix(line, "\t"):
			fields := strings.Split(strings.TrimSpace(line), "  ")
			names = append(names, strings.TrimSpace(fields[0]))
		}
	}
	if len(names) == 0 {
		t.Fatalf("'zeoctl help' lists no commands\n%s", r)
	}
	return names
}

// groups are the groups of commands among names ("catalogue",
// "catalogue consent"), each with the names of its commands in order.
func groups(names []string) map[string][]string {
	out := map[string][]string{}
	for _, name := range names {
		words := strings.Fields(name)
		for n := 1; n < len(words); n++ {
			prefix := strings.Join(words[:n], " ")
			out[prefix] = append(out[prefix], name)
		}
	}
	return out
}

func TestHelp(t *testing.T) {
	t.Parallel()
	wantRun(t, zeoctl(t), 2, nil, []string{"Commands:", "describe", "zeoctl help <command>"})
	wantRun(t, zeoctl(t, "-h"), 0, []string{"Commands:", "doctor"}, nil)
	wantRun(t, zeoctl(t, "help", "exit"), 0, []string{"0  the command did what was asked", "3  "}, nil)
	wantRun(t, zeoctl(t, "help", "capabilities"), 0, []string{"capabilities list", "capabilities describe"}, nil)
	wantRun(t, zeoctl(t, "help", "nonsense"), 2, nil, []string{`unknown help topic "nonsense"`})
	names := commandNames(t)
	for prefix, members := range groups(names) {
		for _, h := range []string{"-h", "--help", "help"} {
			t.Run(prefix+" "+h, func(t *testing.T) {
				r := zeoctl(t, append(strings.Fields(prefix), h)...)
				wantRun(t, r, 0, []string{"zeoctl " + prefix + " has these commands"}, nil)
				if r.stderr != "" {
					t.Errorf("%s wrote on stderr\n%s", h, r)
				}
				var listed []string
				for _, line := range strings.Split(r.stdout, "\n") {
					if strings.HasPrefix(line, "\t") {
						listed = append(listed, strings.TrimSpace(strings.Split(strings.TrimSpace(line), "  ")[0]))
					}
				}
				if diff := cmp.Diff(members, listed); diff != "" {
					t.Errorf("commands listed, one a line (-want +got):\n%s", diff)
				}
			})
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			args := append(strings.Fields(name), "-h")
			r := zeoctl(t, args...)
			wantRun(t, r, 0, []string{"usage: zeoctl " + name}, nil)
			if r.stderr != "" {
				t.Errorf("-h wrote on stderr\n%s", r)
			}
			wantRun(t, zeoctl(t, append([]string{"help"}, strings.Fields(name)...)...), 0, []string{"usage: zeoctl " + name}, nil)
		})
	}
}

// TestHelpHost checks that the hidden host mode's help names every
// ZEO_HOSTSIM_* setting the simulated host reads.
func TestHelpHost(t *testing.T) {
	t.Parallel()
	wantRun(t, zeoctl(t, "help", "host"), 0, []string{"__host", "internal", "ZEO_HOSTSIM_PYTHON_VERSION",
		"ZEO_HOSTSIM_DISTRIBUTION", "ZEO_HOSTSIM_VERSION", "ZEO_HOSTSIM_SCENARIO", "hang-before-publish"}, nil)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"capabilities"}, "expected one of: list, describe"},
		{[]string{"describe"}, "choose the host: -python PATH"},
		{[]string{"describe", "-simulated", "-python", "/usr/bin/python3"}, "alternatives; give one"},
		{[]string{"describe", "-python", "/usr/bin/python3"}, "-binding FILE is required"},
		{[]string{"describe", "-simulated", "extra"}, `unexpected argument "extra"`},
		{[]string{"describe", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"describe", "-simulated", "-env", "NOEQUALS"}, `-env "NOEQUALS": want KEY=VALUE`},
		{[]string{"capabilities", "list", "-simulated", "-limit", "0"}, "-limit must be 1..100"},
		{[]string{"capabilities", "describe", "-simulated"}, "want exactly one capability ID"},
		{[]string{"capabilities", "describe", "-simulated", "echo"}, `"echo" is not a capability id`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			r := zeoctl(t, tt.args...)
			wantRun(t, r, 2, nil, []string{tt.stderr})
			if len(tt.args) > 0 && tt.args[0] != "frobnicate" && tt.args[0] != "capabilities" || len(tt.args) > 1 {
				wantRun(t, r, 2, nil, []string{"Run 'zeoctl help "})
			}
		})
	}
}
