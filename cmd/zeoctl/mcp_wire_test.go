package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The lines of one client session: initialize, then each malformed line
// followed by a valid request.
const (
	wireInitialize  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	wireInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// pipeMCP runs 'zeoctl mcp' with stdin the given lines, closed after the
// last, and returns its responses by id (raw JSON) and its exit code.
func pipeMCP(t *testing.T, ledgerPath string, lines []string) (map[string][]json.RawMessage, int, string) {
	t.Helper()
	cmd := exec.Command(zeoctlPath, "mcp", "--simulated", "--ledger", ledgerPath, "--org", "org-a", "--project", "proj-1")
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("zeoctl mcp: %v", err)
	}
	got := map[string][]json.RawMessage{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("zeoctl mcp wrote %q: %v", sc.Text(), err)
		}
		got[string(r.ID)] = append(got[string(r.ID)], append(json.RawMessage(nil), sc.Bytes()...))
	}
	return got, cmd.ProcessState.ExitCode(), stderr.String()
}

// TestMCPKeepsServing feeds a real 'zeoctl mcp' every malformed message
// of issue 23, each followed by a valid request: each is answered by a
// JSON-RPC error, each valid request by its result, and the process exits
// 0 when stdin closes.
func TestMCPKeepsServing(t *testing.T) {
	malformed := []struct {
		line string
		code int64
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{strings.Repeat("[", 1000) + strings.Repeat("]", 1000), -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600},
		{`[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, -32600},
		{`[]`, -32600},
		{`{"jsonrpc":"1.0","method":"ping"}`, -32600},
		{`{"method":"ping"}`, -32600},
	}
	lines := []string{`{"jsonrpc":"2.0","id":"early","method":"tools/list"}`, wireInitialize, wireInitialized}
	for i, m := range malformed {
		lines = append(lines, m.line, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, 100+i))
	}
	got, code, stderr := pipeMCP(t, catalogueLedger(t, false), lines)
	if code != 0 {
		t.Fatalf("zeoctl mcp exited %d\nstderr:\n%s", code, stderr)
	}
	errorCode := func(raw json.RawMessage) int64 {
		var r struct {
			Error *struct {
				Code int64 `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Error == nil {
			return 0
		}
		return r.Error.Code
	}
	if r := got[`"early"`]; len(r) != 1 || errorCode(r[0]) != -32002 {
		t.Errorf("tools/list before initialize answered %s, want error -32002", r)
	}
	nulls := got["null"]
	if len(nulls) != len(malformed) {
		t.Fatalf("%d answers with id null, want %d: %s\nstderr:\n%s", len(nulls), len(malformed), nulls, stderr)
	}
	for i, m := range malformed {
		if c := errorCode(nulls[i]); c != m.code {
			t.Errorf("%.40s answered %s, want error %d", m.line, nulls[i], m.code)
		}
		r := got[fmt.Sprint(100+i)]
		if len(r) != 1 || errorCode(r[0]) != 0 || !bytes.Contains(r[0], []byte(`"name":"run"`)) {
			t.Errorf("tools/list %d after %.40s answered %s", 100+i, m.line, r)
		}
	}
}

// TestMCPAnswersBeforeEOF: 20 runs of 'zeoctl mcp' whose stdin holds
// initialize and tools/list and then ends: every run answers both.
func TestMCPAnswersBeforeEOF(t *testing.T) {
	path := catalogueLedger(t, false)
	lines := []string{wireInitialize, wireInitialized, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`}
	answered := 0
	for run := range 20 {
		got, code, stderr := pipeMCP(t, path, lines)
		if code != 0 || len(got[`"init"`]) != 1 || len(got["1"]) != 1 {
			t.Errorf("run %d: exit %d, answers %v\nstderr:\n%s", run, code, got, stderr)
			continue
		}
		answered++
	}
	t.Logf("%d of 20 piped runs answered initialize and tools/list", answered)
}

// TestMCPHoldsTheLedgerFile: what 'zeoctl mcp -h' says is true: while
// the server runs on a ledger file, another command on it fails, and the
// help points at PostgreSQL.
func TestMCPHoldsTheLedgerFile(t *testing.T) {
	help := zeoctl(t, "mcp", "-h")
	for _, want := range []string{"fails (after a 2 s wait)", "PostgreSQL", "--simulated --ledger"} {
		if !strings.Contains(help.stdout+help.stderr, want) {
			t.Errorf("zeoctl mcp -h does not say %q:\n%s", want, help)
		}
	}
	path := catalogueLedger(t, false)
	cmd := exec.Command(zeoctlPath, "mcp", "--simulated", "--ledger", path, "--org", "org-a", "--project", "proj-1")
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Answered initialize means the server has the ledger open.
	fmt.Fprintln(in, wireInitialize)
	if !bufio.NewScanner(out).Scan() {
		t.Fatal("zeoctl mcp did not answer initialize")
	}
	other := zeoctl(t, "search", "-ledger", path, "-org", "org-a", "-project", "proj-1")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("zeoctl mcp: %v", err)
	}
	if other.code == 0 {
		t.Errorf("search on the ledger the server holds succeeded:\n%s", other)
	}
}

// TestREADMEMCPConfig starts the server as the README's MCP client
// configuration says, with the ledger path replaced, and lists its tools
// with the official Go SDK's client.
func TestREADMEMCPConfig(t *testing.T) {
	args := readmeMCPArgs(t, catalogueLedger(t, false))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.Command(zeoctlPath, args...)
	cmd.Dir = t.TempDir()
	client := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 3 {
		t.Errorf("tools/list: %v %v", tools, err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
}

// readmeMCPArgs returns the arguments of the zeoctl server in the
// README's MCP client configuration, with its ledger replaced by path;
// every flag there must be double-dash (the Inspector's own -e would take
// a single-dash -effects).
func readmeMCPArgs(t *testing.T, path string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(readme, []byte("```json\n{\n  \"mcpServers\""))
	block, _, ok2 := bytes.Cut(rest, []byte("```"))
	if !ok || !ok2 {
		t.Fatal("README has no mcpServers configuration")
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(append([]byte(`{"mcpServers"`), block...), &cfg); err != nil {
		t.Fatalf("README's configuration: %v", err)
	}
	srv, ok := cfg.MCPServers["zeoctl"]
	if !ok || srv.Command != "zeoctl" {
		t.Fatalf("README's configuration has no zeoctl server: %+v", cfg)
	}
	args := slices.Clone(srv.Args)
	for i, a := range args {
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			t.Errorf("README's configuration has single-dash flag %s", a)
		}
		if a == "--ledger" && i+1 < len(args) {
			args[i+1] = path
		}
	}
	return args
}

// TestConsentInOneAnswer: a capability that needs a connection account,
// run without consent, says everything it lacks at once, over MCP and on
// the command line, with one grant command; once that command has run,
// the run gets past consent (to the effect operations, which manifests do
// not declare and which are asked for when requested).
func TestConsentInOneAnswer(t *testing.T) {
	path := catalogueLedger(t, false)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run","arguments":{"capability_id":"example.two_effects@1.0.0","arguments":{"target":"doc-1"}}}}`
	got, code, stderr := pipeMCP(t, path, []string{wireInitialize, wireInitialized, call})
	if code != 0 || len(got["2"]) != 1 {
		t.Fatalf("zeoctl mcp: exit %d, answers %v\nstderr:\n%s", code, got, stderr)
	}
	var answer struct {
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(got["2"][0], &answer); err != nil || !answer.Result.IsError || len(answer.Result.Content) != 1 {
		t.Fatalf("run without consent answered %s (%v)", got["2"][0], err)
	}
	text := answer.Result.Content[0].Text
	for _, want := range []string{"capability:example.two_effects@1.0.0", "service:runtime.effects", "effect_kind:write", "effect_kind:external_communication"} {
		if !strings.Contains(text, want) {
			t.Errorf("the refusal does not name %s:\n%s", want, text)
		}
	}
	_, command, ok := strings.Cut(text, "the operator grants it with: ")
	if !ok {
		t.Fatalf("the refusal gives no grant command:\n%s", text)
	}
	wantCommand := "zeoctl catalogue consent grant --ledger " + path + " --org org-a --project proj-1 --account ACCOUNT" +
		" --capability example.two_effects@1.0.0 --service runtime.effects --effect-kind write --effect-kind external_communication"
	if command != wantCommand {
		t.Fatalf("grant command\n%s\nwant\n%s", command, wantCommand)
	}

	cli := zeoctl(t, "run", "--simulated", "--ledger", path, "--org", "org-a", "--project", "proj-1", "--args", `{"target":"doc-1"}`, "example.two_effects@1.0.0")
	if cli.code == 0 || !strings.Contains(cli.stderr, "to grant exactly that: "+wantCommand) {
		t.Errorf("zeoctl run without consent:\n%s", cli)
	}

	args := strings.Fields(strings.Replace(command, "ACCOUNT", "connection-a", 1))[1:]
	wantRun(t, zeoctl(t, args...), 0, []string{"consent of org-a/proj-1 for account connection-a"}, nil)
	after := zeoctl(t, "run", "--simulated", "--effects", "accept", "--budget", "2", "--ledger", path, "--org", "org-a", "--project", "proj-1",
		"--args", `{"target":"doc-1"}`, "example.two_effects@1.0.0")
	wantRun(t, after, 3, []string{"waiting_approval", "effect_operation:prepare", "next"}, nil)
}
