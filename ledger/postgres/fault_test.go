package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/ledger/postgres"
)

// The fault tests cut the ledger's connections while writers work, and
// check that every write either happened whole or not at all, and that
// the ledger said which when it knew: a write reported not applied is
// never found applied, and repeating a write whose outcome was unknown
// returns the recorded outcome.

const faults = 200 // connections cut per test

// churnStats count what the writers saw.
type churnStats struct {
	calls, unknown, notApplied, appliedAfterUnknown atomic.Int64
	done                                            chan struct{} // receives (without blocking) once per call answered
}

// waitDone waits until writers got n more answers, or stop is closed.
func (s *churnStats) waitDone(n int, stop <-chan struct{}) {
	for range n {
		select {
		case <-s.done:
		case <-stop:
			return
		}
	}
}

func (s *churnStats) String() string {
	return fmt.Sprintf("%d calls, %d outcomes unknown (%d of those found applied when repeated), %d not applied",
		s.calls.Load(), s.unknown.Load(), s.appliedAfterUnknown.Load(), s.notApplied.Load())
}

// repeat calls fn until it is neither ErrOutcomeUnknown nor ErrNotApplied,
// and tells fn whether the previous outcome was unknown.
func (s *churnStats) repeat(stop <-chan struct{}, fn func(ctx context.Context, afterUnknown bool) error) error {
	afterUnknown := false
	for {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		err := fn(ctx, afterUnknown)
		cancel()
		s.calls.Add(1)
		select {
		case s.done <- struct{}{}:
		default:
		}
		switch {
		case errors.Is(err, ledger.ErrOutcomeUnknown):
			s.unknown.Add(1)
			afterUnknown = true
		case errors.Is(err, ledger.ErrNotApplied):
			s.notApplied.Add(1)
			// afterUnknown stays: an unknown outcome followed by a write
			// that was not applied is still unknown.
		default:
			return err
		}
		select {
		case <-stop:
			return errStopped
		default:
		}
	}
}

var errStopped = errors.New("stopped")

