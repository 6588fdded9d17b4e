package main_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/demo.golden from the demo's trace")

// volatile matches what changes from run to run in the demo's trace: the
// random ids, digests over them, pids and temporary paths.
var volatile = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`/[^ ]*/ledger\.db`), "LEDGER"},
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "DIGEST"},
	{regexp.MustCompile(`attempt-[0-9a-f]{32}`), "ATTEMPT"},
	{regexp.MustCompile(`bootstrap-[0-9a-f]{32}`), "BOOTSTRAP"},
	{regexp.MustCompile(`auth_[0-9a-f]{32}`), "AUTH"},
	{regexp.MustCompile(`artifact_[0-9a-f]{32}`), "ARTIFACT"},
	{regexp.MustCompile(`session [0-9a-f]{32}`), "SESSION"},
	{regexp.MustCompile(`pid \d+`), "PID"},
	{regexp.MustCompile(`demo-(echo|effects|redelivery)-[0-9a-f]{8}`), "OP"},
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
// attempt's receipts and no second dispatch, and the reconnect.
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

	t.Run("ledger left behind", func(t *testing.T) {
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
			[]string{"effect-1  confirmed", "effect-2  confirmed", "receipt-for-auth_"}, nil)
		wantRun(t, zeoctl(t, append([]string{"ledger", "effects", "-operation", echoOp}, scope...)...), 0,
			[]string{"the operation has no effects"}, nil)
		wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-unknown"), 0, []string{"no effect needs reconciliation"}, nil)
		wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-in-flight"), 0, []string{"no effect is in flight under a live controller"}, nil)
		wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-in-flight", "-unknown"), 2, nil, []string{"give one of -unknown, -in-flight"})
		// The demo's one controller closed cleanly: its lease released.
		wantRun(t, zeoctl(t, "ledger", "leases", "-ledger", path), 0, []string{"CONTROLLER", "ctl-", "false", "true"}, nil)
		if r := zeoctl(t, "ledger", "leases", "-ledger", path); strings.Count(r.stdout, "ctl-") != 1 {
			t.Errorf("ledger leases lists %d controllers, want the demo's one\n%s", strings.Count(r.stdout, "ctl-"), r)
		}
		r := zeoctl(t, "ledger", "operations", "-ledger", path)
		wantRun(t, r, 0, []string{echoOp + "        completed  example.echo@1.0.0", effectsOp + "     completed  example.two_effects@1.0.0  1           2/2"}, nil)
		if n := strings.Count(r.stdout, "org-demo/project-demo"); n != 3 {
			t.Errorf("ledger operations lists %d operations, want 3\n%s", n, r)
		}
		wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path, "-org", "org-demo", "-project", "project-other"), 0, []string{"no operations"}, nil)
		wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", path, "-state", "open"), 0, []string{"no operations"}, nil)
		wantRun(t, zeoctl(t, append([]string{"ledger", "operations", "-operation", effectsOp}, scope...)...), 0,
			[]string{"operation org-demo/project-demo " + effectsOp + ": completed", "(generation 1), admitted", "redeemed by pid", "effect-2  confirmed"}, nil)
		wantRun(t, zeoctl(t, append([]string{"ledger", "effects", "-operation", "nope"}, scope...)...), 1, nil, []string{"check -operation, -org and -project"})
	})
}
