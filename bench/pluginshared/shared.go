// Package pluginshared defines the two plugins that the launch benchmark
// runs through hashicorp/go-plugin, the peer comparison for one launch and
// one call (see launch_test.go): an echo plugin that does nothing but
// answer, and a host plugin whose one call does the simulated host's own
// work for the same invocation.
package pluginshared

import (
	"net/rpc"

	"github.com/hashicorp/go-plugin"
)

// Handshake is the go-plugin handshake both sides use.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "ZEO_BENCH_PLUGIN",
	MagicCookieValue: "echo",
}

// Echoer is the plugin's interface: one call, like one invocation.
type Echoer interface {
	Echo(text string) (string, error)
}

// EchoPlugin is the go-plugin net/rpc plugin for Echoer. Impl is set on the
// plugin side only.
type EchoPlugin struct {
	Impl Echoer
}

// Server returns the RPC server for the plugin side.
func (p *EchoPlugin) Server(*plugin.MuxBroker) (any, error) { return &RPCServer{Impl: p.Impl}, nil }

// Client returns the RPC client for the host side.
func (*EchoPlugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (any, error) {
	return &RPCClient{c: c}, nil
}

// RPCServer serves Echoer over net/rpc.
type RPCServer struct{ Impl Echoer }

// Echo answers one call.
func (s *RPCServer) Echo(text string, resp *string) error {
	out, err := s.Impl.Echo(text)
	*resp = out
	return err
}

// RPCClient calls Echoer over net/rpc.
type RPCClient struct{ c *rpc.Client }

// Echo makes one call.
func (c *RPCClient) Echo(text string) (string, error) {
	var out string
	err := c.c.Call("Plugin.Echo", text, &out)
	return out, err
}

// HostHandshake is the handshake of the host plugin (pluginhost).
var HostHandshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "ZEO_BENCH_PLUGIN",
	MagicCookieValue: "host",
}

// InvokeArgs is one invocation as the launcher gives it to the simulated
// host: the LaunchContext bytes (FD 3) and the InvocationRequest (stdin).
type InvokeArgs struct {
	Context []byte
	Request []byte
}

// InvokeReply is what the host would publish: the canonical response data
// and its digest.
type InvokeReply struct {
	Data       []byte
	DataDigest string
}

// Invoker is the host plugin's interface: one call is one invocation.
type Invoker interface {
	Invoke(InvokeArgs) (InvokeReply, error)
}

// HostPlugin is the go-plugin net/rpc plugin for Invoker. Impl is set on
// the plugin side only.
type HostPlugin struct {
	Impl Invoker
}

// Server returns the RPC server for the plugin side.
func (p *HostPlugin) Server(*plugin.MuxBroker) (any, error) { return &HostRPCServer{Impl: p.Impl}, nil }

// Client returns the RPC client for the host side.
func (*HostPlugin) Client(_ *plugin.MuxBroker, c *rpc.Client) (any, error) {
	return &HostRPCClient{c: c}, nil
}

// HostRPCServer serves Invoker over net/rpc.
type HostRPCServer struct{ Impl Invoker }

// Invoke answers one call.
func (s *HostRPCServer) Invoke(args InvokeArgs, resp *InvokeReply) error {
	out, err := s.Impl.Invoke(args)
	*resp = out
	return err
}

// HostRPCClient calls Invoker over net/rpc.
type HostRPCClient struct{ c *rpc.Client }

// Invoke makes one call.
func (c *HostRPCClient) Invoke(args InvokeArgs) (InvokeReply, error) {
	var out InvokeReply
	err := c.c.Call("Plugin.Invoke", args, &out)
	return out, err
}
