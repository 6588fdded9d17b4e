package process_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/process"
)

// A controller runs an installed capability runtime through the process
// backend: Start gives an instance backed by a pool of gRPC workers (at most
// MaxWorkers processes for this type@version), Execute runs one call on a
// worker, and Close stops what the instance holds. It is compiled, not run:
// it needs an installed runtime.
func ExampleBackend_Start() {
	ctx := context.Background()
	b, err := process.New(process.Config{ShutdownGrace: 2 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close(ctx)

	inst, err := b.Start(ctx, capabilityruntime.BackendSpec{
		Type:       "github:read",
		Version:    "1.2.0",
		Protocol:   capabilityruntime.ProtocolV1,
		Entrypoint: "bin/runtime",
		RootDir:    "/var/lib/neuron/runtimes/github/read/1.2.0",
		MaxWorkers: 3,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer inst.Close(ctx)

	callCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := inst.Execute(callCtx, &capabilityruntime.Request{Params: map[string]any{"repo": "octo/hello"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Result)
}
