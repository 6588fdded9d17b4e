package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Controller leases on the bolt ledger (issue 22), side by side in one run:
//
//   - authorize-unowned / authorize-owned: BenchmarkLedgerDurable's
//     authorization (BeginEffect + ConfirmEffect, fsynced) by attempts
//     without a controller and by attempts of one live controller, whose
//     lease every new effect checks in its transaction;
//   - raw-bbolt-put / renew: one controller's RenewLease in a loop (each a
//     durable write) against raw bbolt's one Put per fsynced transaction.
//     cpu-µs/op is the process's user+system CPU per renewal; a controller
//     that renews every period p costs 1/p of these per second.
//
//	cd bench && go test -run '^$' -bench LedgerLease -benchmem -count 3

func BenchmarkLedgerLease(b *testing.B) {
	for _, w := range []int{1, 8} {
		for _, owned := range []bool{false, true} {
			name := "authorize-unowned"
			if owned {
				name = "authorize-owned"
			}
			b.Run(fmt.Sprintf("writers=%d/%s", w, name), func(b *testing.B) {
				l := openBolt(b)
				benchAuthorizeOwned(b, l, w, owned)
			})
		}
	}
	b.Run("writers=1/raw-bbolt-put", func(b *testing.B) { benchRawPut(b, 1) })
	b.Run("writers=1/renew", func(b *testing.B) {
		l := openBolt(b)
		ctx := context.Background()
		if _, err := l.AcquireLease(ctx, "c1", time.Minute); err != nil {
			b.Fatal(err)
		}
		cpu := processCPU()
		runWriters(b, 1, func(int) error {
			_, err := l.RenewLease(ctx, "c1", time.Minute)
			return err
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "renew/s")
		b.ReportMetric(float64((processCPU()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
	})
}

// benchAuthorizeOwned is benchAuthorize over attempts launched by
// controller c1 (owned) or without a controller.
func benchAuthorizeOwned(b *testing.B, l ledger.Ledger, writers int, owned bool) {
	ctx := context.Background()
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	ctl := ""
	if owned {
		ctl = "c1"
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
	d := canon.Sum([]byte("effect request"))
	var next atomic.Int64
	runWriters(b, writers, func(i int) error {
		f := fences[i]
		id := fmt.Sprint("e", next.Add(1))
		if _, err := l.BeginEffect(ctx, f, id, d); err != nil {
			return err
		}
		_, err := l.ConfirmEffect(ctx, f, id, d, "rcpt-"+id)
		return err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "auth/s")
}