// churn authorizes and confirms effects e0, e1, … of operation op until
// stop is closed, and returns the authorization each effect got.
func churn(l ledger.Ledger, op string, stats *churnStats, stop <-chan struct{}) (map[string]string, error) {
	var f ledger.Fence
	err := stats.repeat(stop, func(ctx context.Context, _ bool) (err error) {
		f, err = prepareOp(ctx, l, testScope, op, "a1", 1<<40)
		// Issuing the bootstrap id reads the operation first
		// (ledgertest.Issue), and a cut connection (dropped, or its backend
		// terminated) cuts reads too: a read has no outcome to lose, so it
		// is tried again, like a write whose outcome is unknown.
		if readCut(err) {
			err = fmt.Errorf("%w (a read was cut: %v)", ledger.ErrOutcomeUnknown, err)
		}
		return err
	})
	if errors.Is(err, errStopped) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	auths := map[string]string{}
	for k := 0; ; k++ {
		select {
		case <-stop:
			return auths, nil
		default:
		}
		id, d := fmt.Sprint("e", k), digest(fmt.Sprint("effect ", k))
		var g ledger.EffectGrant
		err := stats.repeat(stop, func(ctx context.Context, afterUnknown bool) (err error) {
			g, err = l.BeginEffect(ctx, f, id, d)
			if err == nil && g.Redelivery {
				if !afterUnknown {
					return fmt.Errorf("%s/%s: a redelivery, but no earlier call could have authorized it", op, id)
				}
				stats.appliedAfterUnknown.Add(1)
			}
			return err
		})
		if errors.Is(err, errStopped) {
			return auths, nil
		}
		if err != nil {
			return nil, err
		}
		auths[id] = g.Effect.AuthorizationID
		err = stats.repeat(stop, func(ctx context.Context, _ bool) error {
			_, err := l.ConfirmEffect(ctx, f, id, d, "receipt-"+id)
			return err
		})
		if errors.Is(err, errStopped) {
			return auths, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// readCut reports whether err is a read's connection failing under it
// (not a ledger's answer): the connection dropped or reset, or its
// backend terminated (a FATAL error from the server).
func readCut(err error) bool {
	var netErr net.Error
	var pe *pgconn.PgError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		(errors.As(err, &pe) && pe.Severity == "FATAL")
}

// renewals renews a lease until stop is closed, as a controller does
// (each renewal a transaction of its own, outside the group commit), and
// counts the renewals it was told succeeded and those whose outcome was
// unknown.
type renewals struct{ ok, unknown int64 }

func renew(l ledger.Ledger, id string, stats *churnStats, stop <-chan struct{}) (renewals, error) {
	var r renewals
	err := stats.repeat(stop, func(ctx context.Context, _ bool) error {
		_, err := l.AcquireLease(ctx, id, time.Hour)
		return err
	})
	if errors.Is(err, errStopped) {
		return r, nil
	}
	if err != nil {
		return r, err
	}
	for {
		select {
		case <-stop:
			return r, nil
		default:
		}
		err := stats.repeat(stop, func(ctx context.Context, _ bool) error {
			_, err := l.RenewLease(ctx, id, time.Hour)
			if errors.Is(err, ledger.ErrOutcomeUnknown) {
				r.unknown++
			}
			return err
		})
		if errors.Is(err, errStopped) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
		r.ok++
	}
}

// runChurn runs writers on their own operations until cut reports the
// faults done (or the test's time runs out), then checks what the ledger
// holds against what the writers were told.
func runChurn(t *testing.T, l *postgres.Ledger, dsn string, writers int, cut func(stats *churnStats, stop <-chan struct{}) error) {
	t.Helper()
	stats := &churnStats{done: make(chan struct{})}
	stop := make(chan struct{})
	results := make([]map[string]string, writers)
	errs := make([]error, writers+2)
	var wg sync.WaitGroup
	var renewed renewals
	wg.Go(func() { renewed, errs[writers+1] = renew(l, "churn-controller", stats, stop) })
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = churn(l, fmt.Sprint("op", i), stats, stop)
		}()
	}
	errs[writers] = cut(stats, stop)
	close(stop)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("writers: %s", stats)
	if stats.unknown.Load() == 0 {
		t.Errorf("no write had an unknown outcome: the faults never cut a call in flight")
	}

	// Every effect a writer was told about is in the ledger with the
	// authorization it was told, and nothing else is. The checks read
	// through a ledger of their own: l's connections may be the cut ones.
	l, err := postgres.Open(bg, dsn, postgres.Options{Schema: l.Schema()})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, l)
	var fences []ledger.Fence
	for i, auths := range results {
		op := fmt.Sprint("op", i)
		v, err := l.Operation(bg, testScope, op)
		if err != nil {
			t.Fatal(err)
		}
		fences = append(fences, ledger.Fence{Scope: testScope, OperationID: op, AttemptID: "a1", Generation: 1})
		for _, e := range v.Effects {
			a, told := auths[e.LogicalEffectID]
			if told && a != e.AuthorizationID {
				t.Errorf("%s/%s: writer was told authorization %s, the ledger holds %s", op, e.LogicalEffectID, a, e.AuthorizationID)
			}
			delete(auths, e.LogicalEffectID)
		}
		for id := range auths {
			t.Errorf("%s/%s: writer was told it was authorized; the ledger has no such effect", op, id)
		}
	}
	// The lease was renewed at least as often as the renewer was told,
	// and at most that plus the renewals whose outcome was unknown: a
	// renewal reported not applied never happened.
	all, err := l.Leases(bg)
	if err != nil || len(all) != 1 {
		t.Fatalf("Leases = %+v, %v", all, err)
	}
	if n := all[0].Renewals; n < renewed.ok || n > renewed.ok+renewed.unknown {
		t.Errorf("lease renewed %d times; the renewer was told %d, and %d more had an unknown outcome", n, renewed.ok, renewed.unknown)
	}
	t.Logf("lease: %d renewals, %d with an unknown outcome", renewed.ok, renewed.unknown)
	ledgertest.Check(t, l, fences...)
	checkTables(t, dsn, l.Schema())
}

// randN returns a random int in [0, n).
func randN(n int) int {
	v, _ := rand.Int(rand.Reader, big.NewInt(int64(n)))
	return int(v.Int64())
}

// TestTerminatedBackends terminates the ledger's backends with
// pg_terminate_backend from another connection, at random moments, while
// writers work: 200 times.
func TestTerminatedBackends(t *testing.T) {
	dsn := testDSN(t)
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	app := "zeo-test-" + hex.EncodeToString(tag[:])
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l, err := postgres.New(bg, pool, postgres.Options{Schema: newSchema(t, dsn)})
	if err != nil {
		t.Fatal(err)
	}
	defer closeLedger(t, l)
	admin, err := pgx.Connect(bg, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(bg)

	var active int
	runChurn(t, l, dsn, 4, func(stats *churnStats, stop <-chan struct{}) error {
		ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
		defer cancel()
		for done := 0; done < faults; {
			// A backend of the ledger, busy or idle, at a random moment
			// after the writers got a few answers.
			stats.waitDone(1+randN(8), stop)
			time.Sleep(time.Duration(randN(2000)) * time.Microsecond)
			rows, err := admin.Query(ctx, "SELECT pid, coalesce(state = 'active', false) FROM pg_stat_activity WHERE application_name = $1", app)
			if err != nil {
				return fmt.Errorf("after %d terminations: %w", done, err)
			}
			type backend struct {
				pid  int32
				busy bool
			}
			backends, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (b backend, err error) {
				return b, r.Scan(&b.pid, &b.busy)
			})
			if err != nil {
				return err
			}
			if len(backends) == 0 {
				continue // the pool is reconnecting
			}
			b := backends[randN(len(backends))]
			var ok bool
			if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", b.pid).Scan(&ok); err != nil {
				return err
			}
			if ok {
				done++
				if b.busy {
					active++
				}
			}
		}
		return nil
	})
	t.Logf("%d backends terminated, %d of them while running a statement", faults, active)
}

