// Command jsonecho is the one-shot capability runtime of the wasm
// benchmarks: it reads one Request from stdin and answers its params as the
// Response, with encoding/json only, so that the same program builds
// natively and for wasip1 and carries no gRPC. (capecho, built on
// capabilityruntime/serve, links gRPC and protobuf, whose package
// initialisation a wasm module pays at every call.)
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var req struct {
		Params map[string]any `json:"params"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "jsonecho:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(map[string]any{"result": req.Params}); err != nil {
		fmt.Fprintln(os.Stderr, "jsonecho:", err)
		os.Exit(1)
	}
}
