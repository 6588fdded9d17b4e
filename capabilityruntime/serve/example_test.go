package serve_test

import (
	"context"
	"errors"
	"log"
	"os/signal"
	"syscall"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/serve"
)

// A capability runtime's main: the same program serves as a long-lived gRPC
// worker or as a one-shot JSON process, whichever the backend that started
// it asked for. It is compiled, not run: Serve reads the process's own
// environment and standard input.
func ExampleServe() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err := serve.Serve(ctx, serve.Handler{
		Execute: func(ctx context.Context, call *serve.Call) (map[string]any, error) {
			text, ok := call.Params["text"].(string)
			if !ok {
				// Sent back as the Response's error: a controlled refusal.
				return nil, errors.New(`params.text: want a string`)
			}
			return map[string]any{"text": text, "runtime": call.Type + "@" + call.Version}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
}
