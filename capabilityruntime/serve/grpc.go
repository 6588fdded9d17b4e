package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/internal/pbvalue"
)

// stopGrace bounds the graceful stop when ctx ends or a Shutdown call names no
// timeout: in-flight calls get this long, then they are cut.
const stopGrace = 10 * time.Second

// serveGRPC is the long-lived worker: it listens on env.socket, creates
// env.ready once listening, and serves until a Shutdown call or ctx ends.
func serveGRPC(ctx context.Context, h Handler, env environment) error {
	if err := os.MkdirAll(filepath.Dir(env.socket), 0o700); err != nil {
		return fmt.Errorf("serve: socket directory: %w", err)
	}
	// A socket left by an earlier run would make Listen fail.
	if err := os.Remove(env.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("serve: removing a stale socket: %w", err)
	}
	lis, err := net.Listen("unix", env.socket)
	if err != nil {
		return fmt.Errorf("serve: listening on %s: %w", env.socket, err)
	}
	s := &server{h: h, env: env, stop: make(chan time.Duration, 1)}
	srv := grpc.NewServer()
	pb.RegisterCapabilityRuntimeServiceServer(srv, s)

	// The socket is bound and listening, so a backend that connects as soon
	// as it sees the ready file waits in the backlog until Serve accepts.
	if env.ready != "" {
		f, err := os.OpenFile(env.ready, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			lis.Close()
			return fmt.Errorf("serve: creating the ready file: %w", err)
		}
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: gRPC server: %w", err)
	case d := <-s.stop:
		gracefulStop(srv, d)
	case <-ctx.Done():
		gracefulStop(srv, stopGrace)
	}
	<-served
	return nil
}

// gracefulStop lets in-flight calls finish for at most d, then cuts them.
func gracefulStop(srv *grpc.Server, d time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		srv.Stop()
		<-done
	}
}

// server implements the protocol's service over a Handler.
type server struct {
	pb.UnimplementedCapabilityRuntimeServiceServer
	h      Handler
	env    environment
	active atomic.Int32
	// stop receives the grace period of the first Shutdown call.
	stop chan time.Duration
}

func (s *server) Initialize(ctx context.Context, req *pb.InitializeRequest) (*pb.InitializeResponse, error) {
	res := &InitResult{}
	if s.h.Initialize != nil {
		r, err := s.h.Initialize(ctx, &Init{Protocol: req.GetProtocolVersion(), Metadata: req.GetMetadata()})
		if err != nil {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		if r != nil {
			res = r
		}
	}
	protocol := res.Protocol
	if protocol == "" {
		protocol = capabilityruntime.ProtocolV1
	}
	return &pb.InitializeResponse{ProtocolVersion: protocol, Features: res.Features, Metadata: res.Metadata}, nil
}

func (s *server) Execute(ctx context.Context, req *pb.ExecuteRequest) (*pb.ExecuteResponse, error) {
	s.active.Add(1)
	defer s.active.Add(-1)
	if _, ok := ctx.Deadline(); !ok && req.GetTimeoutMs() > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.GetTimeoutMs())*time.Millisecond)
		defer cancel()
	}
	params := pbvalue.ToMap(req.GetParams())
	if params == nil {
		params = map[string]any{}
	}
	result, err := s.h.Execute(ctx, &Call{
		Params:        params,
		ExecutionID:   req.GetExecutionId(),
		CorrelationID: req.GetCorrelationId(),
		Type:          s.env.typ,
		Version:       s.env.version,
	})
	resp := response(result, err)
	if resp.Error != "" {
		return &pb.ExecuteResponse{Error: resp.Error}, nil
	}
	fields, err := pbvalue.FromMap(resp.Result, "result")
	if err != nil {
		return &pb.ExecuteResponse{Error: "serve: " + err.Error()}, nil
	}
	if fields == nil {
		fields = map[string]*pb.Value{}
	}
	return &pb.ExecuteResponse{Result: fields}, nil
}

func (s *server) Health(ctx context.Context, _ *pb.HealthRequest) (*pb.HealthResponse, error) {
	resp := &pb.HealthResponse{Ready: true, ActiveExecutions: s.active.Load()}
	if s.h.Health != nil {
		if err := s.h.Health(ctx); err != nil {
			resp.Ready, resp.Message = false, err.Error()
		}
	}
	return resp, nil
}

func (s *server) Shutdown(_ context.Context, req *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	d := time.Duration(req.GetTimeoutMs()) * time.Millisecond
	if d <= 0 {
		d = stopGrace
	}
	// The stop happens after this call has answered: GracefulStop waits
	// for in-flight calls, this one included.
	select {
	case s.stop <- d:
	default: // a stop is already under way
	}
	return &pb.ShutdownResponse{}, nil
}
