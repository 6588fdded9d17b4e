package capabilityruntime_test

import (
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// ExampleParseType shows a logical name, its normal form and store path,
// and a name refused because it would climb out of the store.
func ExampleParseType() {
	n, err := capabilityruntime.ParseType("neuron-runtime: github:read")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(n.String())
	fmt.Println(n.ToLocalPath())
	fmt.Println(n.ToGitHubRepo())

	_, err = capabilityruntime.ParseType("..:..:etc")
	fmt.Println(errors.Is(err, capabilityruntime.ErrInvalidName))
	// Output:
	// neuron-runtime:github:read
	// neuron-runtime/github/read
	// neuron-runtime/github-read
	// true
}

// ExampleDefaultProtocol shows the protocol each runtime kind speaks when
// its manifest names none.
func ExampleDefaultProtocol() {
	for _, kind := range capabilityruntime.SupportedRuntimeKinds() {
		fmt.Println(kind, capabilityruntime.DefaultProtocol(kind))
	}
	// Output:
	// process neuron/capability-runtime-v1
	// wasm neuron/capability-runtime-v1-json
}
