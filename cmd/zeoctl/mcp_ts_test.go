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
)

// tsClient is a client written against the official MCP TypeScript SDK:
// it starts the server with the command and arguments it is given (as an
// MCP client configuration does), lists the tools, and calls each once.
const tsClient = `
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, argsJSON, cwd] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args: JSON.parse(argsJSON), cwd, stderr: "inherit" });
const client = new Client({ name: "zeoctl-ts-test", version: "1.0.0" });
await client.connect(transport);
const out = { server: client.getServerVersion() };
out.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, annotations: t.annotations }));
out.search = await client.callTool({ name: "search", arguments: { query: "echo" } });
out.describe = await client.callTool({ name: "describe", arguments: { capability_id: "example.echo@1.0.0" } });
out.run = await client.callTool({ name: "run",
  arguments: { capability_id: "example.echo@1.0.0", arguments: { text: "from TypeScript" }, operation_id: "ts-op-1" } });
await client.close();
console.log(JSON.stringify(out));
`

// officialClients returns the directory whose node_modules holds the
// official MCP TypeScript SDK and Inspector, named by ZEO_TEST_MCP_TS_SDK
// (.ci/run installs them there), and node's path; the test is skipped
// without them.
func officialClients(t *testing.T) (dir, node string) {
	dir = os.Getenv("ZEO_TEST_MCP_TS_SDK")
	if dir == "" {
		t.Skip("ZEO_TEST_MCP_TS_SDK is not set (a directory whose node_modules holds @modelcontextprotocol/sdk and @modelcontextprotocol/inspector; .ci/run installs them); the Go SDK client test covers the wire")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("ZEO_TEST_MCP_TS_SDK is set but node is not on PATH: %v", err)
	}
	// The README's configuration names the command "zeoctl", found on PATH
	// as an installed one would be.
	t.Setenv("PATH", filepath.Dir(zeoctlPath)+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir, node
}

// TestTypeScriptSDKClient runs the README's MCP configuration under the
// official TypeScript SDK's client (StdioClientTransport), the client the
// MCP Inspector and most hosts are built on.
func TestTypeScriptSDKClient(t *testing.T) {
	sdk, node := officialClients(t)
	dir := t.TempDir()
	// Node resolves the script's imports from the node_modules beside it.
	if err := os.Symlink(filepath.Join(sdk, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "client.mjs")
	if err := os.WriteFile(script, []byte(tsClient), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := json.Marshal(readmeMCPArgs(t, catalogueLedger(t, false)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "zeoctl", string(args), t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr.String())
	}
	type toolResult struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	var out struct {
		Server struct {
			Name string `json:"name"`
		} `json:"server"`
		Tools []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
		Search, Describe, Run toolResult
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		t.Fatalf("the TypeScript client printed %q: %v", stdout, err)
	}
	var names []string
	for _, tool := range out.Tools {
		names = append(names, tool.Name)
		if tool.Name == "run" && tool.Annotations["idempotentHint"] != false {
			t.Errorf("run's annotations %v, want idempotentHint false: without operation_id every call is a new operation", tool.Annotations)
		}
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "describe,run,search" {
		t.Errorf("tools seen by the TypeScript client: %v, want search, describe, run", names)
	}
	for name, r := range map[string]toolResult{"search": out.Search, "describe": out.Describe, "run": out.Run} {
		if r.IsError || len(r.Content) == 0 {
			t.Errorf("%s through the TypeScript client failed: %+v", name, r)
		}
	}
	if !strings.Contains(out.Search.Content[0].Text, "example.echo@1.0.0") {
		t.Errorf("search for echo does not find example.echo@1.0.0:\n%s", out.Search.Content[0].Text)
	}
	if run := out.Run.Content[0].Text; !strings.Contains(run, "succeeded") || !strings.Contains(run, "from TypeScript") {
		t.Errorf("run through the TypeScript client:\n%s", run)
	}
}

// TestInspectorCLI runs the README's MCP configuration file as the README
// shows, with the MCP Inspector's command line: it lists the tools and
// runs a capability.
func TestInspectorCLI(t *testing.T) {
	dir, _ := officialClients(t)
	inspector := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	path := catalogueLedger(t, false)
	config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"zeoctl": map[string]any{"command": "zeoctl", "args": readmeMCPArgs(t, path)}}})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "mcp.json"), config, 0o644); err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, inspector, append([]string{"--cli", "--config", "mcp.json", "--server", "zeoctl"}, args...)...)
		cmd.Dir = work
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("mcp-inspector %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, stderr.String())
		}
		return out
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if out := inspect("--method", "tools/list"); json.Unmarshal(out, &list) != nil || len(list.Tools) != 3 {
		t.Errorf("tools/list through the Inspector:\n%s", out)
	}
	var run struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			State    string         `json:"state"`
			Artifact map[string]any `json:"artifact"`
		} `json:"structuredContent"`
	}
	out := inspect("--method", "tools/call", "--tool-name", "run", "--tool-arg", "capability_id=example.echo@1.0.0",
		"--tool-arg", `arguments={"text":"from the Inspector"}`)
	if err := json.Unmarshal(out, &run); err != nil || run.IsError || run.StructuredContent.State != "succeeded" ||
		run.StructuredContent.Artifact["text"] != "from the Inspector" {
		t.Errorf("run through the Inspector (%v):\n%s", err, out)
	}
}
