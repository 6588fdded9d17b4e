package supervise

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/launch"
)

// flight is the one Invoke of an operation that runs attempts in this
// process; concurrent Invoke calls of the same operation and request wait
// for it and get its outcome, instead of fencing each other off.
type flight struct {
	digest canon.Digest
	done   chan struct{}
	o      *Outcome // set before done is closed
	err    error
	// gaveUp is set when the leader's own context ended before its
	// outcome: that outcome says so, and is not the followers' answer.
	gaveUp bool
}

// join returns the operation's flight and whether this call leads it.
func (s *Supervisor) join(c Call, digest canon.Digest) (*flight, bool) {
	k := opKey{c.Scope, c.OperationID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.flights[k]; f != nil {
		return f, false
	}
	f := &flight{digest: digest, done: make(chan struct{})}
	s.flights[k] = f
	return f, true
}

// land ends the leader's flight with its answer.
func (s *Supervisor) land(c Call, f *flight, o *Outcome, err error, gaveUp bool) {
	k := opKey{c.Scope, c.OperationID}
	s.mu.Lock()
	if s.flights[k] == f {
		delete(s.flights, k)
	}
	s.mu.Unlock()
	f.o, f.err, f.gaveUp = o, err, gaveUp
	close(f.done)
}

// follow waits, bounded by ctx, for the flight another Invoke leads, and
// answers with its outcome. again reports that the caller must run the
// operation itself now: its request differs from the leader's (the ledger
// then answers it, an operation mismatch), or the leader ended without an
// outcome (its context ended first, say).
func (s *Supervisor) follow(ctx context.Context, f *flight, digest canon.Digest, o *Outcome) (res *Outcome, again bool, err error) {
	select {
	case <-f.done:
	case <-ctx.Done():
		o.State = launch.StateRunning
		o.Reason = fmt.Sprintf("an attempt of the operation is running in this controller; the call's context ended first (%v): ask again with the same operation id for its outcome", context.Cause(ctx))
		return o, false, &OutcomeError{Outcome: o, Err: ErrRunning, Cause: context.Cause(ctx)}
	}
	if f.o == nil || f.digest != digest || f.gaveUp {
		return nil, true, nil
	}
	res, err = f.share()
	return res, false, err
}

// share returns a copy of the flight's outcome, marked Shared.
func (f *flight) share() (*Outcome, error) {
	cp := *f.o
	cp.Shared = true
	if f.err == nil {
		return &cp, nil
	}
	var oe *OutcomeError
	if errors.As(f.err, &oe) {
		return &cp, &OutcomeError{Outcome: &cp, Err: oe.Err, Cause: oe.Cause}
	}
	return &cp, f.err
}
