package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeoruntime/runtimeipc/agent/mcpserver"
)

// wireResponse is a JSON-RPC response as written.
type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

const (
	initializeLine  = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// malformed are the lines every MCP server on a LineTransport must answer
// with an error and carry on: the wanted code and id (raw JSON).
var malformed = []struct {
	name, line string
	code       int64
	id         string
}{
	{"unparseable", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "null"},
	{"not JSON at all", `hello`, -32700, "null"},
	{"nesting 1000", strings.Repeat("[", 1000) + strings.Repeat("]", 1000), -32600, "null"},
	{"nesting 1000 in params", `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"a":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}}`, -32600, "null"},
	{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
	{"array id", `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, -32600, "null"},
	{"boolean id", `{"jsonrpc":"2.0","id":true,"method":"ping"}`, -32600, "null"},
	{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, -32600, "null"},
	{"empty batch", `[]`, -32600, "null"},
	{"a number", `42`, -32600, "null"},
	{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":4,"method":"ping"}`, -32600, "4"},
	{"jsonrpc a number", `{"jsonrpc":2.0,"id":"x","method":"ping"}`, -32600, "null"},
	{"missing jsonrpc", `{"id":5,"method":"ping"}`, -32600, "5"},
	{"neither request nor response", `{"jsonrpc":"2.0","id":7}`, -32600, "7"},
	{"method not a string", `{"jsonrpc":"2.0","id":8,"method":1}`, -32600, "null"},
}

// session serves a bare MCP server on a LineTransport over pipes.
type session struct {
	in   *io.PipeWriter
	out  chan []byte // the lines written, read as they come
	done chan error
}

func serve(t *testing.T) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	s := &session{in: inW, out: make(chan []byte, 1024), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.out <- append([]byte(nil), sc.Bytes()...)
		}
		close(s.out)
	}()
	go func() {
		err := srv.Run(context.Background(), &mcpserver.LineTransport{Reader: inR, Writer: outW})
		outW.Close()
		s.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		for range s.out {
		}
		<-s.done
	})
	return s
}

func (s *session) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			t.Fatalf("writing %q: %v", l, err)
		}
	}
}

// next reads the next response; it fails the test at the end of output.
func (s *session) next(t *testing.T) wireResponse {
	t.Helper()
	line, ok := <-s.out
	if !ok {
		t.Fatal("output ended where a response was due")
	}
	var r wireResponse
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("response %q: %v", line, err)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("response %q: jsonrpc is not 2.0", line)
	}
	return r
}

func TestLineTransportKeepsServing(t *testing.T) {
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t)
			s.send(t, initializeLine, initializedLine)
			if r := s.next(t); string(r.ID) != `"init"` || r.Error != nil {
				t.Fatalf("initialize answered %+v", r)
			}
			s.send(t, tc.line, `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`)
			r := s.next(t)
			if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id {
				t.Fatalf("%s answered %s %+v, want error %d with id %s", tc.name, r.ID, r.Error, tc.code, tc.id)
			}
			if r.Error.Message == "" {
				t.Errorf("error %d has no message", tc.code)
			}
			if r := s.next(t); string(r.ID) != "99" || r.Error != nil || len(r.Result) == 0 {
				t.Fatalf("tools/list after %s answered %s %+v %s", tc.name, r.ID, r.Error, r.Result)
			}
		})
	}
}

func TestLineTransportBeforeInitialize(t *testing.T) {
	s := serve(t)
	s.send(t, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if r := s.next(t); string(r.ID) != "6" || r.Error == nil || r.Error.Code != mcpserver.CodeNotInitialized {
		t.Fatalf("tools/list before initialize answered %s %+v, want error %d", r.ID, r.Error, mcpserver.CodeNotInitialized)
	}
	if r := s.next(t); string(r.ID) != "7" || r.Error != nil {
		t.Fatalf("ping before initialize answered %s %+v", r.ID, r.Error)
	}
	s.send(t, initializeLine, initializedLine, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	for _, want := range []string{`"init"`, "8"} {
		if r := s.next(t); string(r.ID) != want || r.Error != nil {
			t.Fatalf("after initialize: answered %s %+v, want %s", r.ID, r.Error, want)
		}
	}
}

// TestLineTransportAnswersBeforeEOF writes its requests and closes its
// end at once: every one is answered before the server's Run returns.
func TestLineTransportAnswersBeforeEOF(t *testing.T) {
	for i := range 20 {
		s := serve(t)
		lines := []string{initializeLine, initializedLine}
		for j := range 5 {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, j))
		}
		s.send(t, lines...)
		s.in.Close()
		got := map[string]bool{}
		for line := range s.out {
			var r wireResponse
			if err := json.Unmarshal(line, &r); err != nil || r.Error != nil {
				t.Fatalf("run %d: response %s (%v)", i, line, err)
			}
			got[string(r.ID)] = true
		}
		if len(got) != 6 {
			t.Fatalf("run %d: answered %v, want init and 0..4", i, got)
		}
		if err := <-s.done; err != nil && err != io.EOF {
			t.Errorf("run %d: Run returned %v", i, err)
		}
		s.done <- nil // for the cleanup
	}
}

func FuzzLineTransport(f *testing.F) {
	for _, tc := range malformed {
		f.Add(tc.line)
	}
	f.Add(initializeLine)
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		s := serve(t)
		s.send(t, initializeLine, initializedLine)
		s.next(t)
		s.send(t, line, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
		for {
			if r := s.next(t); string(r.ID) == `"last"` {
				return
			}
		}
	})
}

// TestRunToolHint: the run tool does not claim idempotence it lacks:
// without operation_id each call is a new operation.
func TestRunToolHint(t *testing.T) {
	for _, tool := range mcpserver.Tools() {
		if tool.Name != mcpserver.ToolRun {
			continue
		}
		if tool.Annotations.IdempotentHint || !strings.Contains(tool.Description, "Not idempotent by itself") {
			t.Errorf("run: idempotentHint %v, description %q", tool.Annotations.IdempotentHint, tool.Description)
		}
		return
	}
	t.Fatal("no run tool")
}
