package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
)

// Durable effect authorization: BeginEffect (new logical effect, budget
// debit, fsynced) then ConfirmEffect (fsynced), by W concurrent writers, each
// on its own operation. Compared, in the same run, with raw bbolt doing one
// Put per fsynced transaction with the same number of writers. ns/op is
// wall time per authorization (or per raw commit), so ops/s = 1e9/ns_op;
// the "auth/s" and "commit/s" metrics report it directly.
//
//	cd bench && go test -run '^$' -bench Ledger -benchmem -count 3

var ledgerWriters = []int{1, 8, 64}

// BenchmarkLedgerDurable puts the raw bbolt baseline and the ledger next to
// each other for each writer count, so that load drift on a shared machine
// hits both sides of a ratio alike.
func BenchmarkLedgerDurable(b *testing.B) {
	for _, w := range ledgerWriters {
		b.Run(fmt.Sprintf("writers=%d/raw-bbolt-put", w), func(b *testing.B) { benchRawPut(b, w) })
		b.Run(fmt.Sprintf("writers=%d/bolt-authorize", w), func(b *testing.B) {
			l, err := bolt.Open(filepath.Join(b.TempDir(), "ledger.db"), bolt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close(context.Background())
			benchAuthorize(b, l, w, l.Stats)
		})
	}
}

func BenchmarkLedgerMemory(b *testing.B) {
	for _, w := range ledgerWriters {
		b.Run(fmt.Sprintf("writers=%d/authorize", w), func(b *testing.B) {
			l := memory.New()
			defer l.Close(context.Background())
			benchAuthorize(b, l, w, nil)
		})
	}
}

// benchAuthorize runs the authorizations. With stats (the bolt ledger's),
// it also reports the group commit of the timed part: writes/commit (the
// mean batch size) and, per commit, the microseconds spent running the
// writes (apply-µs) and in bbolt's Commit (commit-µs: page writes and the
// two fdatasyncs).
func benchAuthorize(b *testing.B, l ledger.Ledger, writers int, stats func() bolt.Stats) {
	ctx := context.Background()
	fences := authorizeSetup(b, l, writers)
	d := canon.Sum([]byte("effect request"))
	var before bolt.Stats
	if stats != nil {
		before = stats()
	}
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := fences[i]
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := fmt.Sprint("e", n)
				if _, err := l.BeginEffect(ctx, f, id, d); err != nil {
					errs <- err
					return
				}
				if _, err := l.ConfirmEffect(ctx, f, id, d, "rcpt-"+id); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "auth/s")
	if stats != nil {
		after := stats()
		if n := after.Commits - before.Commits; n > 0 {
			b.ReportMetric(float64(after.Writes-before.Writes)/float64(n), "writes/commit")
			b.ReportMetric(float64((after.ApplyTime-before.ApplyTime).Microseconds())/float64(n), "apply-µs/commit")
			b.ReportMetric(float64((after.CommitTime-before.CommitTime).Microseconds())/float64(n), "commit-µs/commit")
		}
	}
}

// authorizeSetup creates one operation per writer, each with an admitted
// attempt, and returns their fences.
func authorizeSetup(b *testing.B, l ledger.Ledger, writers int) []ledger.Fence {
	ctx := context.Background()
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	fences := make([]ledger.Fence, writers)
	for i := range writers {
		op := fmt.Sprint("op-", i)
		if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
			RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man")), EffectBudget: 1 << 40}); err != nil {
			b.Fatal(err)
		}
		f, err := l.StartAttempt(ctx, scope, op, "a1")
		if err != nil {
			b.Fatal(err)
		}
		// Effects need an admitted attempt, which needs a redeemed bootstrap.
		launch := canon.Sum([]byte("launch"))
		if _, err := l.IssueBootstrap(ctx, f, "boot-"+op, launch); err != nil {
			b.Fatal(err)
		}
		if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: launch, PID: 1, SessionID: "s"}); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Admit(ctx, f, canon.Sum([]byte("req"))); err != nil {
			b.Fatal(err)
		}
		fences[i] = f
	}
	return fences
}

// benchRawPut is the baseline: one Put per fsynced bbolt transaction.
func benchRawPut(b *testing.B, w int) {
	db, err := bbolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bucket := []byte("b")
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 200) // about the size of one effect record
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var key [8]byte
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				binary.BigEndian.PutUint64(key[:], uint64(n))
				if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put(key[:], val) }); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commit/s")
}
