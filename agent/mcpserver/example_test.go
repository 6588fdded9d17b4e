package mcpserver_test

import (
	"fmt"

	"github.com/zeoruntime/runtimeipc/agent/mcpserver"
)

// The server's tools are the same three whatever the catalogue holds: a
// capability id is an argument of describe and run, never a tool's name.
func ExampleTools() {
	for _, t := range mcpserver.Tools() {
		fmt.Println(t.Name)
	}
	// Unordered output:
	// search
	// describe
	// run
}
