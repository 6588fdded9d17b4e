package supervise

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Errors of a Supervisor's lifetime: its Close and its controller lease.
var (
	// ErrClosed is returned by Invoke once Close has begun. Nothing was
	// launched or recorded.
	ErrClosed = errors.New("supervise: supervisor closed")
	// ErrDrainTimeout is wrapped by Close's error when invocations were
	// still running at its bound: their hosts were stopped, but a ledger
	// write of theirs may still be pending, so the controller's lease was
	// not released (it is left to expire, and then another controller
	// takes the attempts over). The process should exit.
	ErrDrainTimeout = errors.New("supervise: close timed out with invocations still running; lease kept until it expires")
	// ErrLeaseLost is returned by Invoke once this Supervisor's controller
	// lease has expired or could not be renewed in time: the controller is
	// fail-stopped (doc/design.md, "Controllers and leases"). Its hosts are
	// no longer answered allowed, and other controllers may take its
	// attempts over. Close it; the process should exit or start a new
	// Supervisor, which registers under a new controller id.
	ErrLeaseLost = errors.New("supervise: controller lease lost; this controller is fail-stopped")
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
