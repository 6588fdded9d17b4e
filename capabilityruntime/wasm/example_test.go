package wasm_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
)

// A controller registers the wasm backend beside the process backend and
// starts an installed module through the registry: Start verifies the
// module against its runtime.json and compiles it (or loads it from the
// compilation cache directory), and every Execute runs a fresh instance. It
// is compiled, not run: it needs an installed runtime.
func ExampleBackend_Start() {
	ctx := context.Background()
	b, err := wasm.New(wasm.Config{
		CompilationCacheDir: "/var/cache/neuron/wasm",
		MemoryLimitPages:    2048, // 128 MiB per instance
	})
	if err != nil {
		log.Fatal(err)
	}
	var r capabilityruntime.Registry
	if err := r.Register(b.BackendName(), b); err != nil {
		log.Fatal(err)
	}
	defer r.CloseBackends(ctx)

	inst, err := r.Start(ctx, capabilityruntime.RuntimeKindWasm, capabilityruntime.BackendSpec{
		Type:       "github:read",
		Version:    "1.2.0",
		Entrypoint: "runtime.wasm",
		RootDir:    "/var/lib/neuron/runtimes/github/read/1.2.0",
		MaxWorkers: 4,
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
