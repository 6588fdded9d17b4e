package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// edgeLedger is a ledger file made once for TestCLIEdges by invoke with
// the defaults of -org and -project: operation op-edge, with effect-1
// unknown (-effects uncertain), and operation op-echo, succeeded with an
// artifact. The rows only read it (a writer would hold it exclusively
// and refuse the readers running beside it); a row that writes makes its
// own ledger.
type edgeLedger struct {
	path     string
	artifact string // op-echo's artifact ref
}

var (
	edgeOnce sync.Once
	edge     edgeLedger
	edgeErr  string
)

// sharedEdgeLedger makes the ledger on first use; dir outlives every
// caller (it is the first caller's parent test's).
func sharedEdgeLedger(t *testing.T, dir string) edgeLedger {
	t.Helper()
	edgeOnce.Do(func() {
		path := filepath.Join(dir, "edge.db")
		r := zeoctl(t, "invoke", "-simulated", "-ledger", path, "-operation", "op-edge", "-capability", "example.two_effects@1.0.0",
			"-args", `{"target":"x"}`, "-budget", "2", "-effects", "uncertain")
		if r.code != 3 || !strings.Contains(r.stdout, "needs_reconciliation") {
			edgeErr = "making the edge ledger: " + r.String()
			return
		}
		r = zeoctl(t, "invoke", "-simulated", "-ledger", path, "-operation", "op-echo", "-capability", "example.echo@1.0.0", "-args", `{"text":"e"}`)
		m := regexp.MustCompile(`artifact_[0-9a-f]{32}`).FindString(r.stdout)
		if r.code != 0 || m == "" {
			edgeErr = "making the edge ledger: " + r.String()
			return
		}
		edge = edgeLedger{path: path, artifact: m}
	})
	if edgeErr != "" {
		t.Fatal(edgeErr)
	}
	return edge
}

// edgeCase is one rough edge of the CLI (issue 23), as a command line and
// what it must answer: its exit status, fragments its stdout and stderr
// must hold, and fragments they must not.
type edgeCase struct {
	name string
	// args builds the command line; l is the shared ledger.
	args           func(t *testing.T, l edgeLedger) []string
	code           int
	stdout, stderr []string
	notStdout      []string
	notStderr      []string
}

// TestCLIEdges runs each rough edge of issue 23 through the real zeoctl
// binary: one row per point, its exit status and its message.
func TestCLIEdges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range edgeCases() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := sharedEdgeLedger(t, dir)
			r := zeoctl(t, tt.args(t, l)...)
			wantRun(t, r, tt.code, tt.stdout, tt.stderr)
			for _, s := range tt.notStdout {
				if strings.Contains(r.stdout, s) {
					t.Errorf("stdout holds %q\n%s", s, r)
				}
			}
			for _, s := range tt.notStderr {
				if strings.Contains(r.stderr, s) {
					t.Errorf("stderr holds %q\n%s", s, r)
				}
			}
		})
	}
}

