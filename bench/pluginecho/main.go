// Command pluginecho is the go-plugin peer of the launch benchmark: a Go
// plugin that answers one echo call.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/zeoruntime/runtimeipc/bench/pluginshared"
)

type echo struct{}

func (echo) Echo(text string) (string, error) { return text, nil }

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: pluginshared.Handshake,
		Plugins:         map[string]plugin.Plugin{"echo": &pluginshared.EchoPlugin{Impl: echo{}}},
	})
}
