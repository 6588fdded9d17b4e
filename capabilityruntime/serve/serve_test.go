package serve

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
)

// echoHandler returns its call, or fails with the param fail.
var echoHandler = Handler{Execute: func(ctx context.Context, c *Call) (map[string]any, error) {
	if msg, ok := c.Params["fail"].(string); ok {
		return nil, errors.New(msg)
	}
	if c.Params["nil"] == true {
		return nil, nil
	}
	if c.Params["unencodable"] == true {
		return map[string]any{"c": make(chan int)}, nil
	}
	_, hasDeadline := ctx.Deadline()
	return map[string]any{
		"params": c.Params, "type": c.Type, "version": c.Version,
		"execution_id": c.ExecutionID, "correlation_id": c.CorrelationID, "deadline": hasDeadline,
	}, nil
}}

func TestServeRequiresExecute(t *testing.T) {
	if err := Serve(t.Context(), Handler{}); !errors.Is(err, ErrNoExecute) {
		t.Fatalf("Serve without Execute: %v", err)
	}
}

func TestServeJSON(t *testing.T) {
	t.Parallel()
	env := environment{typ: "acme:echo", version: "1.0.0"}
	tests := []struct {
		name, in, want string
	}{
		{"echo", `{"params":{"n":1,"s":"x"}}`, `{"result":{"deadline":false,"correlation_id":"","execution_id":"","params":{"n":1,"s":"x"},"type":"acme:echo","version":"1.0.0"}}`},
		{"null params", `{"params":null}` + "\n", `{"result":{"deadline":false,"correlation_id":"","execution_id":"","params":{},"type":"acme:echo","version":"1.0.0"}}`},
		{"controlled failure", `{"params":{"fail":"no such issue"}}`, `{"result":{},"error":"no such issue"}`},
		{"empty failure text", `{"params":{"fail":""}}`, `{"result":{},"error":"serve: the handler failed with an empty error"}`},
		{"nil result", `{"params":{"nil":true}}`, `{"result":{}}`},
		{"unencodable result", `{"params":{"unencodable":true}}`, `{"result":{},"error":"serve: the result cannot be encoded as JSON: json: unsupported type: chan int"}`},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := serveJSON(t.Context(), echoHandler, env, strings.NewReader(tt.in), &out); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(canonicalJSON(t, tt.want), canonicalJSON(t, out.String())); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
		if !strings.HasSuffix(out.String(), "}\n") || strings.Count(out.String(), "\n") != 1 {
			t.Errorf("%s: output %q is not one line", tt.name, out.String())
		}
	}
	for _, bad := range []string{"", "hello", `{"params":{}} {"params":{}}`, `["params"]`, `{"params":[1]}`} {
		var out bytes.Buffer
		if err := serveJSON(t.Context(), echoHandler, env, strings.NewReader(bad), &out); err == nil || out.Len() != 0 {
			t.Errorf("stdin %q: err %v, output %q; want an error and no output", bad, err, out.String())
		}
	}
}

func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	v, err := decodeAny(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
}

