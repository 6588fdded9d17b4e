package ipc

import (
	"context"
	"sync"
)

// AfterReply arranges for f to run once the reply to the request whose
// Handler call ctx belongs to has been written, or the exchange has ended
// without one, on the Session's goroutine and before it reads the next
// request. It reports false, and keeps nothing, when ctx is not (derived
// from) the context of a Handler call that a Session is still making; the
// caller then does the work itself.
//
// It is for work that the reply does not depend on and that need not be
// done before the host hears its answer, such as recording telemetry:
// done after the write, it overlaps the host's own work on the reply
// instead of delaying it. f must not block, and must take its timestamps
// when it is registered, not when it runs. Every f of an exchange runs,
// in the order registered, before that exchange returns, so before Serve
// does.
func AfterReply(ctx context.Context, f func()) bool {
	a, _ := ctx.Value(afterReplyKey{}).(*afterReply)
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.open {
		return false
	}
	a.fns = append(a.fns, f)
	return true
}

// afterReplyKey is the context key of a Session's afterReply.
type afterReplyKey struct{}

// afterReply holds what AfterReply deferred during one exchange. A
// Handler may register from goroutines of its own, hence the mutex; the
// Session opens it before calling the Handler and runs it once the reply
// is written.
type afterReply struct {
	mu   sync.Mutex
	open bool // a Handler call of this Session is under way: AfterReply keeps f
	fns  []func()
}

// begin opens a for the Handler call about to be made.
func (a *afterReply) begin() {
	a.mu.Lock()
	a.open = true
	a.mu.Unlock()
}

// run closes a and runs what was registered since begin, in order. Once
// closed, AfterReply refuses, so that nothing registered late is left
// behind: its caller does the work itself.
func (a *afterReply) run() {
	a.mu.Lock()
	a.open = false
	fns := a.fns
	a.fns = nil
	a.mu.Unlock()
	for _, f := range fns {
		f()
	}
	clear(fns)
	// Closed, a keeps nothing until the next begin, on this goroutine: its
	// backing array serves the next exchange.
	a.mu.Lock()
	a.fns = fns[:0]
	a.mu.Unlock()
}
