// Package pluginshared defines the echo plugin that the launch benchmark
// runs through hashicorp/go-plugin: the peer comparison for one launch and
// one call (see launch_test.go).
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
