// Command capecho is the capability runtime of the capabilityruntime
// benchmarks: it answers every call with its params, over whichever protocol
// the backend asks for (serve chooses).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/serve"
)

func main() {
	err := serve.Serve(context.Background(), serve.Handler{
		Execute: func(_ context.Context, c *serve.Call) (map[string]any, error) {
			return c.Params, nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "capecho:", err)
		os.Exit(1)
	}
}
