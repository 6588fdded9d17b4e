package supervise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// controller is the Supervisor's registration in the ledger: its lease,
// renewed in the background, and the local deadline before which it
// knows the lease is live.
type controller struct {
	s   *Supervisor
	id  string
	ttl time.Duration

	acq      sync.Mutex // serializes the acquisition
	acquired bool       // guarded by acq

	mu       sync.Mutex
	until    time.Time // monotonic: the lease is live at least until then
	lost     error     // set once the lease is lost for good
	stop     chan struct{}
	done     chan struct{}
	released bool
}

// newControllerID returns a controller id unique to this process.
func newControllerID() (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("supervise: controller id: %w", err)
	}
	host, _ := os.Hostname()
	if len(host) > 64 {
		host = host[:64]
	}
	if host == "" {
		host = "host"
	}
	return fmt.Sprintf("ctl-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// ControllerID returns the controller id this Supervisor registers its
// lease under, and records on every attempt it launches.
func (s *Supervisor) ControllerID() string { return s.ctl.id }

// own makes sure the controller holds its lease, acquiring it on first
// use (a failed acquisition is tried again by the next call), and refuses
// once it was lost or released.
func (s *Supervisor) own(ctx context.Context) error {
	c := s.ctl
	c.acq.Lock()
	if !c.acquired {
		c.mu.Lock()
		released := c.released
		c.mu.Unlock()
		if released {
			c.acq.Unlock()
			return ErrClosed
		}
		sent := time.Now()
		l, err := s.cfg.Ledger.AcquireLease(ctx, c.id, c.ttl)
		if err != nil {
			c.acq.Unlock()
			return fmt.Errorf("supervise: registering controller %q: %w", c.id, err)
		}
		c.mu.Lock()
		c.until = sent.Add(c.ttl)
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		stop := c.stop
		c.mu.Unlock()
		c.acquired = true
		s.log.Info("supervise: controller registered", telemetry.KeyController, c.id, telemetry.KeyLeaseTTL, c.ttl, telemetry.KeyLeaseExpires, l.Expires)
		go c.renew()
		if s.cfg.TakeoverInterval > 0 {
			s.takeoverWG.Add(1)
			go s.takeoverLoop(stop)
		}
	}
	c.acq.Unlock()
	return s.live()
}

// live reports whether the controller still knows its lease to be live:
// nil, or an error wrapping ErrLeaseLost. The local deadline is counted
// from before each renewal was sent, so it passes before the store's
// expiry does (the store counts from when it received the renewal).
func (s *Supervisor) live() error {
	c := s.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.lost != nil:
		return c.lost
	case c.until.IsZero():
		return fmt.Errorf("%w: controller %q holds no lease", ErrLeaseLost, c.id)
	case !time.Now().Before(c.until):
		return fmt.Errorf("%w: controller %q could not renew its lease before %s", ErrLeaseLost, c.id, c.until.Format(time.RFC3339Nano))
	}
	return nil
}

// renew renews the lease every third of its ttl until stopped. A renewal
// that fails for a transient reason is tried again at the next tick; the
// local deadline passes meanwhile and the controller stops answering its
// hosts until a renewal lands. A lease the store declares expired is lost
// for good: every host of this controller is stopped.
func (c *controller) renew() {
	defer close(c.done)
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		sent := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), c.ttl/3)
		_, err := c.s.cfg.Ledger.RenewLease(ctx, c.id, c.ttl)
		cancel()
		if err == nil {
			c.s.tel.Renewal(telemetry.RenewalOK)
			c.mu.Lock()
			if c.lost == nil {
				c.until = sent.Add(c.ttl)
			}
			c.mu.Unlock()
			continue
		}
		if errors.Is(err, ledger.ErrLeaseExpired) || errors.Is(err, ledger.ErrNotFound) {
			c.mu.Lock()
			c.lost = fmt.Errorf("%w: %w", ErrLeaseLost, err)
			c.mu.Unlock()
			c.s.tel.Renewal(telemetry.RenewalLost)
			c.s.log.Error("supervise: controller lease lost: fail-stop", telemetry.KeyController, c.id, telemetry.KeyErr, err)
			c.s.stopAll()
			return
		}
		c.s.tel.Renewal(telemetry.RenewalFailed)
		c.s.log.Warn("supervise: renewing the controller lease failed; retrying", telemetry.KeyController, c.id, telemetry.KeyErr, err)
	}
}

// halt stops the renewal and takeover loops and waits for them within
// ctx; false means one is still in a ledger call (a stalled write) at the
// bound, and finishes by itself when that call returns.
func (s *Supervisor) halt(ctx context.Context) bool {
	c := s.ctl
	c.acq.Lock() // no acquisition under way
	c.mu.Lock()
	c.released = true
	stop, done := c.stop, c.done
	if stop != nil {
		select {
		case <-stop:
		default:
			close(stop)
		}
	}
	c.mu.Unlock()
	c.acq.Unlock()
	loops := make(chan struct{})
	go func() {
		if done != nil {
			<-done
		}
		s.takeoverWG.Wait()
		close(loops)
	}()
	select {
	case <-loops:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseLease stops renewing and releases the lease: every write of this
// controller has landed. A lease never acquired is not released; one
// whose renewal is still stalled at ctx's bound is left to expire.
func (s *Supervisor) releaseLease(ctx context.Context) error {
	bound, cancel := context.WithTimeout(ctx, s.cfg.CancelGrace)
	defer cancel()
	if !s.halt(bound) {
		s.abandon()
		return fmt.Errorf("%w: a lease renewal of controller %q is still stalled in the ledger", ErrDrainTimeout, s.ctl.id)
	}
	c := s.ctl
	c.mu.Lock()
	acquired, lost := c.stop != nil, c.lost
	c.until = time.Time{}
	c.mu.Unlock()
	if !acquired || lost != nil {
		return nil
	}
	rctx, rcancel := context.WithTimeout(ctx, s.cfg.OutcomeTimeout)
	defer rcancel()
	if _, err := s.cfg.Ledger.ReleaseLease(rctx, c.id); err != nil {
		return fmt.Errorf("supervise: releasing controller %q's lease (it expires by itself): %w", c.id, err)
	}
	return nil
}

// abandonLease stops renewing without releasing: the lease expires by
// itself, and until then nothing of this controller is answered allowed.
// It does not wait for a renewal stalled in the ledger.
func (s *Supervisor) abandonLease() {
	bound, cancel := context.WithTimeout(context.Background(), s.cfg.CancelGrace)
	defer cancel()
	s.halt(bound)
	s.abandon()
}

// abandon marks the lease lost, so that no host of this controller is
// answered allowed again.
func (s *Supervisor) abandon() {
	c := s.ctl
	c.mu.Lock()
	if c.lost == nil {
		c.lost = fmt.Errorf("%w: controller %q was closed with writes still pending; its lease is left to expire", ErrLeaseLost, c.id)
	}
	c.mu.Unlock()
}

// takeoverLoop runs Recover every Config.TakeoverInterval until stop.
func (s *Supervisor) takeoverLoop(stop <-chan struct{}) {
	defer s.takeoverWG.Done()
	t := time.NewTicker(s.cfg.TakeoverInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TakeoverInterval)
		go func() {
			select {
			case <-stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		rec, err := s.Recover(ctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			s.log.Warn("supervise: takeover pass failed", telemetry.KeyController, s.ctl.id, telemetry.KeyErr, err)
		}
		if len(rec.Fenced) > 0 {
			s.log.Info("supervise: took over orphaned attempts", telemetry.KeyController, s.ctl.id, telemetry.KeyCount, len(rec.Fenced))
		}
	}
}
