package ipc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// deferring is a Handler that allows everything and defers, with
// AfterReply, a note of how many exchanges the Session had recorded when
// the deferred work ran: an exchange is recorded only once its reply has
// been written.
type deferring struct {
	allowAll
	s *ipc.Session

	mu    sync.Mutex
	log   []string
	ctxs  []context.Context // every call's context, kept past the call
	taken []bool            // what AfterReply reported, call by call
}

func (h *deferring) note(ctx context.Context, c ipc.Call) {
	h.mu.Lock()
	h.log = append(h.log, fmt.Sprintf("decide %d", c.Sequence))
	h.ctxs = append(h.ctxs, ctx)
	h.mu.Unlock()
	ok := ipc.AfterReply(ctx, func() {
		n := len(h.s.Summary().Exchanges)
		h.mu.Lock()
		h.log = append(h.log, fmt.Sprintf("after %d, %d replied", c.Sequence, n))
		h.mu.Unlock()
	})
	h.mu.Lock()
	h.taken = append(h.taken, ok)
	h.mu.Unlock()
}

func (h *deferring) Bootstrap(ctx context.Context, r ipc.BootstrapRequest) (ipc.Decision, error) {
	h.note(ctx, r.Call)
	return h.allowAll.Bootstrap(ctx, r)
}

func (h *deferring) Admit(ctx context.Context, r ipc.AdmitRequest) (ipc.Decision, error) {
	h.note(ctx, r.Call)
	return h.allowAll.Admit(ctx, r)
}

func (h *deferring) Effect(ctx context.Context, r ipc.EffectCall) (ipc.EffectDecision, error) {
	h.note(ctx, r.Call)
	return h.allowAll.Effect(ctx, r)
}

func (h *deferring) Publish(ctx context.Context, r ipc.PublishRequest) (ipc.PublishDecision, error) {
	h.note(ctx, r.Call)
	return h.allowAll.Publish(ctx, r)
}

// TestAfterReply: what a Handler defers with AfterReply runs after its
// reply was written and before the next request is decided, in every
// exchange; outside a Handler call, or once the call's exchange is over,
// AfterReply keeps nothing and says so.
func TestAfterReply(t *testing.T) {
	w := testvectors.Inline[vectors](t).Derived.WorkedExample
	rt, host := socketpair(t)
	s := workedSession(t, rt)
	h := &deferring{s: s}
	wait := serve(t, s, h)
	for _, f := range w.Frames {
		if err := ipc.WriteFrame(host, []byte(f.Body), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := ipc.ReadFrame(host, 0); err != nil {
			t.Fatal(err)
		}
	}
	host.Close()
	if err := wait(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	var want []string
	for i := range w.Frames {
		want = append(want, fmt.Sprintf("decide %d", i+1), fmt.Sprintf("after %d, %d replied", i+1, i+1))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if diff := cmp.Diff(want, h.log); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	for i, ok := range h.taken {
		if !ok {
			t.Errorf("call %d: AfterReply refused during the call", i+1)
		}
	}
	ran := false
	for i, ctx := range h.ctxs {
		if ipc.AfterReply(ctx, func() { ran = true }) {
			t.Errorf("call %d: AfterReply kept work after the exchange was over", i+1)
		}
	}
	if ipc.AfterReply(context.Background(), func() { ran = true }) {
		t.Error("AfterReply kept work outside any Session")
	}
	if ran {
		t.Error("work AfterReply refused was run")
	}
}