func edgeCases() []edgeCase {
	return []edgeCase{
		// One rule for -org and -project: they default to org-local and
		// project-local everywhere, as invoke's do.
		{name: "scope/resolve defaults to invoke's scope",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "resolve", "-ledger", invokedLedger(t, "-operation", "op-resolve", "-capability", "example.two_effects@1.0.0",
					"-args", `{"target":"x"}`, "-budget", "2", "-effects", "uncertain"), "-operation", "op-resolve", "-effect", "effect-1", "-not-consumed", "refused"}
			},
			code: 0, stdout: []string{"org-local/project-local", "effect-1", "not_consumed"}},
		{name: "scope/artifact get defaults to invoke's scope",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"artifact", "get", "-ledger", l.path, l.artifact}
			},
			code: 0, stdout: []string{`{"text":"e"}`}},
		{name: "scope/ledger effects -operation defaults to invoke's scope",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "effects", "-ledger", l.path, "-operation", "op-edge"}
			},
			code: 0, stdout: []string{"op-edge", "effect-1", "unknown"}},
		{name: "scope/ledger operations -operation defaults to invoke's scope",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", l.path, "-operation", "op-echo"}
			},
			code: 0, stdout: []string{"operation org-local/project-local op-echo: completed"}},
		{name: "scope/a listing covers every scope",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", l.path}
			},
			code: 0, stdout: []string{"org-local/project-local  op-echo", "org-local/project-local  op-edge"}},
		{name: "scope/-org alone keeps one scope, the project defaulting",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", l.path, "-org", "org-other"}
			},
			code: 0, stdout: []string{"no operations"}},
		{name: "scope/another scope finds nothing and says to check it",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "effects", "-ledger", l.path, "-org", "org-other", "-operation", "op-edge"}
			},
			code: 1, stderr: []string{"check -operation, -org and -project"}},
		{name: "scope/the rule is in help",
			args: func(t *testing.T, l edgeLedger) []string { return []string{"help", "scope"} },
			code: 0, stdout: []string{"One rule holds in every command", "org-local", "project-local"}},
		{name: "scope/-h shows the default",
			args: func(t *testing.T, l edgeLedger) []string { return []string{"artifact", "get", "-h"} },
			code: 0, stdout: []string{`(default "org-local")`, `(default "project-local")`}, notStdout: []string{"id (required)"}},
		// invoke's next line is the exact resolve command, flags and all:
		// run as printed, it settles the effect.
		{name: "next/the printed resolve command settles the effect",
			args: func(t *testing.T, l edgeLedger) []string {
				_, args := nextResolve(t)
				return append(args, "-confirmed", "receipt-9")
			},
			code: 0, stdout: []string{"org-local/p-next", "op-next", "effect-1", "confirmed", "receipt-9"}},
		{name: "next/a memory ledger cannot be settled, and invoke says so",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-capability", "example.two_effects@1.0.0", "-args", `{"target":"x"}`, "-budget", "2", "-effects", "uncertain"}
			},
			code: 3, stdout: []string{"next       nothing can settle its effects: this memory ledger is gone at exit"}},
		// artifact get's not-found hint names its own arguments only.
		{name: "artifact/not found names REF, not -operation",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"artifact", "get", "-ledger", l.path, "artifact_00000000000000000000000000000000"}
			},
			code: 1, stderr: []string{"check the artifact REF, -org and -project"}, notStderr: []string{"-operation"}},
		// A ledger path in a missing directory: the directory is named,
		// once, with what to do.
		{name: "ledger path/missing directory, invoke",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-ledger", filepath.Join(t.TempDir(), "nodir", "l.db"), "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 1, stderr: []string{"the ledger's directory ", "nodir does not exist: create it first"}, notStderr: []string{"l.db", "stat "}},
		{name: "ledger path/missing directory, inspection",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", filepath.Join(t.TempDir(), "nodir", "l.db")}
			},
			code: 1, stderr: []string{"nodir does not exist: create it first"}, notStderr: []string{"l.db"}},
		{name: "ledger path/missing file, inspection",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "effects", "-unknown", "-ledger", filepath.Join(t.TempDir(), "none.db")}
			},
			code: 1, stderr: []string{"there is no ledger file ", "none.db (zeoctl invoke -ledger PATH"}, notStderr: []string{"stat "}},
		{name: "ledger path/a directory",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"artifact", "get", "-ledger", t.TempDir(), "artifact_x"}
			},
			code: 1, stderr: []string{"is a directory, not a ledger file"}},
		// A text file given as the ledger is not a ledger, not a damaged one.
		{name: "ledger path/a text file, inspection",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", textFile(t)}
			},
			code: 1, stderr: []string{"notes.txt is not a ledger file: it does not begin as a bolt database does"}, notStderr: []string{"backup"}},
		{name: "ledger path/a text file, invoke",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-ledger", textFile(t), "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 1, stderr: []string{"notes.txt is not a ledger file"}, notStderr: []string{"backup"}},
		// A closed PostgreSQL port: where zeoctl could not connect and
		// what to do, not a failed schema migration; never the password.
		{name: "postgres/closed port, inspection",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"ledger", "operations", "-ledger", "postgres://zeo:s3cret@127.0.0.1:1/db?sslmode=disable"}
			},
			code: 1, stderr: []string{"cannot connect to the PostgreSQL server at 127.0.0.1:1 (user zeo, database db)", "connection refused",
				"start the server, or point -ledger at the host and port it listens on"},
			notStderr: []string{"migrating", "schema", "s3cret"}},
		{name: "postgres/closed port, invoke",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-ledger", "postgres://zeo:s3cret@127.0.0.1:1/db?sslmode=disable", "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 1, stderr: []string{"zeoctl: invoke: cannot connect to the PostgreSQL server at 127.0.0.1:1", "connection refused"},
			notStderr: []string{"migrating", "s3cret"}},
		// Arguments the request schema refuses: the JSON pointer of the
		// failure on the error line and in the outcome's reason.
		{name: "args/schema-invalid, a property's type",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"text":5}`}
			},
			code: 3, stdout: []string{"reason     the arguments do not satisfy the capability's request schema: at /text: got number, want string"},
			stderr:    []string{"zeoctl: invoke: invalid_request: -args at /text: got number, want string (the request schema:"},
			notStderr: []string{"supervise: preflight"}},
		{name: "args/schema-invalid, a missing property",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{}`}
			},
			code: 3, stdout: []string{"at the top level: missing property 'text'"},
			stderr: []string{"zeoctl: invoke: invalid_request: -args at the top level: missing property 'text'"}},
		{name: "args/schema-invalid, run through the catalogue",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"run", "-simulated", "-ledger", catalogueLedger(t, false), "-org", "org-a", "-project", "proj-1",
					"-args", `{"text":["a"]}`, "example.echo@1.0.0"}
			},
			code: 3, stdout: []string{"at /text: got array, want string"},
			stderr: []string{"zeoctl: run: invalid_request: -args at /text: got array, want string"}},
		// A reused -operation with another request says what differs, in
		// words.
		{name: "operation reused/other arguments",
			args: func(t *testing.T, l edgeLedger) []string {
				path := invokedLedger(t, "-operation", "op-1", "-capability", "example.echo@1.0.0", "-args", `{"text":"first"}`)
				return []string{"invoke", "-simulated", "-ledger", path, "-operation", "op-1", "-capability", "example.echo@1.0.0", "-args", `{"text":"second"}`}
			},
			code: 1, stderr: []string{"zeoctl: invoke: the arguments differ from those operation op-1 was recorded with (request digest sha256:",
				"give a new -operation (or none) for this one"}},
		{name: "operation reused/another capability",
			args: func(t *testing.T, l edgeLedger) []string {
				path := invokedLedger(t, "-operation", "op-1", "-capability", "example.echo@1.0.0", "-args", `{"text":"first"}`)
				return []string{"invoke", "-simulated", "-ledger", path, "-operation", "op-1", "-capability", "example.fail@1.0.0", "-args", `{"text":"first"}`}
			},
			code: 1, stderr: []string{"operation op-1 was recorded for capability example.echo@1.0.0, not example.fail@1.0.0"}},
		{name: "operation reused/the same arguments continue it",
			args: func(t *testing.T, l edgeLedger) []string {
				path := invokedLedger(t, "-operation", "op-1", "-capability", "example.echo@1.0.0", "-args", `{"text":"first"}`)
				return []string{"invoke", "-simulated", "-ledger", path, "-operation", "op-1", "-capability", "example.echo@1.0.0", "-args", `{"text":"first"}`}
			},
			code: 0, stdout: []string{"reconnected: the result was already accepted"}},
		{name: "operation reused/other arguments, run",
			args: func(t *testing.T, l edgeLedger) []string {
				path := catalogueLedger(t, false)
				run := []string{"run", "-simulated", "-ledger", path, "-org", "org-a", "-project", "proj-1", "-operation", "op-r"}
				if r := zeoctl(t, append(run, "-args", `{"text":"first"}`, "example.echo@1.0.0")...); r.code != 0 {
					t.Fatal(r)
				}
				return append(run, "-args", `{"text":"second"}`, "example.echo@1.0.0")
			},
			code: 1, stderr: []string{"zeoctl: run: the arguments differ from those operation op-r was recorded with"}},
		// A binding refused for its size says it is too large, not that it
		// is not strict JSON; a duplicate key is told apart.
		{name: "binding/10k capabilities is too large",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-binding", manyCapabilities(t, 10_000), "-capability", "example.echo1@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 1, stderr: []string{"binding.json is too large: ", "bytes, and a binding travels whole in the host's launch context, which holds at most 1048576 (1 MiB); split its capabilities"},
			notStderr: []string{"not strict JSON"}},
		{name: "binding/100k capabilities is too large",
			args: func(t *testing.T, l edgeLedger) []string {
				if os.Getenv("ZEO_LONG_TESTS") != "1" {
					t.Skip("a 100k-capability binding is 100 MB: set ZEO_LONG_TESTS=1 to write it (the 10k row runs the same path)")
				}
				return []string{"capabilities", "list", "-simulated", "-binding", manyCapabilities(t, 100_000)}
			},
			code: 1, stderr: []string{"binding.json is too large: "}, notStderr: []string{"not strict JSON"}},
		{name: "binding/a duplicate key is not strict JSON",
			args: func(t *testing.T, l edgeLedger) []string {
				path := filepath.Join(t.TempDir(), "binding.json")
				if err := os.WriteFile(path, []byte(`{"distribution":"a","distribution":"b"}`), 0o644); err != nil {
					t.Fatal(err)
				}
				return []string{"capabilities", "list", "-simulated", "-binding", path}
			},
			code: 1, stderr: []string{"not strict JSON: duplicate object key"}, notStderr: []string{"too large"}},
		// zeoctl lets a root host run (AllowRootHost), but never silently.
		{name: "root host/warned",
			args: func(t *testing.T, l edgeLedger) []string {
				requireRootCLI(t)
				return []string{"invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 0, stderr: []string{"zeoctl: warning: zeoctl runs as root, so the host runs as root too", "-user runs it as another user"}},
		{name: "root host/-user 0 warned",
			args: func(t *testing.T, l edgeLedger) []string {
				requireRootCLI(t)
				return []string{"invoke", "-simulated", "-user", "0:0", "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 0, stderr: []string{"zeoctl: warning: -user names uid 0: the host runs as root"}},
		// A -user that cannot reach the host: refused before launch, the
		// cause said once. This test's zeoctl lives in a directory only
		// its owner may enter.
		{name: "user/cannot enter the host program's directory",
			args: func(t *testing.T, l edgeLedger) []string {
				requireRootCLI(t)
				return []string{"invoke", "-simulated", "-user", "nobody", "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`}
			},
			code: 1, stderr: []string{"zeoctl: invoke: -user 65534:65534 cannot enter " + filepath.Dir(zeoctlPath) + " (drwx------, owner 0:0), which running the host's program needs"},
			notStderr: []string{"launch: invalid launcher config", "bootstrap id", "warning:"}},
		{name: "user/an unknown user",
			args: func(t *testing.T, l edgeLedger) []string {
				return []string{"invoke", "-simulated", "-user", "no-such-user-here", "-capability", "example.echo@1.0.0"}
			},
			code: 2, stderr: []string{`-user "no-such-user-here": user: unknown user`}},
	}
}

// requireRootCLI skips a row that needs zeoctl to run as root.
func requireRootCLI(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it runs a host as root, or as uid 65534")
	}
}

// manyCapabilities writes the simulated provider's binding with n copies
// of its echo capability (example.echo0 … example.echoN-1) and returns
// its file.
func manyCapabilities(t *testing.T, n int) string {
	t.Helper()
	b := hostsim.DemoBinding()
	var echo manifest.CapabilityManifest
	for _, m := range b.Manifests {
		if m.ID.Name == "echo" {
			echo = m
		}
	}
	b.Manifests = make([]manifest.CapabilityManifest, n)
	for i := range b.Manifests {
		b.Manifests[i] = echo
		b.Manifests[i].ID.Name = fmt.Sprintf("echo%d", i)
		b.Manifests[i].ProjectionName = nil
	}
	raw, err := canon.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "binding.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// invokedLedger returns a new ledger file on which zeoctl invoke
// -simulated ran once with args.
func invokedLedger(t *testing.T, args ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	r := zeoctl(t, append([]string{"invoke", "-simulated", "-ledger", path}, args...)...)
	if r.code != 0 && r.code != 3 {
		t.Fatalf("invoke %v: %s", args, r)
	}
	return path
}

// textFile returns a file of text, which is no ledger.
func textFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("these are notes, not a ledger\nsecond line of them, long enough to fill a page header\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// requiredFlags are the command lines that leave out each flag that a
// command's -h marks "(required)": each must be refused (exit 2) naming
// the flag. TestRequiredFlags checks that the table is the set -h marks.
var requiredFlags = map[string][]string{
	"ledger operations -ledger":         {"ledger", "operations"},
	"ledger effects -ledger":            {"ledger", "effects", "-unknown"},
	"ledger leases -ledger":             {"ledger", "leases"},
	"ledger resolve -ledger":            {"ledger", "resolve", "-operation", "o", "-effect", "e", "-confirmed", "r"},
	"ledger resolve -operation":         {"ledger", "resolve", "-ledger", "l.db", "-effect", "e", "-confirmed", "r"},
	"ledger resolve -effect":            {"ledger", "resolve", "-ledger", "l.db", "-operation", "o", "-confirmed", "r"},
	"ledger upgrade -ledger":            {"ledger", "upgrade"},
	"artifact get -ledger":              {"artifact", "get", "artifact_x"},
	"catalogue admit -ledger":           {"catalogue", "admit", "-simulated", "-audience", "org-a"},
	"catalogue list -ledger":            {"catalogue", "list"},
	"catalogue generations -ledger":     {"catalogue", "generations"},
	"catalogue consent grant -ledger":   {"catalogue", "consent", "grant", "-account", "a"},
	"catalogue consent grant -account":  {"catalogue", "consent", "grant", "-ledger", "l.db"},
	"catalogue consent revoke -ledger":  {"catalogue", "consent", "revoke", "-account", "a"},
	"catalogue consent revoke -account": {"catalogue", "consent", "revoke", "-ledger", "l.db"},
	"search -ledger":                    {"search", "echo"},
	"describe-capability -ledger":       {"describe-capability", "example.echo@1.0.0"},
	"run -ledger":                       {"run", "-simulated", "example.echo@1.0.0"},
	"mcp -ledger":                       {"mcp", "-simulated"},
}

// TestRequiredFlags checks every flag a command's -h marks "(required)":
// left out, the command is refused with exit 2 and a message naming it.
// A flag that is optional must not be marked.
func TestRequiredFlags(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`^  (-[a-z-]+)`)
	var marked []string
	for _, name := range commandNames(t) {
		r := zeoctl(t, append(strings.Fields(name), "-h")...)
		flag := ""
		for _, line := range strings.Split(r.stdout, "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil {
				flag = m[1]
				continue
			}
			if flag != "" && (strings.Contains(line, "(required)") || strings.Contains(line, "(required;")) {
				marked = append(marked, name+" "+flag)
			}
		}
	}
	var table []string
	for k := range requiredFlags {
		table = append(table, k)
	}
	slices.Sort(marked)
	slices.Sort(table)
	if !slices.Equal(marked, table) {
		t.Errorf("flags -h marks (required):\n%v\nthe table of TestRequiredFlags:\n%v", marked, table)
	}
	for k, args := range requiredFlags {
		flag := k[strings.LastIndex(k, " ")+1:]
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			wantRun(t, zeoctl(t, args...), 2, nil, []string{flag, "is required", "usage: zeoctl "})
		})
	}
}

// nextResolve runs invoke with an uncertain effect on a new ledger and
// returns the ledger and the 'zeoctl ledger resolve' command its next
// line prints, as arguments (without "zeoctl" and the outcome choice).
func nextResolve(t *testing.T) (string, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "next.db")
	r := zeoctl(t, "invoke", "-simulated", "-ledger", path, "-operation", "op-next", "-project", "p-next",
		"-capability", "example.two_effects@1.0.0", "-args", `{"target":"x"}`, "-budget", "2", "-effects", "uncertain")
	want := "zeoctl ledger resolve -ledger " + path + " -org org-local -project p-next -operation op-next -effect effect-1 (-confirmed RECEIPT | -not-consumed REASON)"
	wantRun(t, r, 3, []string{"  next       ask the service whether each effect was consumed, settle it with:\n               " + want + "\n",
		"then invoke again with the same flags and -operation op-next"}, nil)
	line, _, _ := strings.Cut(want, " (")
	return path, strings.Fields(line)[1:]
}

// TestHostAsUser runs invoke with -user nobody from a zeoctl and a TMPDIR
// every user may enter: the host runs as uid 65534, and its result is
// accepted; the same zeoctl from a private directory is refused before
// launch (TestCLIEdges).
func TestHostAsUser(t *testing.T) {
	t.Parallel()
	requireRootCLI(t)
	open := func() string {
		d, err := os.MkdirTemp("", "zeoctl-open-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(d) })
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	exe := filepath.Join(open(), "zeoctl")
	raw, err := os.ReadFile(zeoctlPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	r := zeoctlAt(t, exe, open(), "invoke", "-simulated", "-user", "nobody", "-capability", "example.echo@1.0.0", "-args", `{"text":"as nobody"}`)
	wantRun(t, r, 0, []string{"state      succeeded", `{"text":"as nobody"}`}, nil)
	if strings.Contains(r.stderr, "warning:") {
		t.Errorf("a host run as nobody was warned about\n%s", r)
	}
}