// TestDroppedConnections puts a TCP proxy between the ledger and the
// server that drops each connection after a random number of bytes (in
// either direction), 200 times.
func TestDroppedConnections(t *testing.T) {
	dsn := testDSN(t)
	p, cfg := proxied(t, dsn)
	schema := newSchema(t, dsn)
	// The schema is made without the proxy: Open's migration is not what
	// this test cuts.
	direct, err := postgres.Open(bg, dsn, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	closeLedger(t, direct)
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var l *postgres.Ledger
	for {
		// Open itself may be cut; like any caller, try again.
		if l, err = postgres.New(bg, pool, postgres.Options{Schema: schema}); err == nil {
			break
		}
		if p.drops.Load() > faults {
			t.Fatalf("New through the proxy: %v", err)
		}
	}
	defer closeLedger(t, l)
	runChurn(t, l, dsn, 4, func(_ *churnStats, stop <-chan struct{}) error {
		ctx, cancel := context.WithTimeout(bg, 3*time.Minute)
		defer cancel()
		select {
		case <-p.reached(faults):
			return nil
		case <-ctx.Done():
			return fmt.Errorf("only %d connections dropped: %w", p.drops.Load(), ctx.Err())
		}
	})
	t.Logf("%d connections dropped by the proxy", p.drops.Load())
}

// proxied starts a dropProxy in front of the server dsn names and returns
// it with a pool configuration that connects through it.
func proxied(t *testing.T, dsn string) (*dropProxy, *pgxpool.Config) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := newDropProxy(t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, err := net.SplitHostPort(p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Fallbacks = host, uint16(n), nil
	return p, cfg
}

// dropProxy forwards TCP connections to upstream and drops each one after
// a random number of bytes, counted in both directions. With unlimited
// set it drops none; while refuse is set it
// closes new connections at once.
type dropProxy struct {
	ln        net.Listener
	upstream  string
	unlimited atomic.Bool
	refuse    atomic.Bool
	drops     atomic.Int64
	mu        sync.Mutex // guards waiters
	waiters   []dropWaiter
	wg        sync.WaitGroup
}

type dropWaiter struct {
	n  int64
	ch chan struct{}
}

func newDropProxy(t *testing.T, upstream string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, upstream: upstream}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	return p
}

// reached returns a channel closed once n connections were dropped.
func (p *dropProxy) reached(n int64) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan struct{})
	if p.drops.Load() >= n {
		close(ch)
	} else {
		p.waiters = append(p.waiters, dropWaiter{n, ch})
	}
	return ch
}

func (p *dropProxy) dropped() {
	n := p.drops.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	keep := p.waiters[:0]
	for _, w := range p.waiters {
		if n >= w.n {
			close(w.ch)
		} else {
			keep = append(keep, w)
		}
	}
	p.waiters = keep
}

func (p *dropProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward joins c to a new upstream connection until budget bytes went
// through (then it drops both, which counts), or either side closes.
func (p *dropProxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer c.Close()
	if p.refuse.Load() {
		return
	}
	u, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	defer u.Close()
	budget := &atomic.Int64{}
	budget.Store(int64(500 + randN(20000)))
	if p.unlimited.Load() {
		budget.Store(math.MaxInt64)
	}
	var once sync.Once
	cut := func() {
		once.Do(func() {
			c.Close()
			u.Close()
		})
	}
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		defer wg.Done()
		defer cut()
		buf := make([]byte, 512)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				left := budget.Add(-int64(n))
				if before := left + int64(n); left < 0 {
					// Forward what fits, then drop the connection; the
					// read that crossed zero counts the drop.
					if before > 0 {
						_, _ = dst.Write(buf[:before])
					}
					if before >= 0 {
						p.dropped()
					}
					return
				}
				if _, err := dst.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return // closed by either side
			}
		}
	}
	wg.Add(2)
	go pipe(u, c)
	go pipe(c, u)
	wg.Wait()
}
