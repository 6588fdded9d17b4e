// Package serve is the runtime author's side of the capability runtime
// protocols: a program's main calls Serve with a Handler, and Serve speaks
// whichever protocol the backend that started the program asked for (see
// doc/capabilityruntime.md, “Writing a runtime”).
//
// Start with [Serve]: a runtime's main calls it with its [Handler].
//
//   - When NEURON_CAPABILITY_RUNTIME_SOCKET is set, the program is a
//     long-lived gRPC worker (neuron/capability-runtime-v1): Serve listens
//     on that Unix socket, creates the NEURON_CAPABILITY_RUNTIME_READY file
//     once it is listening, answers Initialize, Execute, Health and
//     Shutdown, and returns after a Shutdown call or when ctx is done.
//   - Otherwise it is a one-shot process (neuron/capability-runtime-v1-json):
//     Serve reads one Request from stdin, calls the handler, writes one
//     Response to stdout and returns.
//
// Either way, a handler error becomes the Response's error, a controlled
// failure, and the process still exits zero: the backend tells the caller
// the runtime ran and refused. Numbers in params arrive as float64 on both
// protocols.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// Handler is what a capability runtime provides. Execute is required; the
// other functions are optional.
type Handler struct {
	// Execute runs one call and returns its result. A returned error is
	// sent as the Response's error (a controlled failure). ctx carries the
	// caller's deadline under the gRPC protocol and ends when the caller
	// gives up; honour it, or the backend discards the worker.
	Execute func(ctx context.Context, call *Call) (map[string]any, error)

	// Initialize is called once per gRPC connection before any Execute. It
	// may return features to announce; an empty Protocol in its result means
	// ProtocolV1. An error refuses the connection, and the backend stops the
	// worker. Nil means: answer ProtocolV1, no features.
	Initialize func(ctx context.Context, init *Init) (*InitResult, error)

	// Health reports whether the runtime can take a request; an error is
	// answered as not ready, with its text. Nil means always ready.
	Health func(ctx context.Context) error
}

// Call is one execution request as the handler sees it.
type Call struct {
	// Params are the request's parameters; numbers are float64.
	Params map[string]any
	// ExecutionID and CorrelationID come from the gRPC request; both are
	// empty under the JSON protocol, which has no place for them.
	ExecutionID, CorrelationID string
	// Type and Version are the runtime's own logical name and version, from
	// NEURON_CAPABILITY_RUNTIME_TYPE and _VERSION.
	Type, Version string
}

// Init is the backend's Initialize request.
type Init struct {
	// Protocol is the protocol the backend speaks.
	Protocol string
	// Metadata holds capability_runtime_type and capability_runtime_version,
	// and whatever else the backend sends.
	Metadata map[string]string
}

// InitResult is the runtime's answer to Initialize.
type InitResult struct {
	// Protocol is the protocol the runtime speaks; empty means ProtocolV1.
	// The backend refuses a runtime that answers another protocol than the
	// one it asked for.
	Protocol string
	// Features are optional capabilities: "concurrent", "streaming",
	// "cancellation".
	Features []string
	// Metadata is passed back as is.
	Metadata map[string]string
}

// ErrNoExecute is returned by Serve for a Handler without Execute.
var ErrNoExecute = errors.New("serve: Handler.Execute is required")

// Serve runs the handler under the protocol the environment asks for (see
// the package documentation) and returns when it is done: nil after a
// one-shot call was answered or a gRPC worker was asked to shut down or ctx
// ended; an error when the environment, stdin or the socket made serving
// impossible. The program should exit non-zero on an error.
func Serve(ctx context.Context, h Handler) error {
	if h.Execute == nil {
		return ErrNoExecute
	}
	env := environment{
		socket:  os.Getenv(capabilityruntime.EnvSocket),
		ready:   os.Getenv(capabilityruntime.EnvReady),
		typ:     os.Getenv(capabilityruntime.EnvType),
		version: os.Getenv(capabilityruntime.EnvVersion),
	}
	if env.socket != "" {
		return serveGRPC(ctx, h, env)
	}
	return serveJSON(ctx, h, env, os.Stdin, os.Stdout)
}

// environment is what the backend told the runtime.
type environment struct {
	socket, ready string
	typ, version  string
}

// maxRequestBytes bounds the one-shot request read from stdin.
const maxRequestBytes = 64 << 20

func readRequest(r io.Reader) (*capabilityruntime.Request, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxRequestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("serve: reading the request from stdin: %w", err)
	}
	if len(b) > maxRequestBytes {
		return nil, fmt.Errorf("serve: the request on stdin exceeds %d bytes", maxRequestBytes)
	}
	req, err := decodeRequest(b)
	if err != nil {
		return nil, fmt.Errorf("serve: the request on stdin: %w", err)
	}
	return req, nil
}