// TestServeGRPC drives a gRPC worker in this process through a real socket:
// ready file, Initialize, Execute, Health, Shutdown.
func TestServeGRPC(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "serve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := environment{
		socket: filepath.Join(dir, "sub", "capability-runtime.sock"), ready: filepath.Join(dir, "ready"),
		typ: "acme:echo", version: "1.0.0",
	}
	// A stale socket file from an earlier run is replaced.
	if err := os.MkdirAll(filepath.Dir(env.socket), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(env.socket, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h := echoHandler
	healthErr := errors.New("warming up")
	healthy := make(chan bool, 1)
	healthy <- false
	h.Health = func(context.Context) error {
		ok := <-healthy
		healthy <- true
		if !ok {
			return healthErr
		}
		return nil
	}
	h.Initialize = func(_ context.Context, in *Init) (*InitResult, error) {
		if in.Protocol != capabilityruntime.ProtocolV1 || in.Metadata["capability_runtime_type"] != "acme:echo" {
			return nil, errors.New("unexpected init")
		}
		return &InitResult{Features: []string{"concurrent"}}, nil
	}
	served := make(chan error, 1)
	go func() { served <- serveGRPC(context.Background(), h, env) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(env.ready); err == nil {
			break
		}
		select {
		case err := <-served:
			t.Fatalf("serveGRPC returned before ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no ready file")
		}
		time.Sleep(time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+env.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewCapabilityRuntimeServiceClient(conn)
	ctx := t.Context()

	init, err := c.Initialize(ctx, &pb.InitializeRequest{ProtocolVersion: capabilityruntime.ProtocolV1, Metadata: map[string]string{"capability_runtime_type": "acme:echo"}})
	if err != nil || init.GetProtocolVersion() != capabilityruntime.ProtocolV1 || !cmp.Equal(init.GetFeatures(), []string{"concurrent"}) {
		t.Fatalf("Initialize = %v, %v", init, err)
	}
	if _, err := c.Initialize(ctx, &pb.InitializeRequest{ProtocolVersion: "other"}); err == nil {
		t.Error("a refused Initialize answered OK")
	}

	// No gRPC deadline, but timeout_ms: the handler gets a deadline.
	resp, err := c.Execute(ctx, &pb.ExecuteRequest{
		ExecutionId: "e1", CorrelationId: "c1", TimeoutMs: 60000,
		Params: map[string]*pb.Value{"n": {Kind: &pb.Value_NumberValue{NumberValue: 2}}},
	})
	if err != nil || resp.GetError() != "" {
		t.Fatalf("Execute = %v, %v", resp, err)
	}
	got := map[string]any{}
	for k, v := range resp.GetResult() {
		switch x := v.GetKind().(type) {
		case *pb.Value_StringValue:
			got[k] = x.StringValue
		case *pb.Value_BoolValue:
			got[k] = x.BoolValue
		}
	}
	want := map[string]any{"type": "acme:echo", "version": "1.0.0", "execution_id": "e1", "correlation_id": "c1", "deadline": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Execute result (-want +got):\n%s", diff)
	}
	resp, err = c.Execute(ctx, &pb.ExecuteRequest{Params: map[string]*pb.Value{"fail": {Kind: &pb.Value_StringValue{StringValue: "nope"}}}})
	if err != nil || resp.GetError() != "nope" {
		t.Errorf("failing Execute = %v, %v; want error nope with an OK status", resp, err)
	}
	resp, err = c.Execute(ctx, &pb.ExecuteRequest{Params: map[string]*pb.Value{"unencodable": {Kind: &pb.Value_BoolValue{BoolValue: true}}}})
	if err != nil || !strings.Contains(resp.GetError(), "result.c") {
		t.Errorf("unencodable result = %v, %v; want an error naming result.c", resp, err)
	}

	hr, err := c.Health(ctx, &pb.HealthRequest{})
	if err != nil || hr.GetReady() || hr.GetMessage() != "warming up" {
		t.Errorf("first Health = %v, %v; want not ready, warming up", hr, err)
	}
	hr, err = c.Health(ctx, &pb.HealthRequest{})
	if err != nil || !hr.GetReady() || hr.GetActiveExecutions() != 0 {
		t.Errorf("second Health = %v, %v; want ready, none active", hr, err)
	}

	if _, err := c.Shutdown(ctx, &pb.ShutdownRequest{TimeoutMs: 5000}); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serveGRPC after Shutdown: %v", err)
	}
	if _, err := os.Stat(env.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

func TestServeGRPCStopsWithContext(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "serve")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- serveGRPC(ctx, echoHandler, environment{socket: filepath.Join(dir, "s.sock")}) }()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serveGRPC after its context ended: %v", err)
	}
}
