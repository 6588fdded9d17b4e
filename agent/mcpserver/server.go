// Package mcpserver serves the agent facade (package agent) to agents over
// the Model Context Protocol, with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Start with [New]: it returns the *mcp.Server of one agent.Facade for one
// scope; run it on a [LineTransport] over stdin and stdout, or on any
// transport of the MCP Go SDK.
//
// The server has exactly three tools, search, describe and run, whatever
// the catalogue holds: a capability id is always an argument, never a tool
// name, so the tool list does not grow with the catalogue and reveals
// nothing of it (see doc/design.md, “Three tools for agents”). Every call
// is answered for the one scope the server was made for; the scope is not
// an argument, so an agent cannot choose another.
//
// Tool arguments are decoded as strictly as the protocol's own documents
// (package canon: duplicate keys, unknown members, integers outside
// ±(2^53−1) refused), because run's arguments are bound by their digest.
// A refusal, and any error before an operation ran, is a tool result with
// isError set and the error's text as its only content, the same bytes
// for an id outside the scope as for an id that does not exist. A run that
// ended is a tool result holding the agent.RunResult as JSON (text and
// structured content), with isError set unless it succeeded.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// The tools' names.
const (
	ToolSearch   = "search"
	ToolDescribe = "describe"
	ToolRun      = "run"
)

// Options configure a server. The zero value is usable.
type Options struct {
	// Name and Version describe the server to clients; empty means
	// "runtimeipc" and "v1".
	Name, Version string
	// Logger receives the SDK's records of server activity; nil means none.
	Logger *slog.Logger
	// Ledger names the ledger as the operator would pass it to zeoctl, for
	// the grant command a consent refusal carries; empty means LEDGER.
	Ledger string
}

// ErrInvalidScope is returned by New for a scope that is not two valid
// identifiers.
var ErrInvalidScope = errors.New("mcpserver: invalid scope")

// New returns an MCP server answering for scope with f. Run it with
// (*mcp.Server).Run on a transport, for example &mcp.StdioTransport{}.
func New(f *agent.Facade, scope ledger.Scope, opts Options) (*mcp.Server, error) {
	if f == nil {
		return nil, errors.New("mcpserver: nil Facade")
	}
	if err := scope.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScope, err)
	}
	if opts.Name == "" {
		opts.Name = "runtimeipc"
	}
	if opts.Version == "" {
		opts.Version = "v1"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       opts.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
	})
	if opts.Ledger == "" {
		opts.Ledger = "LEDGER"
	}
	t := tools{f: f, scope: scope, ledger: opts.Ledger}
	for _, tool := range Tools() {
		var h mcp.ToolHandler
		switch tool.Name {
		case ToolSearch:
			h = t.search
		case ToolDescribe:
			h = t.describe
		case ToolRun:
			h = t.run
		}
		s.AddTool(tool, h)
	}
	return s, nil
}

const instructions = `This server runs capabilities admitted to a ZEO Runtime, within one organization and project.
Use search to find a capability (free text over ids, titles, descriptions and tags), describe to read its manifest and the JSON Schema of its arguments, and run to run it with arguments as data.
A capability is named by its canonical id ("namespace.name@version") in the capability_id argument.
When run answers a state other than succeeded, its "next" field says what to do; to continue an operation, call run again with its operation_id and the same arguments.`

// Tools returns the three tools with their input schemas (the SDK lists
// them to clients by name). Each call returns new values.
func Tools() []*mcp.Tool {
	yes, no := true, false
	return []*mcp.Tool{
		{
			Name:  ToolSearch,
			Title: "Search capabilities",
			Description: "Searches the capabilities this project may run. Every word of query must appear in a capability's id, title, description or tags (any case); an empty query lists all. " +
				"Results are ordered by relevance, then id, in pages of at most 100; pass next_cursor back as cursor, with the same query, for the next page.",
			InputSchema: json.RawMessage(searchSchema),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no, Title: "Search capabilities"},
		},
		{
			Name:        ToolDescribe,
			Title:       "Describe a capability",
			Description: "Returns a capability's manifest (description, effects, requirements, examples) and request_schema, the JSON Schema its run arguments must satisfy.",
			InputSchema: json.RawMessage(describeSchema),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no, Title: "Describe a capability"},
		},
		{
			Name:  ToolRun,
			Title: "Run a capability",
			Description: "Runs a capability with arguments as data and returns its state and, once succeeded, its artifact (the result). " +
				"Without operation_id a new operation starts; with the operation_id of an earlier run it continues that operation, and an operation that succeeded returns its result without running again. " +
				"Not idempotent by itself: two calls without operation_id are two operations, and their effects happen twice (an identical second call may be meant, such as sending the same message again, so no id is derived from the arguments). " +
				"To make a call safe to repeat, choose an operation_id and pass it on every attempt.",
			InputSchema: json.RawMessage(runSchema),
			// IdempotentHint false: only a call with operation_id is
			// idempotent (see the description), and the hint is per tool.
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: false, OpenWorldHint: &yes, Title: "Run a capability"},
		},
	}
}

