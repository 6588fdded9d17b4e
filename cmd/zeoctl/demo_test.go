package main_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/demo.golden from the demo's trace")

// hexID matches the hex run of an id, in full (32 digits) or as the
// demo shortens it (8 and an ellipsis).
const hexID = `(?:[0-9a-f]{32}|[0-9a-f]{8}…)`

// volatile matches what changes from run to run in the demo's trace: the
// random ids, digests over them, pids and temporary paths.
var volatile = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`/[^ ]*/ledger\.db`), "LEDGER"},
	{regexp.MustCompile(`sha256:(?:[0-9a-f]{64}|[0-9a-f]{12}…)`), "DIGEST"},
	{regexp.MustCompile(`attempt-` + hexID), "ATTEMPT"},
	{regexp.MustCompile(`bootstrap-` + hexID), "BOOTSTRAP"},
	{regexp.MustCompile(`auth_` + hexID), "AUTH"},
	{regexp.MustCompile(`rcpt-[0-9a-f]{8}`), "RECEIPT"},
	{regexp.MustCompile(`artifact_` + hexID), "ARTIFACT"},
	{regexp.MustCompile(`session ` + hexID), "SESSION"},
	{regexp.MustCompile(`pid \d+`), "PID"},
	{regexp.MustCompile(`demo-(echo|effects|redelivery|refused|held|uncertain)-[0-9a-f]{8}`), "OP"},
}

// normalize replaces each distinct volatile value by a numbered
// placeholder, in order of first appearance, so that equal values stay
// equal and distinct ones distinct in the golden trace.
func normalize(s string) string {
	for _, v := range volatile {
		seen := map[string]string{}
		s = v.re.ReplaceAllStringFunc(s, func(m string) string {
			if _, ok := seen[m]; !ok {
				seen[m] = fmt.Sprintf("<%s%d>", v.name, len(seen)+1)
			}
			return seen[m]
		})
	}
	return s
}

// TestDemo runs 'zeoctl demo' and compares its trace, with the volatile
// values replaced, with testdata/demo.golden (rewrite it with -update). The
// golden trace holds what the demo must show: each IPC method and the
// state answered, the ledger's evidence, the redelivery with the first
// attempt's receipts and no second dispatch, the reconnect, the
// Authority's refusal and hold, and the uncertain effect settled. Every
// line is at most 100 columns, and each thing the demo teaches is said.
func TestDemo(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	r := zeoctl(t, "demo", "-ledger", path)
	wantRun(t, r, 0, nil, nil)
	got := normalize(r.stdout)
	golden := filepath.Join("testdata", "demo.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("demo trace differs from %s (-want +got; rewrite with -update if intended):\n%s", golden, diff)
	}

	t.Run("every line within 100 columns", func(t *testing.T) {
		for i, line := range strings.Split(r.stdout, "\n") {
			if n := utf8.RuneCountInString(line); n > 100 {
				t.Errorf("line %d has %d columns:\n%s", i+1, n, line)
			}
		}
	})

	t.Run("each teaching point", func(t *testing.T) {
		for _, tt := range []struct{ point, text string }{
			{"the receipts are a stand-in's", "The receipts come from a stand-in dispatcher: it performs nothing"},
			{"the code behind it", "The code behind this demo: examples/quickstart (go run ./examples/quickstart)"},
			{"-v gives the full ids", "'zeoctl demo -v' prints them in full"},
			{"the host loss is deliberate", "(deliberately lost here: the demo stops the host before result.publish)"},
			{"its protocol_error is the loss", "(protocol_error is how an attempt ends when its host is lost: here, on purpose)"},
			{"a redelivery dispatches nothing", "(redelivered, no dispatch)"},
			{"a lost result is reconnected", "succeeded (reconnected: the accepted result, nothing launched)"},
			{"the Authority refuses", "effect.request  -> refused (doc-locked is read-only)"},
			{"a refusal spends nothing", "refused before the ledger recorded it: nothing dispatched, no budget spent"},
			{"the Authority holds", "effect.request  -> waiting_approval (a person must approve the commit)"},
			{"a hold goes on once approved", "effect-2 -> allowed: receipt <RECEIPT"},
			{"an uncertain effect", "effect-1: unknown, <AUTH"},
			{"it needs reconciliation", "outcome    needs_reconciliation"},
			{"and is resolved", "zeoctl ledger resolve -ledger <LEDGER1> \\\n       -org org-demo -project project-demo -operation <OP6> \\\n       -effect effect-1 -confirmed <RECEIPT"},
			{"then redelivered", "effect-1 redelivered with the operator's receipt; only effect-2 dispatched"},
		} {
			if !strings.Contains(got, tt.text) {
				t.Errorf("%s: the trace lacks %q", tt.point, tt.text)
			}
		}
	})
}

