package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// hiddenBinding writes a binding of the simulated distribution under
// another factory, whose one capability, hidden.secret@1.0.0, answers as
// echo, and returns its file.
func hiddenBinding(t *testing.T) string {
	t.Helper()
	var m manifest.CapabilityManifest
	for _, d := range hostsim.DemoManifests() {
		if d.ID.Name == "echo" {
			m = d
		}
	}
	m.ID = manifest.CapabilityID{Namespace: "hidden", Name: "secret", Version: "1.0.0"}
	m.Description = "A secret echo only org-b may see"
	b := hostsim.DemoBinding()
	b.Factory, b.Manifests = "hidden_provider:factory", []manifest.CapabilityManifest{m}
	d, err := manifest.InventoryDigest(b.Manifests)
	if err != nil {
		t.Fatal(err)
	}
	b.ManifestDigest = d
	raw, err := canon.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hidden-binding.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// catalogueLedger returns a ledger file whose catalogue holds the
// simulated demo provider for org-a/proj-1 and, with hidden, the hidden
// provider for org-b only.
func catalogueLedger(t *testing.T, hidden bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	wantRun(t, zeoctl(t, "catalogue", "admit", "-ledger", path, "-simulated", "-audience", "org-a/proj-1"), 0,
		[]string{"admitted zeocore (demo_provider:factory) generation 1", "example.echo@1.0.0"}, nil)
	if hidden {
		wantRun(t, zeoctl(t, "catalogue", "admit", "-ledger", path, "-simulated", "-binding", hiddenBinding(t), "-audience", "org-b"), 0,
			[]string{"admitted zeocore (hidden_provider:factory) generation 1", "audience  org-b (every project)"}, nil)
	}
	return path
}

func TestCatalogueCommands(t *testing.T) {
	t.Parallel()
	l := catalogueLedger(t, true)
	a := []string{"-ledger", l, "-org", "org-a", "-project", "proj-1"}

	t.Run("generations", func(t *testing.T) {
		wantRun(t, zeoctl(t, "catalogue", "admit", "-ledger", l, "-simulated", "-audience", "org-a"), 1, nil,
			[]string{"give a greater -generation"})
		wantRun(t, zeoctl(t, "catalogue", "admit", "-ledger", l, "-simulated", "-generation", "2", "-audience", "org-a/proj-1"), 0,
			[]string{"generation 2"}, nil)
		r := zeoctl(t, "catalogue", "generations", "-ledger", l, "-distribution", "zeocore", "-factory", "demo_provider:factory", "-json")
		wantRun(t, r, 0, nil, nil)
		var gens []struct {
			Generation int64 `json:"generation"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &gens); err != nil || len(gens) != 2 || gens[0].Generation != 1 || gens[1].Generation != 2 {
			t.Errorf("generations %+v, %v\n%s", gens, err, r)
		}
		wantRun(t, zeoctl(t, "catalogue", "generations", "-ledger", l), 0, []string{"hidden_provider:factory  1", "demo_provider:factory    2"}, nil)
	})

	t.Run("list", func(t *testing.T) {
		wantRun(t, zeoctl(t, "catalogue", "list", "-ledger", l), 0,
			[]string{"zeocore (hidden_provider:factory) generation 1", "hidden.secret@1.0.0", "audience  org-a/proj-1"}, nil)
		r := zeoctl(t, append([]string{"catalogue", "list"}, a...)...)
		wantRun(t, r, 0, []string{"org-a/proj-1 sees 3 capabilities", "example.two_effects@1.0.0"}, nil)
		if strings.Contains(r.stdout, "hidden") {
			t.Errorf("org-a's list shows the hidden provider\n%s", r)
		}
	})

	t.Run("search and describe", func(t *testing.T) {
		wantRun(t, zeoctl(t, append([]string{"search"}, append(a, "-limit", "1", "EXAMPLE")...)...), 0,
			[]string{"example.echo@1.0.0", "more: add -cursor "}, nil)
		wantRun(t, zeoctl(t, append([]string{"search"}, append(a, "secret")...)...), 0, []string{"no capability matches"}, nil)
		wantRun(t, zeoctl(t, append([]string{"describe-capability"}, append(a, "example.echo@1.0.0")...)...), 0,
			[]string{"provider       zeocore (demo_provider:factory) generation 2", `"required": [`}, nil)
		wantRun(t, zeoctl(t, append([]string{"describe-capability"}, append(a, "hidden.secret@1.0.0")...)...), 1, nil,
			[]string{`zeoctl: describe-capability: catalogue: unknown capability: "hidden.secret@1.0.0"`})
	})

	t.Run("consent and run", func(t *testing.T) {
		run := func(args ...string) result {
			return zeoctl(t, append(append([]string{"run", "-simulated"}, a...), args...)...)
		}
		wantRun(t, run("-args", `{"text":"hi"}`, "example.echo@1.0.0"), 0, []string{"state      succeeded", `{"text":"hi"}`}, nil)
		// two_effects requires the effect service: it needs a consented
		// connection account.
		wantRun(t, run("-args", `{"target":"t"}`, "example.two_effects@1.0.0"), 1, nil, []string{"consent required", "zeoctl catalogue consent grant"})
		grant := append([]string{"catalogue", "consent", "grant"}, a...)
		wantRun(t, zeoctl(t, append(grant, "-account", "connection-a", "-capability", "example.two_effects@1.0.0", "-service", "runtime.effects",
			"-effect-kind", "write", "-effect-kind", "external_communication", "-effect-operation", "prepare", "-effect-operation", "commit")...), 0,
			[]string{"account connection-a after grant", "effect operations  commit, prepare"}, nil)
		wantRun(t, run("-args", `{"target":"t"}`, "-budget", "2", "-effects", "accept", "-operation", "op-two", "example.two_effects@1.0.0"), 0,
			[]string{"state      succeeded", "receipts"}, nil)
		// Revoking one effect operation holds the effect for approval.
		revoke := append([]string{"catalogue", "consent", "revoke"}, a...)
		wantRun(t, zeoctl(t, append(revoke, "-account", "connection-a", "-effect-operation", "commit")...), 0, []string{"effect operations  prepare"}, nil)
		wantRun(t, run("-args", `{"target":"u"}`, "-budget", "2", "-effects", "accept", "example.two_effects@1.0.0"), 3,
			[]string{"state      waiting_approval", "next       an approver must allow"}, nil)
		// The finished operation answers from the ledger.
		wantRun(t, run("-args", `{"target":"t"}`, "-operation", "op-two", "example.two_effects@1.0.0"), 0,
			[]string{"its result was accepted before; nothing ran"}, nil)
		wantRun(t, zeoctl(t, append([]string{"catalogue", "list"}, a...)...), 0, []string{"consent for account connection-a:"}, nil)
	})
}

// TestRunOutsideScope checks that zeoctl run of a capability outside the
// project's audience exits and prints exactly as for one that exists
// nowhere, and records nothing.
func TestRunOutsideScope(t *testing.T) {
	t.Parallel()
	with, without := catalogueLedger(t, true), catalogueLedger(t, false)
	var out [2]result
	for i, l := range []string{with, without} {
		out[i] = zeoctl(t, "run", "-simulated", "-ledger", l, "-org", "org-a", "-project", "proj-1", "-operation", "op-x", "hidden.secret@1.0.0")
		wantRun(t, out[i], 1, nil, []string{`catalogue: unknown capability: "hidden.secret@1.0.0"`})
	}
	if out[0].stdout != out[1].stdout || out[0].stderr != out[1].stderr {
		t.Errorf("outside the scope:\n%s\nnowhere:\n%s", out[0], out[1])
	}
	wantRun(t, zeoctl(t, "ledger", "operations", "-ledger", with, "-org", "org-a", "-project", "proj-1", "-operation", "op-x"), 1, nil,
		[]string{"not found"})
}

// mcpSession starts 'zeoctl mcp' on ledger as a child process and connects
// an MCP client to it over its stdin and stdout.
func mcpSession(t *testing.T, ledgerPath string, extra ...string) (*mcp.ClientSession, *exec.Cmd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	args := append([]string{"mcp", "-simulated", "-ledger", ledgerPath, "-org", "org-a", "-project", "proj-1"}, extra...)
	cmd := exec.Command(zeoctlPath, args...)
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "zeoctl-test", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("connecting to zeoctl mcp: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("closing the MCP session: %v", err)
		}
		if cmd.ProcessState == nil || !cmd.ProcessState.Exited() || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("zeoctl mcp did not exit 0 when its stdin closed: %v\nstderr:\n%s", cmd.ProcessState, stderr.String())
		}
	})
	return cs, cmd
}

// toolResult calls a tool and returns its result as JSON bytes.
func toolResult(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func text(r *mcp.CallToolResult) string {
	if len(r.Content) != 1 {
		return ""
	}
	tc, _ := r.Content[0].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// TestMCP drives 'zeoctl mcp' as a real child process with an MCP client
// over stdio: the tool list is exactly search, describe and run; search
// and describe answer for the project; run takes a capability to its
// artifact on the simulated host; and a capability outside the project is
// refused by every tool exactly as one that exists nowhere (a second
// server, over a catalogue without it, answers the same bytes).
func TestMCP(t *testing.T) {
	t.Parallel()
	cs, _ := mcpSession(t, catalogueLedger(t, true))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		schema, _ := tool.InputSchema.(map[string]any)
		if schema["type"] != "object" || schema["properties"] == nil {
			t.Errorf("tool %s has input schema %v", tool.Name, tool.InputSchema)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"describe", "run", "search"}) {
		t.Errorf("tools %q, want exactly search, describe, run", names)
	}

	res, _ := toolResult(t, cs, "search", map[string]any{"query": "example", "limit": 2})
	var page struct {
		Capabilities []struct {
			CapabilityID string `json:"capability_id"`
		} `json:"capabilities"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal([]byte(text(res)), &page); err != nil || res.IsError || len(page.Capabilities) != 2 || page.NextCursor == "" {
		t.Fatalf("search: %v %+v\n%s", err, page, text(res))
	}
	res, _ = toolResult(t, cs, "search", map[string]any{"query": "example", "limit": 2, "cursor": page.NextCursor})
	if !strings.Contains(text(res), `"capability_id":"example.two_effects@1.0.0"`) || strings.Contains(text(res), "next_cursor") {
		t.Errorf("second page: %s", text(res))
	}

	res, _ = toolResult(t, cs, "describe", map[string]any{"capability_id": "example.echo@1.0.0"})
	if res.IsError || !strings.Contains(text(res), `"request_schema":{"additionalProperties":false`) {
		t.Errorf("describe: %s", text(res))
	}

	res, _ = toolResult(t, cs, "run", map[string]any{"capability_id": "example.echo@1.0.0", "arguments": map[string]any{"text": "via MCP"}})
	var run struct {
		State       string          `json:"state"`
		Artifact    json.RawMessage `json:"artifact"`
		OperationID string          `json:"operation_id"`
	}
	if err := json.Unmarshal([]byte(text(res)), &run); err != nil || res.IsError || run.State != "succeeded" || string(run.Artifact) != `{"text":"via MCP"}` {
		t.Errorf("run: %v %+v\n%s", err, run, text(res))
	}

	// A capability outside the project, through every tool, against a
	// server over a catalogue where it was never admitted.
	nowhere, _ := mcpSession(t, catalogueLedger(t, false))
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"run", map[string]any{"capability_id": "hidden.secret@1.0.0", "arguments": map[string]any{"text": "x"}}},
		{"run", map[string]any{"capability_id": "hidden.secret@1.0.0", "operation_id": "op-hidden"}},
		{"describe", map[string]any{"capability_id": "hidden.secret@1.0.0"}},
		{"search", map[string]any{"query": "secret"}},
		{"search", map[string]any{"query": "hidden.secret@1.0.0"}},
		{"search", map[string]any{}},
	} {
		inScope, got := toolResult(t, cs, call.tool, call.args)
		_, want := toolResult(t, nowhere, call.tool, call.args)
		if got != want {
			t.Errorf("%s %v outside the scope answered\n%s\nwhere it does not exist\n%s", call.tool, call.args, got, want)
		}
		if call.tool != "search" && (!inScope.IsError || text(inScope) != `catalogue: unknown capability: "hidden.secret@1.0.0"`) {
			t.Errorf("%s %v: %s", call.tool, call.args, got)
		}
	}
}

func TestCatalogueUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"catalogue"}, "expected one of: admit, list, generations, consent grant, consent revoke"},
		{[]string{"catalogue", "admit", "-simulated", "-ledger", "l.db"}, "-audience is required"},
		{[]string{"catalogue", "admit", "-simulated", "-ledger", "l.db", "-audience", "org/"}, "want ORG or ORG/PROJECT"},
		{[]string{"catalogue", "admit", "-simulated", "-ledger", "l.db", "-only", "noequals"}, "want CAPABILITY=ORG[/PROJECT]"},
		{[]string{"catalogue", "generations", "-ledger", "l.db", "-factory", "f"}, "give both -distribution and -factory"},
		{[]string{"catalogue", "consent", "grant", "-ledger", "l.db"}, "-account is required"},
		{[]string{"describe-capability", "-ledger", "l.db", "-org", "o", "-project", "p"}, "want one capability ID"},
		{[]string{"run", "-ledger", "l.db", "-org", "o", "-project", "p", "x@1.0.0"}, "choose the host"},
		{[]string{"run", "-simulated", "-ledger", "l.db", "-org", "o", "-project", "p"}, "want one capability ID"},
		{[]string{"mcp", "-simulated", "-binding", "b.json", "-ledger", "l.db", "-org", "o", "-project", "p"}, "-binding is not used here"},
		{[]string{"mcp", "-simulated", "-ledger", "l.db", "-org", "o", "-project", "p", "-effects", "maybe"}, "-effects must be refuse, accept or uncertain"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			wantRun(t, zeoctl(t, tt.args...), 2, nil, []string{tt.stderr})
		})
	}
	// A ledger that does not exist is not created by a command that only reads.
	wantRun(t, zeoctl(t, "search", "-ledger", filepath.Join(t.TempDir(), "none.db"), "-org", "o", "-project", "p"), 1, nil,
		[]string{"catalogue admit -ledger PATH ...' admits a provider"})
}
