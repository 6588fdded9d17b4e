package ipc_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// exampleHandler allows the bootstrap and refuses everything else.
type exampleHandler struct{}

func (exampleHandler) Bootstrap(ctx context.Context, r ipc.BootstrapRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateAllowed}, nil
}
func (exampleHandler) Admit(context.Context, ipc.AdmitRequest) (ipc.Decision, error) {
	return ipc.Decision{State: ipc.StateRefused}, nil
}
func (exampleHandler) Effect(context.Context, ipc.EffectCall) (ipc.EffectDecision, error) {
	return ipc.EffectDecision{State: ipc.StateRefused}, nil
}
func (exampleHandler) Publish(context.Context, ipc.PublishRequest) (ipc.PublishDecision, error) {
	return ipc.PublishDecision{State: ipc.StateRefused}, nil
}

// ExampleSession_Serve serves one bootstrap. In production the connection
// is the Runtime's end of the socketpair whose other end is the child's FD
// 4, and ChildPID is the child's pid.
func ExampleSession_Serve() {
	binding := ipc.AttemptBinding{
		OrganizationID: "org-a", ProjectID: "project-a", SeatID: "seat-a", RuntimeBindingID: "runtime-a",
		PacketID: "packet-a", OperationID: "op-a", AttemptID: "attempt-a", FencingGeneration: 1,
		CapabilityID:   "example.echo@1.0.0",
		RequestDigest:  "sha256:3728323797a91381fc9531abaaece040023f2ce3860adfd65224b16b33f1c342",
		ManifestDigest: "sha256:94501004599aee07455038e0ddac8a4799b49bb6771cbbfe5260541806d24210",
	}
	launch := canon.Digest("sha256:3ac64e6752f729f5a1afbc204aa7d7d6683307bef3f38be648fb0a92fef56aeb")
	runtimeEnd, hostEnd := net.Pipe()
	s := ipc.NewSession(runtimeEnd, ipc.SessionConfig{
		ChildPID: os.Getpid(), Binding: binding, BootstrapID: "bootstrap-a", LaunchDigest: launch,
		Deadline: time.Now().Add(time.Minute),
	})
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), exampleHandler{}) }()

	// The host's side: one canonical bootstrap request, one reply.
	body, _ := canon.Marshal(map[string]any{
		"binding": binding, "host_nonce": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"method": "bootstrap", "protocol_version": 1, "sequence": 1,
		"payload": map[string]any{"bootstrap_id": "bootstrap-a", "launch_digest": launch, "pid": os.Getpid()},
	})
	_ = ipc.WriteFrame(hostEnd, body, 0)
	reply, _ := ipc.ReadFrame(hostEnd, 0)
	rep, _ := ipc.DecodeReply(reply, 0)
	fmt.Println(rep.Sequence, rep.State, rep.RequestDigest == canon.Sum(body))
	hostEnd.Close()
	fmt.Println(<-done, s.Summary().Methods)
	// Output:
	// 1 allowed true
	// <nil> map[bootstrap:1]
}
