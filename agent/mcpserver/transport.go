package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeoruntime/runtimeipc/canon"
)

// Limits of one frame read by a LineTransport.
const (
	// MaxFrameBytes is the longest line read as one message; a longer one
	// is answered by an Invalid Request error and skipped to its newline.
	MaxFrameBytes = 16 << 20
	// MaxFrameDepth is the deepest nesting of arrays and objects in one
	// message: a tool's arguments, three levels down (message, params,
	// arguments), may nest as deep as package canon reads them.
	MaxFrameDepth = canon.DefaultMaxDepth + 3
)

// JSON-RPC error codes a LineTransport answers with, besides
// [jsonrpc.CodeParseError] and [jsonrpc.CodeInvalidRequest].
const (
	// CodeNotInitialized answers a call other than initialize or ping
	// before initialize, as MCP servers commonly do.
	CodeNotInitialized = -32002
)

// ErrTransportClosed is returned by a LineTransport's connection once it
// is closed.
var ErrTransportClosed = errors.New("mcpserver: transport closed")

// LineTransport is an MCP transport over newline-delimited JSON-RPC, for
// a server on stdin and stdout, that keeps serving whatever it is sent.
//
// The SDK's own stdio transport reads one stream of JSON, so one
// malformed message ends the session and every run in flight. A
// LineTransport reads each line as a message of its own and answers a
// line that is not one with a JSON-RPC 2.0 error response, then reads on:
// unparseable JSON with Parse error (-32700, id null); a batch, an empty
// batch, a non-object, nesting deeper than [MaxFrameDepth], an id that is
// neither string, number nor null, a jsonrpc member other than "2.0" or
// none, a line longer than [MaxFrameBytes] with Invalid Request (-32600);
// a call other than initialize or ping before initialize with
// [CodeNotInitialized]. Batches are refused as MCP (2025-06-18 on) does.
//
// When its Reader ends, it answers every call it read first: the end is
// reported to the server only once a response to each has been written
// (a call the client cancelled excepted), so a client that writes its
// requests and closes its end still gets every answer.
//
// A LineTransport is for one [mcp.Server.Run] or Connect.
type LineTransport struct {
	// Reader is read line by line, Writer gets one line per message.
	Reader io.Reader
	Writer io.Writer
	// Logger receives a record of each refused line; nil means none.
	Logger *slog.Logger
}

// Connect implements mcp.Transport. The goroutine reading Reader ends at
// its end or error, or when the connection is closed and a line is read.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.Reader == nil || t.Writer == nil {
		return nil, errors.New("mcpserver: LineTransport needs a Reader and a Writer")
	}
	logger := t.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &lineConn{w: t.Writer, log: logger, lines: make(chan frame), closed: make(chan struct{}),
		answered: make(chan struct{}, 1), pending: map[jsonrpc.ID]int{}}
	go c.readLines(t.Reader)
	return c, nil
}

// frame is one line read, or the error that ended reading.
type frame struct {
	line    []byte
	tooLong bool
	err     error
}

type lineConn struct {
	w     io.Writer
	log   *slog.Logger
	lines chan frame

	closeOnce sync.Once
	closed    chan struct{}

	// answered is signalled after each response written, for Read waiting
	// at the end of input.
	answered chan struct{}

	wmu sync.Mutex // held while writing one line to w

	mu          sync.Mutex // guards the fields below
	pending     map[jsonrpc.ID]int
	initialized bool
	eof         error // the error that ended reading, once read
}

func (c *lineConn) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if len(line) > 0 || tooLong {
			select {
			case c.lines <- frame{line: line, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.lines <- frame{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine returns the next line without its newline; one longer than
// MaxFrameBytes is read to its end and returned empty with tooLong.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > MaxFrameBytes+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSpace(line), tooLong, err
	}
}

func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		eof := c.eof
		c.mu.Unlock()
		if eof != nil {
			return nil, c.drain(ctx, eof)
		}
		var f frame
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, ErrTransportClosed
		case f = <-c.lines:
		}
		if f.err != nil {
			c.mu.Lock()
			c.eof = f.err
			c.mu.Unlock()
			continue
		}
		if msg := c.accept(f); msg != nil {
			return msg, nil
		}
	}
}