// TestDemoVerbose runs 'zeoctl demo -v', which prints ids and digests in
// full, and inspects the ledger it kept with the ledger and artifact
// commands.
func TestDemoVerbose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	r := zeoctl(t, "demo", "-v", "-ledger", path)
	wantRun(t, r, 0, []string{"attempt-", "auth_"}, nil)
	if strings.Contains(r.stdout, "…") {
		t.Errorf("demo -v shortened an id or a digest\n%s", r)
	}
	if !regexp.MustCompile(`launch digest sha256:[0-9a-f]{64}`).MatchString(r.stdout) {
		t.Errorf("demo -v lacks a full launch digest\n%s", r)
	}

	ops := regexp.MustCompile(`demo-(echo|effects|redelivery)-[0-9a-f]{8}`).FindAllString(r.stdout, -1)
	refs := regexp.MustCompile(`artifact +(artifact_[0-9a-f]{32}) \(sha256:[0-9a-f]{64}\): (.*)`).FindAllStringSubmatch(r.stdout, -1)
	if len(ops) == 0 || len(refs) == 0 {
		t.Fatalf("no operation ids or artifacts in the trace\n%s", r)
	}
	echoOp, effectsOp := "", ""
	for _, op := range ops {
		switch {
		case strings.HasPrefix(op, "demo-echo-"):
			echoOp = op
		case strings.HasPrefix(op, "demo-effects-"):
			effectsOp = op
		}
	}
	scope := []string{"-ledger", path, "-org", "org-demo", "-project", "project-demo"}
	wantRun(t, zeoctl(t, append([]string{"artifact", "get"}, append(scope, refs[0][1])...)...), 0, []string{`{"text":"hello"}`}, nil)
	wantRun(t, zeoctl(t, "artifact", "get", "-ledger", path, "-org", "org-other", "-project", "project-demo", refs[0][1]), 1,
		nil, []string{"another organization or project"})
	wantRun(t, zeoctl(t, append([]string{"ledger", "effects", "-operation", effectsOp}, scope...)...), 0,
		[]string{"effect-1  confirmed", "effect-2  confirmed", "rcpt-"}, nil)
	wantRun(t, zeoctl(t, append([]string{"ledger", "effects", "-operation", echoOp}, scope...)...), 0,
		[]string{"the operation has no effects"}, nil)
	// Step 6's effect was settled, step 5's held one approved: nothing
	// is left to reconcile.
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-unknown"), 0, []string{"no effect needs reconciliation"}, nil)
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-in-flight"), 0, []string{"no effect is in flight under a live controller"}, nil)
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-in-flight", "-unknown"), 2, nil, []string{"give one of -unknown, -in-flight"})
	// The demo's one controller closed cleanly: its lease released.
	wantRun(t, zeoctl(t, "ledger", "leases", "-ledger", path), 0, []string{"CONTROLLER", "ctl-", "false", "true"}, nil)
	if r := zeoctl(t, "ledger", "leases", "-ledger", path); strings.Count(r.stdout, "ctl-") != 1 {
		t.Errorf("ledger leases lists %d controllers, want the demo's one\n%s", strings.Count(r.stdout, "ctl-"), r)
	}
	r = zeoctl(t, "ledger", "operations", "-ledger", path)
	wantRun(t, r, 0, []string{echoOp + "        completed  example.echo@1.0.0", effectsOp + "     completed  example.two_effects@1.0.0  1           2/2"}, nil)
	// Six operations: steps 1, 2, 3, the refused and the held of step 5,
	// and step 6's (step 4 reconnects to step 2's).
	if n := strings.Count(r.stdout, "org-demo/project-demo"); n != 6 {
		t.Errorf("ledger operations lists %d operations, want 6\n%s", n, r)
	}
	wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path, "-org", "org-demo", "-project", "project-other"), 0, []string{"no operations"}, nil)
	wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path, "-state", "completed", "-org", "org-demo", "-project", "project-demo"), 0,
		[]string{echoOp}, nil)
	wantRun(t, zeoctl(t, append([]string{"ledger", "operations", "-operation", effectsOp}, scope...)...), 0,
		[]string{"operation org-demo/project-demo " + effectsOp + ": completed", "(generation 1), admitted", "redeemed by pid", "effect-2  confirmed"}, nil)
	wantRun(t, zeoctl(t, append([]string{"ledger", "effects", "-operation", "nope"}, scope...)...), 1, nil, []string{"check -operation, -org and -project"})
}
