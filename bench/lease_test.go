package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Controller leases on the bolt ledger (issue 22), in alternating rounds
// so that load drift on a shared machine hits both sides of each ratio
// alike:
//
//   - owned: a round of authorizations (BeginEffect + ConfirmEffect,
//     fsynced, as in BenchmarkLedgerDurable) by attempts without a
//     controller, then a round by attempts of one live controller, whose
//     lease every new effect checks in its transaction, on a ledger of
//     their own; ratio is owned auth/s over unowned auth/s;
//   - renew: a round of raw bbolt Puts, one per fsynced transaction, then
//     a round of RenewLease (a durable write) by as many controllers, each
//     renewing its own lease; ratio is renew/s over put/s, and cpu-µs is
//     the process's user+system CPU per renewal (a controller renewing
//     every period p costs 1/p of it per second).
//
// One op is one round of each side, 8 calls per writer.
//
//	cd bench && go test -run '^$' -bench LedgerLease -benchtime 20x -count 5
func BenchmarkLedgerLease(b *testing.B) {
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("owned/writers=%d", w), func(b *testing.B) { benchOwned(b, w) })
	}
	for _, w := range []int{1, 8} {
		b.Run(fmt.Sprintf("renew/controllers=%d", w), func(b *testing.B) { benchRenew(b, w) })
	}
}

func benchOwned(b *testing.B, w int) {
	ctx := context.Background()
	unowned, owned := openBolt(b), openBolt(b)
	fu, fo := ownedSetup(b, unowned, w, ""), ownedSetup(b, owned, w, "c1")
	d := canon.Sum([]byte("effect request"))
	authorize := func(l ledger.Ledger, fences []ledger.Fence, next *atomic.Int64) func(int) error {
		return func(i int) error {
			id := fmt.Sprint("e", next.Add(1))
			if _, err := l.BeginEffect(ctx, fences[i], id, d); err != nil {
				return err
			}
			_, err := l.ConfirmEffect(ctx, fences[i], id, d, "rcpt-"+id)
			return err
		}
	}
	var nu, no atomic.Int64
	perRound := 8 * w
	var tu, to time.Duration
	b.ResetTimer()
	for range b.N {
		tu += rounds(b, w, perRound, authorize(unowned, fu, &nu))
		to += rounds(b, w, perRound, authorize(owned, fo, &no))
	}
	b.StopTimer()
	n := float64(b.N * perRound)
	b.ReportMetric(n/tu.Seconds(), "unowned-auth/s")
	b.ReportMetric(n/to.Seconds(), "owned-auth/s")
	b.ReportMetric(tu.Seconds()/to.Seconds(), "ratio")
}

// ownedSetup launches one operation per writer, for controller ctl (none
// when empty), and admits its attempt.
func ownedSetup(b *testing.B, l ledger.Ledger, writers int, ctl string) []ledger.Fence {
	ctx := context.Background()
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	if ctl != "" {
		if _, err := l.AcquireLease(ctx, ctl, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	fences := make([]ledger.Fence, writers)
	launch := canon.Sum([]byte("launch"))
	for i := range writers {
		op := fmt.Sprint("op-", i)
		a := ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
			RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man")), EffectBudget: 1 << 40},
			AttemptID: "a1", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: launch, ControllerID: ctl}
		f, err := l.LaunchAttempt(ctx, a)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: a.BootstrapID, LaunchDigest: launch, PID: 1, SessionID: "s"}); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Admit(ctx, f, canon.Sum([]byte("req"))); err != nil {
			b.Fatal(err)
		}
		fences[i] = f
	}
	return fences
}

func benchRenew(b *testing.B, w int) {
	ctx := context.Background()
	l := openBolt(b)
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 150) // about the size of one lease record
	ids := make([]string, w)
	for i := range w {
		ids[i] = fmt.Sprint("c", i)
		if _, err := l.AcquireLease(ctx, ids[i], time.Minute); err != nil {
			b.Fatal(err)
		}
	}
	perRound := 8 * w
	var tp, tr, cpu time.Duration
	b.ResetTimer()
	for range b.N {
		tp += rounds(b, w, perRound, func(i int) error {
			return db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put([]byte(ids[i]), val) })
		})
		c := processCPU()
		tr += rounds(b, w, perRound, func(i int) error {
			_, err := l.RenewLease(ctx, ids[i], time.Minute)
			return err
		})
		cpu += processCPU() - c
	}
	b.StopTimer()
	n := float64(b.N * perRound)
	b.ReportMetric(n/tp.Seconds(), "put/s")
	b.ReportMetric(n/tr.Seconds(), "renew/s")
	b.ReportMetric(tp.Seconds()/tr.Seconds(), "ratio")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/renew")
}
