package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// The cost of checking every record read (issue 23): the bolt ledger's
// read paths on a ledger of 1,000 operations (5 confirmed effects,
// evidence and a result each), artifacts of three sizes, and its write
// paths (an authorization: BeginEffect then ConfirmEffect, fsynced, by 1
// and 64 writers). It uses only API that the build before the checks
// had, so the same file runs against both builds; "before" is main's
// commit before the change, built from a git worktree, and the two test
// binaries are run alternately (see BENCHMARKS.md for the script):
//
//	cd bench && go test -run '^$' -bench LedgerIntegrity -benchmem -count 5

func BenchmarkLedgerIntegrity(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "ledger.db")
	ops := 1000
	if n, err := strconv.Atoi(os.Getenv("ZEO_BENCH_INTEGRITY_OPS")); err == nil && n > 0 {
		ops = n // a smaller ledger for runs under an instruction counter
	}
	populateForOpen(b, path, ops, 5)
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(ctx)
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	refs := map[int]string{}
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		op := fmt.Sprint("art-", size)
		f := artifactOp(b, l, scope, op)
		res, err := l.AcceptResult(ctx, f, canon.Sum([]byte(op)), bytes.Repeat([]byte{'x'}, size))
		if err != nil {
			b.Fatal(err)
		}
		refs[size] = res.ArtifactRefs[0]
	}
	b.Run("read/operation", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		i := 0
		for b.Loop() {
			if _, err := l.Operation(ctx, scope, fmt.Sprintf("op-%05d", i%ops)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("read/operation-missing", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if _, err := l.Operation(ctx, scope, "op-nope"); err == nil {
				b.Fatal("found")
			}
		}
	})
	b.Run("read/list-operations-100", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		for b.Loop() {
			if ops, err := l.ListOperations(ctx, ledger.OperationQuery{Scope: scope, Limit: 100}); err != nil || len(ops) != 100 {
				b.Fatal(len(ops), err)
			}
		}
	})
	b.Run("read/evidence", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, processCPU())
		i := 0
		for b.Loop() {
			if _, err := l.Evidence(ctx, scope, fmt.Sprintf("op-%05d", i%ops)); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("read/artifact-%dB", size), func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, processCPU())
			for b.Loop() {
				if _, err := l.Artifact(ctx, scope, refs[size]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	for _, w := range []int{1, 64} {
		b.Run(fmt.Sprintf("write/authorize-writers=%d", w), func(b *testing.B) {
			wl, err := bolt.Open(filepath.Join(b.TempDir(), "ledger.db"), bolt.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer wl.Close(context.Background())
			benchAuthorize(b, wl, w, wl.Stats)
		})
	}
}

// artifactOp creates an operation with an admitted attempt, ready for a
// result.
func artifactOp(b *testing.B, l *bolt.Ledger, scope ledger.Scope, op string) ledger.Fence {
	ctx := context.Background()
	digest := func(s string) canon.Digest { return canon.Sum([]byte(s)) }
	f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap",
		RequestDigest: digest("req"), ManifestDigest: digest("man")},
		AttemptID: "a", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: digest("launch")})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: digest("launch"), PID: 1, SessionID: "s"}); err != nil {
		b.Fatal(err)
	}
	if _, err := l.Admit(ctx, f, digest("req")); err != nil {
		b.Fatal(err)
	}
	return f
}
