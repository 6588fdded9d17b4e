package bolt_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

var leaseScope = ledger.Scope{OrganizationID: "org", ProjectID: "proj"}

// ownedEffect acquires controller c's lease for an hour, launches
// operation op under it, admits the attempt and authorizes effect e1: a
// dispatch in flight.
func ownedEffect(ctx context.Context, l ledger.Ledger, c, op string) (ledger.Fence, error) {
	if _, err := l.AcquireLease(ctx, c, time.Hour); err != nil {
		return ledger.Fence{}, err
	}
	a := ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: leaseScope, OperationID: op, CapabilityID: "cap",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m"), EffectBudget: 2},
		AttemptID: "a1", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: ledgertest.Digest("launch"), ControllerID: c}
	f, err := l.LaunchAttempt(ctx, a)
	if err != nil {
		return ledger.Fence{}, err
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: a.BootstrapID, LaunchDigest: a.LaunchDigest, PID: 1, SessionID: "s"}); err != nil {
		return ledger.Fence{}, err
	}
	if _, err := l.Admit(ctx, f, ledgertest.Digest("r")); err != nil {
		return ledger.Fence{}, err
	}
	_, err = l.BeginEffect(ctx, f, "e1", ledgertest.Digest("e1"))
	return f, err
}

// helperLease is the child of TestLeaseOfKilledOwner: it registers
// controller c-child, leaves an effect in flight, says so on stdout and
// waits to be killed.
func helperLease() {
	l, err := bolt.Open(os.Getenv("ZEO_LEDGER_PATH"), bolt.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	if _, err := ownedEffect(context.Background(), l, "c-child", "op"); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("ready\n")
	select {}
}

// TestLeaseOfKilledOwner: a process that holds a lease of an hour is
// killed with SIGKILL. The next owner of the file finds the lease recorded
// but not live at once (the file lock proves its holder gone): the dead
// controller's effect is unknown, its operation orphaned and taken over
// without waiting for the TTL, and its id is never live again.
func TestLeaseOfKilledOwner(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	hctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(hctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=lease", "ZEO_LEDGER_PATH="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper said %q (%v); stderr: %s", line, err, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the killed helper exited cleanly")
	}

	l, err := bolt.Open(path, bolt.Options{CheckRecords: true})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, l)
	checkDeadOwner(t, l, "c-child")
}

// TestLeaseAfterReopen: the same, for a lease acquired through a handle
// of this process that was closed: the next handle is another owner.
func TestLeaseAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ownedEffect(ctx, l, "c-old", "op"); err != nil {
		t.Fatal(err)
	}
	if es, err := l.ListInFlight(ctx); err != nil || len(es) != 1 {
		t.Fatalf("ListInFlight under the live owner = %+v, %v", es, err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, l)
	checkDeadOwner(t, l, "c-old")
}

func closeAtEnd(t *testing.T, l *bolt.Ledger) {
	t.Cleanup(func() {
		if err := l.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func checkDeadOwner(t *testing.T, l *bolt.Ledger, c string) {
	t.Helper()
	ctx := context.Background()
	leases, err := l.Leases(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(leases) != 1 || leases[0].ControllerID != c || leases[0].Live || leases[0].Released ||
		leases[0].TTL != time.Hour || !time.Now().Before(leases[0].Expires) {
		t.Fatalf("Leases after the owner lost the file = %+v, want %q recorded, unexpired by time, not live", leases, c)
	}
	if es, err := l.ListInFlight(ctx); err != nil || len(es) != 0 {
		t.Fatalf("ListInFlight = %+v, %v; want none", es, err)
	}
	es, err := l.ListUnknown(ctx)
	if err != nil || len(es) != 1 || es[0].LogicalEffectID != "e1" || es[0].ControllerID != c {
		t.Fatalf("ListUnknown = %+v, %v; want e1 of %q", es, err, c)
	}
	ops, err := l.ListOperations(ctx, ledger.OperationQuery{Orphaned: true})
	if err != nil || len(ops) != 1 || ops[0].CurrentControllerID != c {
		t.Fatalf("orphaned operations = %+v, %v", ops, err)
	}
	for name, call := range map[string]func() error{
		"RenewLease":   func() error { _, err := l.RenewLease(ctx, c, time.Hour); return err },
		"AcquireLease": func() error { _, err := l.AcquireLease(ctx, c, time.Hour); return err },
	} {
		if err := call(); !errors.Is(err, ledger.ErrLeaseExpired) {
			t.Fatalf("%s of the dead owner's id: %v, want ErrLeaseExpired", name, err)
		}
	}
	if _, err := l.AcquireLease(ctx, "c-new", time.Hour); err != nil {
		t.Fatal(err)
	}
	from := ledger.Fence{Scope: leaseScope, OperationID: "op", AttemptID: "a1", Generation: 1}
	f, err := l.TakeOver(ctx, ledger.Takeover{From: from, AttemptID: "a2", ControllerID: "c-new"})
	if err != nil || f.Generation != 2 {
		t.Fatalf("TakeOver of the dead owner's attempt = %+v, %v", f, err)
	}
	if _, err := l.Resolve(ctx, leaseScope, "op", "e1", ledgertest.Digest("e1"), ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "r1"}); err != nil {
		t.Fatalf("Resolve of the dead owner's effect: %v", err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLeaseRecordsChecked: Check (and Open with CheckRecords) verifies
// lease records too: an attempt whose controller has no lease record is
// corruption.
func TestLeaseRecordsChecked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ownedEffect(ctx, l, "c1", "op"); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("leases")).Delete([]byte("c1")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = bolt.Open(path, bolt.Options{CheckRecords: true})
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), `names controller "c1", which has no lease record`) {
		t.Fatalf("Open with CheckRecords of a ledger missing a lease record: %v, want ErrCorrupt naming it", err)
	}
}
