package main_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

func TestInvoke(t *testing.T) {
	t.Parallel()
	t.Run("echo", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"text":"hi"}`), 0,
			[]string{"host result (evidence):", `"state":"succeeded"`, "state      succeeded", `: {"text":"hi"}`},
			[]string{"memory ledger", "ipc        bootstrap       -> allowed", "outcome    succeeded"})
	})
	t.Run("args from a file, as JSON", func(t *testing.T) {
		t.Parallel()
		file := filepath.Join(t.TempDir(), "args.json")
		if err := os.WriteFile(file, []byte(`{"target": "doc-9"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		r := zeoctl(t, "invoke", "-simulated", "-capability", "example.two_effects@1.0.0", "-args", "@"+file,
			"-budget", "2", "-effects", "accept", "-json")
		wantRun(t, r, 0, nil, []string{"accepted without being performed"})
		var out struct {
			State    string `json:"state"`
			Artifact string `json:"artifact"`
			Effects  []struct {
				State string `json:"state"`
			} `json:"effects"`
			BudgetUsed int `json:"budget_used"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatalf("-json: %v\n%s", err, r)
		}
		if out.State != "succeeded" || len(out.Effects) != 2 || out.Effects[1].State != "confirmed" || out.BudgetUsed != 2 {
			t.Errorf("-json outcome %+v\n%s", out, r)
		}
	})
	t.Run("effects refused by default", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.two_effects@1.0.0", "-args", `{"target":"x"}`, "-budget", "2"), 3,
			[]string{"state      refused", "budget     0 of 2 effects used", "-effects accept records them"},
			[]string{"zeoctl: invoke: ", "refused"})
	})
	t.Run("failed capability", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.fail@1.0.0"), 3,
			[]string{"state      failed", "error code ZEO_DEMO_DOMAIN_FAILURE"}, nil)
	})
	t.Run("arguments refused before launch", func(t *testing.T) {
		t.Parallel()
		r := zeoctl(t, "invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"txt":"x"}`)
		wantRun(t, r, 3, []string{"state      invalid_request"}, []string{"missing property 'text'"})
		if strings.Contains(r.stderr, "launch     bootstrap-") {
			t.Errorf("a refused request was launched\n%s", r)
		}
	})
	t.Run("python version caught before launch", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"text":"x"}`,
			"-env", "ZEO_HOSTSIM_PYTHON_VERSION=3.13.1"), 1, nil,
			[]string{`python_version "3.14.0" but the host interpreter is "3.13.1"`})
	})
	t.Run("real provider path", func(t *testing.T) {
		t.Parallel()
		py := fakePython(t, "3.14.0", "0.11.0")
		wantRun(t, zeoctl(t, "invoke", "-python", py, "-binding", abs(t, exampleBinding), "-capability", "example.echo@1.0.0",
			"-args", `{"text":"via -python"}`), 0, []string{"state      succeeded", `{"text":"via -python"}`},
			[]string{"environment_digest is not verified"})
	})
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"args not JSON", []string{"-capability", "example.echo@1.0.0", "-args", "{"}, "-args must be a JSON object"},
		{"args duplicate key", []string{"-capability", "example.echo@1.0.0", "-args", `{"text":"a","text":"b"}`}, "-args must be a JSON object"},
		{"args null", []string{"-capability", "example.echo@1.0.0", "-args", "null"}, "got null, want object"},
		{"capability needed", nil, "-capability is required: the binding has 3 capabilities"},
		{"effects mode", []string{"-capability", "example.echo@1.0.0", "-effects", "maybe"}, "-effects must be refuse, accept or uncertain"},
		{"budget", []string{"-capability", "example.echo@1.0.0", "-budget", "-1"}, "-budget must be at least 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantRun(t, zeoctl(t, append([]string{"invoke", "-simulated"}, tt.args...)...), 2, nil, []string{tt.stderr, "usage: zeoctl invoke"})
		})
	}
	t.Run("unknown capability", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.nope@1.0.0"), 1, nil, []string{"the binding has no capability example.nope@1.0.0"})
	})
	t.Run("service not offered", func(t *testing.T) {
		t.Parallel()
		wantRun(t, zeoctl(t, "invoke", "-simulated", "-capability", "example.two_effects@1.0.0", "-args", `{"target":"x"}`, "-services", "none"), 1,
			nil, []string{`requires service "runtime.effects", which -services does not offer`})
	})
}

// TestReconciliation rehearses an uncertain effect end to end with the
// CLI: the attempt ends needs_reconciliation, the effect is listed as
// unknown, an operator resolves it, and the next attempt redelivers it with
// the operator's receipt and dispatches only the new effect.
func TestReconciliation(t *testing.T) {
	t.Parallel()
	testReconciliation(t, filepath.Join(t.TempDir(), "ledger.db"))
}

// TestReconciliationPostgres is TestReconciliation on a PostgreSQL ledger:
// -ledger takes a DSN wherever it takes a file.
func TestReconciliationPostgres(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("ZEO_TEST_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("set ZEO_TEST_POSTGRES_DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run zeoctl against a PostgreSQL ledger")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "zeo_test_zeoctl_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// Added to the query as it is: the DSN's other parameters reach the
	// driver exactly as CI wrote them (options=-c%20…).
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "ledger_schema=" + url.QueryEscape(schema)
	testReconciliation(t, u.String())
}

func testReconciliation(t *testing.T, path string) {
	call := []string{"invoke", "-simulated", "-ledger", path, "-operation", "op-r", "-capability", "example.two_effects@1.0.0", "-args", `{"target":"x"}`}
	wantRun(t, zeoctl(t, append(call, "-budget", "2", "-effects", "uncertain")...), 3,
		[]string{"state      needs_reconciliation", "effect-1: unknown", "settle it with:\n               zeoctl ledger resolve -ledger "}, nil)
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-unknown"), 0, []string{"op-r", "effect-1  unknown", "Settle each, once the service says what happened, with:",
		"  zeoctl ledger resolve -ledger ", " -operation op-r -effect effect-1 (-confirmed RECEIPT | -not-consumed REASON)"}, nil)
	scope := []string{"-ledger", path, "-org", "org-local", "-project", "project-local", "-operation", "op-r"}
	wantRun(t, zeoctl(t, append([]string{"ledger", "resolve", "-effect", "effect-1", "-confirmed", "receipt-from-the-service"}, scope...)...), 0,
		[]string{"effect-1  confirmed"}, nil)
	wantRun(t, zeoctl(t, append([]string{"ledger", "resolve", "-effect", "effect-1", "-not-consumed", "refused"}, scope...)...), 1,
		nil, []string{"settled once"})
	wantRun(t, zeoctl(t, append([]string{"ledger", "resolve", "-effect", "effect-9", "-confirmed", "r"}, scope...)...), 1,
		nil, []string{`has no effect "effect-9"`})
	wantRun(t, zeoctl(t, append([]string{"ledger", "resolve", "-effect", "effect-1", "-not-consumed", "lost"}, scope...)...), 2,
		nil, []string{"-not-consumed must be refused, cancelled or waiting_approval"})
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-unknown"), 0, []string{"no effect needs reconciliation"}, nil)
	r := zeoctl(t, append(call, "-effects", "accept")...)
	wantRun(t, r, 0, []string{"state      succeeded", "effect-1: confirmed", "receipt receipt-from-the-service", "budget     2 of 2 effects used"},
		[]string{"fencing generation 2", "effect-1 -> allowed: authorization auth_", "receipt receipt-from-the-service (redelivered, no dispatch)"})
	// The lost result: the same operation again is answered from the ledger.
	wantRun(t, zeoctl(t, append(call, "-effects", "accept")...), 0, []string{"reconnected: the result was already accepted; nothing was launched"}, nil)
}

func TestLedgerUsage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.db")
	wantRun(t, zeoctl(t, "ledger", "effects", "-unknown"), 2, nil, []string{"-ledger PATH is required"})
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path), 2, nil, []string{"give one of -unknown, -in-flight, or -operation"})
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", path, "-unknown"), 1, nil, []string{"there is no ledger file"})
	wantRun(t, zeoctl(t, "artifact", "get", "-ledger", path, "-org", "o", "-project", "p"), 2, nil, []string{"want exactly one artifact REF"})
	wantRun(t, zeoctl(t, "ledger", "resolve", "-ledger", path, "-org", "o", "-project", "p", "-operation", "x", "-effect", "e"), 2, nil,
		[]string{"exactly one of -confirmed RECEIPT and -not-consumed REASON"})
	// A DSN's password is never printed, not even when it cannot connect.
	wantRun(t, zeoctl(t, "ledger", "effects", "-ledger", "postgres://zeo:s3cret@127.0.0.1:1/db?sslmode=disable", "-unknown"), 1,
		nil, []string{"cannot connect to the PostgreSQL server at 127.0.0.1:1 (user zeo, database db)"})

}

// TestLedgerOwned checks that a ledger another process holds is refused
// with what to do, not waited on forever.
func TestLedgerOwned(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	// The inspection commands open the file read-only, under a shared
	// lock, which the owner's exclusive one excludes: they say who holds
	// it (this test process) and what to do.
	// Each waits out its lock timeout: all three at once.
	rs := zeoctlAll(t,
		[]string{"ledger", "operations", "-ledger", path},
		[]string{"artifact", "get", "-ledger", path, "-org", "o", "-project", "p", "artifact_x"},
		[]string{"ledger", "resolve", "-ledger", path, "-org", "o", "-project", "p", "-operation", "op", "-effect", "e", "-confirmed", "r"})
	held := []string{"held by a running controller", fmt.Sprintf("(pid %d, per /proc/locks)", os.Getpid()), "use ledger/postgres for many readers"}
	wantRun(t, rs[0], 1, nil, held)
	wantRun(t, rs[1], 1, nil, held)
	// ledger resolve writes: it needs the file for itself.
	wantRun(t, rs[2], 1, nil, []string{"another owner holds the file lock", "owns this ledger"})
}

// TestDoubleDashFlags checks the GNU spelling the issue uses (--python,
// --simulated), which the flag package accepts as well.
func TestDoubleDashFlags(t *testing.T) {
	t.Parallel()
	wantRun(t, zeoctl(t, "invoke", "--simulated", "--capability", "example.echo@1.0.0", "--args", `{"text":"dd"}`), 0,
		[]string{`{"text":"dd"}`}, nil)
}

// TestInvokeContainment: zeoctl names the containment in force, warns
// when the host runs as root, and -uncontained turns it off.
func TestInvokeContainment(t *testing.T) {
	t.Parallel()
	args := []string{"invoke", "-simulated", "-capability", "example.echo@1.0.0", "-args", `{"text":"hi"}`}
	stderr := []string{"zeoctl: containment: filesystem+network+scope+limits+no_new_privs+seccomp"}
	if os.Geteuid() == 0 {
		stderr = append(stderr, "warning: zeoctl runs as root, so the host runs as root too")
	}
	wantRun(t, zeoctl(t, args...), 0, []string{"state      succeeded"}, stderr)
	wantRun(t, zeoctl(t, append(args, "-uncontained")...), 0, []string{"state      succeeded"}, []string{"zeoctl: containment: none"})
}
