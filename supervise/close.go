package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// enter counts one Invoke in, or refuses it once Close has begun.
func (s *Supervisor) enter() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return ErrClosed
	}
	s.calls.Add(1)
	return nil
}

// Close shuts the Supervisor down within ctx's bound (doc/design.md,
// "Bounded shutdown"): it stops taking calls (Invoke returns ErrClosed),
// lets the invocations in flight finish until ctx ends, then cancels them
// (their hosts are stopped after the launcher's grace) and waits up to
// Config.CancelGrace more for them to return. It closes every starter and
// fork server the Supervisor made.
//
// The controller's lease is released only when no invocation is left,
// that is when no write of this controller can still land. Otherwise the
// error wraps ErrDrainTimeout and the lease is left to expire (fail-stop):
// never released early. Close does not close the Ledger, which the
// embedder owns; close it after Close returns. Close may be called more
// than once; later calls wait the same way.
func (s *Supervisor) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()

	drained := make(chan struct{})
	go func() {
		s.calls.Wait()
		close(drained)
	}()
	ok := false
	select {
	case <-drained:
		ok = true
	case <-ctx.Done():
		s.stopAll()
		t := time.NewTimer(s.cfg.CancelGrace)
		select {
		case <-drained:
			ok = true
		case <-t.C:
		}
		t.Stop()
	}
	var errs []error
	if err := s.starters.closeAll(); err != nil {
		errs = append(errs, err)
	}
	if ok {
		if err := s.releaseLease(context.WithoutCancel(ctx)); err != nil {
			errs = append(errs, err)
		}
	} else {
		s.abandonLease()
		s.mu.Lock()
		n := 0
		for _, rs := range s.running {
			n += len(rs)
		}
		s.mu.Unlock()
		errs = append(errs, fmt.Errorf("%w: %d attempts still running after their hosts were stopped", ErrDrainTimeout, n))
	}
	return errors.Join(errs...)
}

// stopAll cancels every invocation in flight: their launches are stopped
// (SIGTERM to the host's group, SIGKILL after the grace).
func (s *Supervisor) stopAll() {
	s.mu.Lock()
	var runs []*run
	for _, rs := range s.running {
		for r := range rs {
			runs = append(runs, r)
		}
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.stop()
	}
}
