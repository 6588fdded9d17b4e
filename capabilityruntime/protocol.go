package capabilityruntime

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Environment variables that a backend sets for a capability runtime process.
// Together with a short allowlist of the parent's variables (backends list
// it) they are the whole environment of the child.
const (
	// EnvProtocol is the protocol the runtime is expected to speak.
	EnvProtocol = "NEURON_CAPABILITY_RUNTIME_PROTOCOL"

	// EnvType is the logical name of the capability runtime being run.
	EnvType = "NEURON_CAPABILITY_RUNTIME_TYPE"

	// EnvVersion is the exact resolved version of the capability runtime.
	EnvVersion = "NEURON_CAPABILITY_RUNTIME_VERSION"

	// EnvSocket is the Unix socket path a ProtocolV1 runtime binds. The
	// backend chooses it and creates its directory; the runtime never picks
	// its own path. Its presence is how a runtime knows to serve gRPC.
	EnvSocket = "NEURON_CAPABILITY_RUNTIME_SOCKET"

	// EnvReady is the file a ProtocolV1 runtime creates once its socket is
	// listening. The backend polls for it rather than sleeping; its content
	// is ignored.
	EnvReady = "NEURON_CAPABILITY_RUNTIME_READY"
)

// Request is one execution request. Under ProtocolJSONV1 it is the single
// JSON document on the runtime's stdin: {"params":{...}}.
//
// ExecutionID and CorrelationID are not part of the JSON form (they have no
// place in the one-shot protocol); ProtocolV1 carries them in its
// ExecuteRequest.
type Request struct {
	// Params are the capability's parameters: JSON-shaped values (nil,
	// bool, float64 or any Go number, string, []any, map[string]any);
	// backends say how they treat other Go types.
	Params map[string]any `json:"params"`

	// ExecutionID identifies this execution to the runtime. Empty lets the
	// backend choose a fresh random one.
	ExecutionID string `json:"-"`

	// CorrelationID ties the execution to the caller's own trace; it is
	// passed through unchanged and may be empty.
	CorrelationID string `json:"-"`
}

// Response is one execution result. Under ProtocolJSONV1 it is the single
// JSON document the runtime writes to stdout before exiting zero.
type Response struct {
	// Result holds the capability's results. Numbers decode as float64
	// whichever protocol carried them.
	Result map[string]any `json:"result"`

	// Error, when not empty, is a controlled failure: the runtime ran,
	// decided the call failed, and may still exit zero. Backends return it
	// as a *RuntimeError next to the Response.
	Error string `json:"error,omitempty"`
}

// ParseResponse decodes what a runtime wrote to stdout under
// ProtocolJSONV1, which is untrusted: exactly one JSON object, with only
// whitespace around it. A missing result is an empty one. It never
// panics, whatever the bytes.
func ParseResponse(stdout []byte) (*Response, error) {
	trimmed := bytes.TrimLeft(stdout, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("stdout is empty")
	}
	if trimmed[0] != '{' {
		return nil, errors.New("stdout does not start with a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var resp Response
	if err := dec.Decode(&resp); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("stdout holds more than one JSON value")
	}
	if resp.Result == nil {
		resp.Result = map[string]any{}
	}
	return &resp, nil
}
