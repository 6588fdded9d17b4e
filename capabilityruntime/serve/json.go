package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// serveJSON answers one call of the one-shot protocol: one Request from in,
// one Response to out.
func serveJSON(ctx context.Context, h Handler, env environment, in io.Reader, out io.Writer) error {
	req, err := readRequest(in)
	if err != nil {
		return err
	}
	params := req.Params
	if params == nil {
		params = map[string]any{}
	}
	result, herr := h.Execute(ctx, &Call{Params: params, Type: env.typ, Version: env.version})
	resp := response(result, herr)
	b, err := json.Marshal(resp)
	if err != nil {
		// The handler returned a result encoding/json refuses: that is the
		// runtime's failure, reported as such rather than as bad output.
		b, _ = json.Marshal(capabilityruntime.Response{Result: map[string]any{}, Error: "serve: the result cannot be encoded as JSON: " + err.Error()})
	}
	b = append(b, '\n')
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("serve: writing the response to stdout: %w", err)
	}
	return nil
}

// response builds the Response of a handler's return values: never a nil
// result, and a handler error as a controlled failure.
func response(result map[string]any, err error) capabilityruntime.Response {
	if err != nil {
		return capabilityruntime.Response{Result: map[string]any{}, Error: failureText(err)}
	}
	if result == nil {
		result = map[string]any{}
	}
	return capabilityruntime.Response{Result: result}
}

// failureText is the Response error of a handler error; an empty text would
// read as success, so it never is.
func failureText(err error) string {
	if msg := err.Error(); msg != "" {
		return msg
	}
	return "serve: the handler failed with an empty error"
}

// decodeRequest accepts exactly one JSON object, {"params": object or null},
// with nothing but whitespace after it.
func decodeRequest(b []byte) (*capabilityruntime.Request, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var req capabilityruntime.Request
	if err := dec.Decode(&req); err != nil {
		return nil, fmt.Errorf("not a JSON request object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one JSON document")
	}
	return &req, nil
}
