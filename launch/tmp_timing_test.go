//go:build linux

package launch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
)

type timedHandler struct {
	handler
	start time.Time
	mu sync.Mutex
	boot, admit, pub time.Duration
}

func (h *timedHandler) Bootstrap(ctx context.Context, r ipc.BootstrapRequest) (ipc.Decision, error) {
	h.boot = time.Since(h.start)
	return h.handler.Bootstrap(ctx, r)
}
func (h *timedHandler) Admit(ctx context.Context, r ipc.AdmitRequest) (ipc.Decision, error) {
	h.admit = time.Since(h.start)
	return h.handler.Admit(ctx, r)
}
func (h *timedHandler) Publish(ctx context.Context, r ipc.PublishRequest) (ipc.PublishDecision, error) {
	h.pub = time.Since(h.start)
	return h.handler.Publish(ctx, r)
}

func TestTmpTiming(t *testing.T) {
	e := newPyEnv(t)
	l := e.launcher(t, "zeotesthost", nil, e.env()...)
	run := func(name string, f func(context.Context, launch.Invocation) (*launch.Outcome, error)) {
		for range 6 {
			inv := e.echo(t)
			h := &timedHandler{start: time.Now()}
			inv.Handler = h
			out, err := f(testCtx(t), inv)
			mustSucceed(t, out, err)
			t.Logf("%s: boot %v admit %v publish %v whole %v", name, h.boot, h.admit, h.pub, time.Since(h.start))
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, spare := range []bool{false, true} {
		z := e.zygote(t, l, launch.ZygoteConfig{Spare: spare, PreTouch: spare})
		run("warm", z.Invoke)
		z.Close()
	}
	run("cold", l.Invoke)
}