// drain waits until every call read has been answered, then returns the
// error that ended reading.
func (c *lineConn) drain(ctx context.Context, eof error) error {
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return eof
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closed:
			return ErrTransportClosed
		case <-c.answered:
		}
	}
}

// envelope is a message's members as read before the SDK decodes it.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// accept returns the message f holds, or answers it with an error and
// returns nil.
func (c *lineConn) accept(f frame) jsonrpc.Message {
	if f.tooLong {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message longer than %d bytes", MaxFrameBytes))
		return nil
	}
	line := f.line
	if !json.Valid(line) {
		c.refuse(nil, jsonrpc.CodeParseError, "parse error: not one JSON value on the line (each message is one line)")
		return nil
	}
	if d := depth(line); d > MaxFrameDepth {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: nested %d deep, more than %d", d, MaxFrameDepth))
		return nil
	}
	switch line[0] {
	case '{':
	case '[':
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported (MCP removed them in 2025-06-18); send one message per line")
		return nil
	default:
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: a message is a JSON object")
		return nil
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	id := env.ID
	switch {
	case len(id) == 0 || string(id) == "null":
		id = nil
	case id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9'):
	default:
		c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: id must be a string, a number or null")
		return nil
	}
	if env.JSONRPC == nil || *env.JSONRPC != "2.0" {
		c.refuse(id, jsonrpc.CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
		return nil
	}
	if env.Method == "" && (id == nil || (env.Result == nil) == (env.Error == nil)) {
		c.refuse(id, jsonrpc.CodeInvalidRequest, "invalid request: neither a request (method) nor a response (id with result or error)")
		return nil
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		c.refuse(id, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		return nil
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg // a response to a call of the server's
	}
	if req.Method == "notifications/cancelled" {
		// A cancelled call may go unanswered: waiting for it would hold
		// the end of input forever.
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(env.Params, &p) == nil {
			if cid, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				delete(c.pending, cid)
				c.mu.Unlock()
			}
		}
	}
	if !req.IsCall() {
		return msg
	}
	c.mu.Lock()
	if req.Method == "initialize" {
		c.initialized = true
	}
	ok = c.initialized || req.Method == "ping"
	if ok {
		c.pending[req.ID]++
	}
	c.mu.Unlock()
	if !ok {
		c.refuse(id, CodeNotInitialized, fmt.Sprintf("server not initialized: %q before initialize; send initialize first", req.Method))
		return nil
	}
	return msg
}

// depth returns the deepest nesting of arrays and objects in valid JSON.
func depth(b []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, ch := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case ch == '\\':
				escaped = true
			case ch == '"':
				inString = false
			}
		case ch == '"':
			inString = true
		case ch == '{' || ch == '[':
			d++
			deepest = max(deepest, d)
		case ch == '}' || ch == ']':
			d--
		}
	}
	return deepest
}

// refuse writes an error response to the message with id (raw JSON, nil
// for null).
func (c *lineConn) refuse(id json.RawMessage, code int64, message string) {
	c.log.Warn("mcp: refused a message", "code", code, "reason", message)
	var idb bytes.Buffer
	if id == nil || json.Compact(&idb, id) != nil {
		idb.Reset()
		idb.WriteString("null")
	}
	msg, _ := json.Marshal(message)
	line := []byte(`{"jsonrpc":"2.0","id":` + idb.String() + `,"error":{"code":` + strconv.FormatInt(code, 10) + `,"message":` + string(msg) + "}}\n")
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(line); err != nil {
		c.log.Warn("mcp: writing an error response", "error", err)
	}
}

func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return ErrTransportClosed
	default:
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpserver: encoding a message: %w", err)
	}
	b = append(b, '\n')
	c.wmu.Lock()
	_, err = c.w.Write(b)
	c.wmu.Unlock()
	c.mu.Lock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if n := c.pending[resp.ID]; n > 1 {
			c.pending[resp.ID] = n - 1
		} else {
			delete(c.pending, resp.ID)
		}
	}
	c.mu.Unlock()
	select {
	case c.answered <- struct{}{}:
	default:
	}
	if err != nil {
		return fmt.Errorf("mcpserver: writing a message: %w", err)
	}
	return nil
}

func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: a stdio session has none.
func (c *lineConn) SessionID() string { return "" }