// The input schemas, JSON Schema draft 2020-12. TestSchemasMatchDecoding
// checks that each accepts exactly what the decoder of its tool accepts
// in shape.
const (
	searchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "maxLength": 1024, "description": "Free text; every word must match. Empty lists every capability."},
    "cursor": {"type": "string", "description": "next_cursor of the previous page of the same query."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Page size; default 20."}
  },
  "additionalProperties": false
}`
	describeSchema = `{
  "type": "object",
  "properties": {
    "capability_id": {"type": "string", "minLength": 1, "description": "Canonical capability id, namespace.name@version."}
  },
  "required": ["capability_id"],
  "additionalProperties": false
}`
	runSchema = `{
  "type": "object",
  "properties": {
    "capability_id": {"type": "string", "minLength": 1, "description": "Canonical capability id, namespace.name@version."},
    "arguments": {"type": "object", "description": "The capability's arguments, valid against its request_schema (see describe). Default {}."},
    "operation_id": {"type": "string", "minLength": 1, "description": "The operation to start or continue; the same id with the same arguments never runs twice. Without it, every call is a new operation."},
    "account": {"type": "string", "minLength": 1, "description": "The connection account to run with, when several could serve."}
  },
  "required": ["capability_id"],
  "additionalProperties": false
}`
)

// The tools' arguments as the decoder reads them.
type (
	searchArgs struct {
		Query  string `json:"query,omitempty"`
		Cursor string `json:"cursor,omitempty"`
		Limit  *int   `json:"limit,omitempty"`
	}
	describeArgs struct {
		CapabilityID string `json:"capability_id"`
	}
	runArgs struct {
		CapabilityID string         `json:"capability_id"`
		Arguments    map[string]any `json:"arguments,omitempty"`
		OperationID  *string        `json:"operation_id,omitempty"`
		Account      *string        `json:"account,omitempty"`
	}
)

// check refuses what the schema refuses and the decoder lets through: an
// explicit limit of 0 (absent means the default) and explicit empty
// strings.
func (a *searchArgs) check() (agent.SearchRequest, error) {
	r := agent.SearchRequest{Query: a.Query, Cursor: a.Cursor}
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > agent.MaxPageSize {
			return r, fmt.Errorf("%w: search arguments: limit %d is outside 1..%d", agent.ErrInvalidCall, *a.Limit, agent.MaxPageSize)
		}
		r.Limit = *a.Limit
	}
	return r, nil
}

func (a *runArgs) check() (agent.RunRequest, error) {
	r := agent.RunRequest{CapabilityID: a.CapabilityID, Arguments: a.Arguments}
	for _, f := range []struct {
		name string
		v    *string
		dst  *string
	}{{"operation_id", a.OperationID, &r.OperationID}, {"account", a.Account, &r.Account}} {
		if f.v == nil {
			continue
		}
		if *f.v == "" {
			return r, fmt.Errorf("%w: run arguments: %s is empty; leave it out instead", agent.ErrInvalidCall, f.name)
		}
		*f.dst = *f.v
	}
	return r, nil
}

// decode reads a tool's raw arguments strictly into v; absent arguments
// are an empty object.
func decode(tool string, raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := canon.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: %s arguments (see the tool's input schema): %w", agent.ErrInvalidCall, tool, err)
	}
	return nil
}

// tools holds the handlers of one server.
type tools struct {
	f      *agent.Facade
	scope  ledger.Scope
	ledger string
}

func (t tools) search(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a searchArgs
	if err := decode(ToolSearch, req.Params.Arguments, &a); err != nil {
		return failure(err), nil
	}
	r, err := a.check()
	if err != nil {
		return failure(err), nil
	}
	page, err := t.f.Search(ctx, t.scope, r)
	if err != nil {
		return failure(err), nil
	}
	return result(page, false)
}

func (t tools) describe(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a describeArgs
	if err := decode(ToolDescribe, req.Params.Arguments, &a); err != nil {
		return failure(err), nil
	}
	d, err := t.f.Describe(ctx, t.scope, a.CapabilityID)
	if err != nil {
		return failure(err), nil
	}
	return result(d, false)
}

func (t tools) run(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a runArgs
	if err := decode(ToolRun, req.Params.Arguments, &a); err != nil {
		return failure(err), nil
	}
	r, err := a.check()
	if err != nil {
		return failure(err), nil
	}
	res, err := t.f.Run(ctx, t.scope, r)
	if res.State == "" {
		// Nothing ran: the refusal is the answer, with everything
		// consent lacks and the one command that grants it.
		var ce *catalogue.ConsentError
		if errors.As(err, &ce) {
			return failure(fmt.Errorf("%w\nthe operator grants it with: %s", err, ce.GrantCommand(t.ledger))), nil
		}
		return failure(err), nil
	}
	return result(res, err != nil)
}

// failure is a tool error whose only content is err's text.
func failure(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// result is v as JSON, in text and structured content. encoding/json
// rather than canon: an artifact's canonical bytes may hold digits canon
// would not read back (see package canon, “Caveats”), and the answer needs
// to be deterministic, not canonical.
func result(v any, isError bool) (*mcp.CallToolResult, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return failure(fmt.Errorf("mcpserver: writing the answer: %w", err)), nil
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b)}, nil
}
