package runtimeipc_test

import (
	"fmt"
	"log"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// The digests every party binds are sha256 over RFC 8785 canonical JSON: a
// controller, its ledger and the host compute the same value from the same
// request, whatever the spelling of the bytes that carried it.
func Example() {
	spelled := []byte(`{ "arguments": {"text": "hello"}, "capability_id": "example.echo@1.0.0" }`)
	fromBytes, err := canon.DigestJSON(spelled)
	if err != nil {
		log.Fatal(err)
	}
	fromValues, err := ipc.RequestDigest("example.echo@1.0.0", map[string]any{"text": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fromBytes == fromValues)
	// Output:
	// true
}
