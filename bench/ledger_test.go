package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
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
		// Effects need an admitted attempt, which needs a redeemed bootstrap.
		launch := canon.Sum([]byte("launch"))
		f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
			RequestDigest: canon.Sum([]byte("req")), ManifestDigest: canon.Sum([]byte("man")), EffectBudget: 1 << 40},
			AttemptID: "a1", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: launch})
		if err != nil {
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
	var next atomic.Uint64
	keys := make([][8]byte, w) // one per writer, so that no call allocates one
	runWriters(b, w, func(i int) error {
		key := &keys[i]
		binary.BigEndian.PutUint64(key[:], next.Add(1))
		return db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bucket).Put(key[:], val) })
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commit/s")
}

// BenchmarkLedgerOpen measures Open and Close on a ledger of 1,000
// operations, each with 5 confirmed effects, evidence and an accepted
// result: Open as it is (it checks bbolt's page structure from the file's
// bytes), Open with Options.CheckRecords (every record decoded and the
// ledger's invariants checked), and a raw bbolt Open and Close of the same
// file.
//
//	cd bench && go test -run '^$' -bench LedgerOpen -benchmem -count 5
func BenchmarkLedgerOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ledger.db")
	populateForOpen(b, path, 1000, 5)
	size, err := fileSize(path)
	if err != nil {
		b.Fatal(err)
	}
	for _, row := range []struct {
		name string
		opts bolt.Options
	}{{"bolt-open-close", bolt.Options{}}, {"bolt-open-checkrecords-close", bolt.Options{CheckRecords: true}}} {
		b.Run(row.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, err := bolt.Open(path, row.opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Close(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(size)/(1<<20), "file-MiB")
		})
	}
	b.Run("raw-bbolt-open-close", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Close(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// populateForOpen writes ops operations, each with effects confirmed
// effects, attempt evidence and an accepted result, from 64 writers so that
// the group commit keeps it quick.
func populateForOpen(b *testing.B, path string, ops, effects int) {
	b.Helper()
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	ctx := context.Background()
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	digest := func(s string) canon.Digest { return canon.Sum([]byte(s)) }
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < ops; i = int(next.Add(1)) - 1 {
				if err := populateOne(ctx, l, scope, fmt.Sprintf("op-%05d", i), effects, digest); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

func populateOne(ctx context.Context, l *bolt.Ledger, scope ledger.Scope, op string, effects int, digest func(string) canon.Digest) error {
	boot := "boot-" + op
	f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
		RequestDigest: digest("req"), ManifestDigest: digest("man"), EffectBudget: int64(effects)},
		AttemptID: "a", Generation: 1, BootstrapID: boot, LaunchDigest: digest("launch")})
	if err != nil {
		return err
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: digest("launch"), PID: 1, SessionID: "s"}); err != nil {
		return err
	}
	if _, err := l.Admit(ctx, f, digest("req")); err != nil {
		return err
	}
	for e := range effects {
		id := fmt.Sprintf("e%d", e)
		if _, err := l.BeginEffect(ctx, f, id, digest(op+id)); err != nil {
			return err
		}
		if _, err := l.ConfirmEffect(ctx, f, id, digest(op+id), "r-"+id); err != nil {
			return err
		}
	}
	if _, err := l.RecordAttempt(ctx, f, ledger.AttemptEvidence{SeatID: "seat", RuntimeBindingID: "rb", PacketID: "pk",
		BootstrapID: boot, LaunchDigest: digest("launch"), State: "succeeded", Launched: true, PID: 1}); err != nil {
		return err
	}
	_, err = l.AcceptResult(ctx, f, digest(op+"data"), []byte("artifact of "+op))
	return err
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
