package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// helperEnv switches the test binary into a helper child (see TestMain).
const helperEnv = "ZEO_LEDGER_BOLT_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		longtest.ShrinkRapid()
		os.Exit(m.Run())
	case "open":
		helperOpen()
	case "crash":
		helperCrash()
	case "corrupt":
		helperCorrupt()
	case "lease":
		helperLease()
	case "bitflip":
		helperBitFlip()
	default:
		os.Stderr.WriteString("unknown helper " + os.Getenv(helperEnv) + "\n")
		os.Exit(2)
	}
}

// helperOpen tries to open the ledger named by ZEO_LEDGER_PATH and exits 0
// if it could, 3 with the error on stderr if it is locked, 1 otherwise.
func helperOpen() {
	l, err := bolt.Open(os.Getenv("ZEO_LEDGER_PATH"), bolt.Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		if errors.Is(err, ledger.ErrLocked) {
			os.Exit(3)
		}
		os.Exit(1)
	}
	if err := l.Close(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func openTemp(t *testing.T) *bolt.Ledger {
	t.Helper()
	l, err := bolt.Open(filepath.Join(t.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConformance(t *testing.T) {
	ledgertest.Run(t, func(t *testing.T) ledger.Ledger { return openTemp(t) })
}

func TestCatalogueConformance(t *testing.T) {
	ledgertest.RunCatalogue(t, func(t *testing.T) ledgertest.CatalogueLedger { return openTemp(t) })
}

func TestDurable(t *testing.T) {
	ledgertest.RunDurable(t, func(t *testing.T, dir string) ledger.Ledger {
		l, err := bolt.Open(filepath.Join(dir, "ledger.db"), bolt.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

func TestOpenOptionsValidated(t *testing.T) {
	dir := t.TempDir()
	for name, o := range map[string]bolt.Options{
		"negative lock timeout": {LockTimeout: -1},
		"negative batch":        {MaxBatch: -1},
		"file type bits":        {FileMode: os.ModeDir | 0o600},
	} {
		_, err := bolt.Open(filepath.Join(dir, "x.db"), o)
		if !errors.Is(err, ledger.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := bolt.Open("", bolt.Options{}); !errors.Is(err, ledger.ErrInvalid) {
		t.Errorf("empty path: err = %v", err)
	}
}

func TestCorruptFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junk.db")
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := bolt.Open(path, bolt.Options{})
	if err == nil {
		l.Close(context.Background())
		t.Fatal("opened a junk file")
	}
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want ErrCorrupt naming %s", err, path)
	}
	// bbolt files that are not ledgers of this format: another format
	// version (2 is the previous pre-release layout, refused rather than
	// misread), and another program's file.
	for _, tt := range []struct {
		name, bucket, format, want string
	}{
		{"format 99", "meta", "99", `format "99", this build reads formats "3" to "7" and "8"`},
		{"format 2", "meta", "2", `format "2", this build reads formats "3" to "7" and "8"`},
		{"no format", "meta", "", "no format version"},
		{"foreign", "accounts", "", `bucket "accounts" and no ledger format version`},
	} {
		other := filepath.Join(t.TempDir(), "other.db")
		db, err := bbolt.Open(other, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bbolt.Tx) error {
			b, _ := tx.CreateBucketIfNotExists([]byte(tt.bucket))
			if tt.format == "" {
				return nil
			}
			return b.Put([]byte("format"), []byte(tt.format))
		})
		db.Close()
		_, err = bolt.Open(other, bolt.Options{})
		if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), other) {
			t.Fatalf("%s: err = %v, want ErrCorrupt naming the file and %q", tt.name, err, tt.want)
		}
	}
	// An empty bbolt file becomes a ledger.
	empty := filepath.Join(t.TempDir(), "empty.db")
	db, err := bbolt.Open(empty, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	l, err = bolt.Open(empty, bolt.Options{})
	if err != nil {
		t.Fatalf("empty bbolt file: %v", err)
	}
	l.Close(context.Background())
}

func TestSecondOwnerInProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	_, err = bolt.Open(path, bolt.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, ledger.ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Open: err = %v, want ErrLocked naming %s", err, path)
	}
}

// TestSecondOwnerProcess runs a real second process against a held file:
// it must get the ownership error within its lock timeout, not hang; and
// once the owner closes, the same child must succeed.
func TestSecondOwnerProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, code := runHelper(t, "open", path)
	if code != 3 || !strings.Contains(out, path) || !strings.Contains(out, "held") {
		t.Fatalf("child against a held file: exit %d, stderr %q; want exit 3 and an error naming %s", code, out, path)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out, code := runHelper(t, "open", path); code != 0 {
		t.Fatalf("child after Close: exit %d, stderr %q", code, out)
	}
}

func runHelper(t *testing.T, mode, path string, extraEnv ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "ZEO_LEDGER_PATH="+path)
	cmd.Env = append(cmd.Env, extraEnv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stderr.String(), 0
	case errors.As(err, &ee):
		return stderr.String(), ee.ExitCode()
	default:
		t.Fatalf("running helper: %v", err)
		return "", -1
	}
}

// TestCloseFailStop holds a commit in flight and checks that a Close whose
// context ends first reports ErrCloseTimeout and keeps the lock (a second
// owner still cannot open the file), and that a later Close finishes once
// the write has landed.
func TestCloseFailStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	bolt.SetBeforeCommit(l, func() {
		once.Do(func() { close(entered); <-release })
	})
	writeErr := make(chan error, 1)
	go func() {
		_, err := l.CreateOperation(context.Background(), ledger.OperationSpec{
			Scope: ledger.Scope{OrganizationID: "o", ProjectID: "p"}, OperationID: "op", CapabilityID: "c",
			RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m"), EffectBudget: 1})
		writeErr <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = l.Close(ctx)
	if !errors.Is(err, ledger.ErrCloseTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close with a write in flight: err = %v, want ErrCloseTimeout", err)
	}
	// Ownership is kept: neither this process nor another can open it.
	if _, err := bolt.Open(path, bolt.Options{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ledger.ErrLocked) {
		t.Fatalf("Open after failed Close: err = %v, want ErrLocked", err)
	}
	if out, code := runHelper(t, "open", path); code != 3 {
		t.Fatalf("child after failed Close: exit %d, %q; want 3 (locked)", code, out)
	}
	// New calls are refused meanwhile.
	if _, err := l.ListUnknown(context.Background()); !errors.Is(err, ledger.ErrClosed) {
		t.Fatalf("ListUnknown during close: %v", err)
	}
	close(release)
	if err := <-writeErr; err != nil {
		t.Fatalf("the in-flight write: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The write that was in flight landed durably.
	l2, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close(context.Background())
	if _, err := l2.Operation(context.Background(), ledger.Scope{OrganizationID: "o", ProjectID: "p"}, "op"); err != nil {
		t.Fatalf("in-flight write lost: %v", err)
	}
}

// TestNoGoroutineLeak checks that Close ends every goroutine Open and the
// calls started.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		l := openTemp(t)
		ctx := context.Background()
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.CreateOperation(ctx, ledger.OperationSpec{
					Scope: ledger.Scope{OrganizationID: "o", ProjectID: "p"}, OperationID: string(rune('a' + i)), CapabilityID: "c",
					RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m")})
			}()
		}
		wg.Wait()
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Goroutines finish asynchronously after their last action; poll.
	var after int
	for range 200 {
		if after = runtime.NumGoroutine(); after <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("goroutines: %d before, %d after Close\n%s", before, after, buf[:runtime.Stack(buf, true)])
}

// TestContextEndsWhileQueued: a write whose context ends while it waits
// behind a commit never runs, and its error says so with
// ledger.ErrNotApplied (and the context's error).
func TestContextEndsWhileQueued(t *testing.T) {
	l := openTemp(t)
	defer l.Close(context.Background())
	s := ledger.Scope{OrganizationID: "o", ProjectID: "p"}
	release := holdCommit(t, l, s, "first")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.CreateOperation(ctx, opSpec(s, "second"))
		done <- err
	}()
	waitQueued(t, l, 1)
	cancel()
	err := <-done
	if !errors.Is(err, ledger.ErrNotApplied) || !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrNotApplied and context.Canceled", err)
	}
	release()
	if _, err := l.Operation(context.Background(), s, "second"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("abandoned write was applied: %v", err)
	}
}

// TestContextEndsWhileCommitting: a write whose context ends while its
// batch is being committed may still land, and its error says so with
// ledger.ErrOutcomeUnknown; here it does land, and repeating the call
// returns the recorded outcome.
func TestContextEndsWhileCommitting(t *testing.T) {
	l := openTemp(t)
	defer l.Close(context.Background())
	s := ledger.Scope{OrganizationID: "o", ProjectID: "p"}
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	bolt.SetBeforeCommit(l, func() { once.Do(func() { close(entered); <-release }) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := l.CreateOperation(ctx, opSpec(s, "held"))
		done <- err
	}()
	<-entered // the committer holds the write's batch
	cancel()
	err := <-done
	if !errors.Is(err, ledger.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || errors.Is(err, ledger.ErrNotApplied) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown and context.Canceled", err)
	}
	close(release)
	if _, err := l.CreateOperation(context.Background(), opSpec(s, "held")); err != nil {
		t.Fatalf("repeating the call: %v", err)
	}
}

func opSpec(s ledger.Scope, op string) ledger.OperationSpec {
	return ledger.OperationSpec{Scope: s, OperationID: op, CapabilityID: "c",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m")}
}

// holdCommit starts a write of operation op and holds its batch's commit
// until the returned func is called (once).
func holdCommit(t *testing.T, l *bolt.Ledger, s ledger.Scope, op string) (release func()) {
	t.Helper()
	entered := make(chan struct{})
	ch := make(chan struct{})
	var once sync.Once
	bolt.SetBeforeCommit(l, func() { once.Do(func() { close(entered); <-ch }) })
	go l.CreateOperation(context.Background(), opSpec(s, op))
	<-entered
	var rel sync.Once
	release = func() { rel.Do(func() { close(ch) }) }
	t.Cleanup(release)
	return release
}

// waitQueued waits until n writes wait for the committer.
func waitQueued(t *testing.T, l *bolt.Ledger, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); bolt.QueuedWrites(l) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", bolt.QueuedWrites(l), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestUpgradeFormat: a format 3 file (format 6 without the evidence,
// catalogue and leases buckets), 4 (without the catalogue and leases
// buckets), 5 (without the leases bucket), 6 (format 7 without the
// record checksums, which none of them has) or 7 (format 8 without the
// checksum of the artifact bytes) is upgraded in place at Open, keeps
// everything it held, its artifact included, and then records evidence,
// catalogue records and leases like a new one.
func TestUpgradeFormat(t *testing.T) {
	for _, tt := range []struct {
		format  string
		missing []string
	}{{"3", []string{"evidence", "catalogue", "leases"}}, {"4", []string{"catalogue", "leases"}}, {"5", []string{"leases"}}, {"6", nil}, {"7", nil}} {
		t.Run("format"+tt.format, func(t *testing.T) { testUpgrade(t, tt.format, tt.missing) })
	}
}

// completedOperation records operation op of scope, completed with an
// artifact holding data, and returns the artifact's ref.
func completedOperation(t *testing.T, l *bolt.Ledger, scope ledger.Scope, op string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	spec := ledger.OperationSpec{Scope: scope, OperationID: op, CapabilityID: "cap", RequestDigest: ledgertest.Digest("r"),
		ManifestDigest: ledgertest.Digest("m"), EffectBudget: 1}
	launch := ledgertest.Digest("launch")
	f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: spec, AttemptID: "att", Generation: 1, BootstrapID: "boot-" + op, LaunchDigest: launch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + op, LaunchDigest: launch, PID: 1, SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(ctx, f, ledgertest.Digest("r")); err != nil {
		t.Fatal(err)
	}
	r, err := l.AcceptResult(ctx, f, ledgertest.Digest("data"), data)
	if err != nil {
		t.Fatal(err)
	}
	return r.ArtifactRefs[0]
}

// closedWithArtifact makes a closed ledger file holding one completed
// operation whose artifact is "the artifact", and returns the file and
// the artifact's ref.
func closedWithArtifact(t *testing.T) (path, ref string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref = completedOperation(t, l, ledger.Scope{OrganizationID: "org", ProjectID: "proj"}, "done", []byte("the artifact"))
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return path, ref
}

// editFile changes the closed ledger file at path underneath the ledger,
// as an older format, damage or another writer would, in one bbolt
// transaction.
func editFile(t *testing.T, path string, edit func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(edit); err != nil {
		t.Fatal(err)
	}
}

func testUpgrade(t *testing.T, format string, missing []string) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	spec := ledger.OperationSpec{Scope: scope, OperationID: "op", CapabilityID: "cap", RequestDigest: ledgertest.Digest("r"),
		ManifestDigest: ledgertest.Digest("m"), EffectBudget: 1}
	if _, err := l.CreateOperation(ctx, spec); err != nil {
		t.Fatal(err)
	}
	f, err := l.StartAttempt(ctx, scope, "op", "a1")
	if err != nil {
		t.Fatal(err)
	}
	before, err := l.Operation(ctx, scope, "op")
	if err != nil {
		t.Fatal(err)
	}
	artifact := bytes.Repeat([]byte("artifact bytes "), 100)
	ref := completedOperation(t, l, scope, "done", artifact)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Turn it into what that format wrote.
	editFile(t, path, func(tx *bbolt.Tx) error {
		for _, b := range missing {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
		if err := stripChecksums(tx, format == "7"); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte(format))
	})

	l, err = bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("opening a format %s file: %v", format, err)
	}
	after, err := l.Operation(ctx, scope, "op")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Fatalf("operation changed by the upgrade (-before +after):\n%s", d)
	}
	if a, err := l.Artifact(ctx, scope, ref); err != nil || !bytes.Equal(a.Bytes, artifact) {
		t.Fatalf("artifact after the upgrade: %q, %v; want the bytes it held", a.Bytes, err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("Check after the upgrade: %v", err)
	}
	ev := ledger.AttemptEvidence{SeatID: "seat", RuntimeBindingID: "rb", PacketID: "pk", State: "protocol_error"}
	if _, err := l.RecordAttempt(ctx, f, ev); err != nil {
		t.Fatalf("RecordAttempt after the upgrade: %v", err)
	}
	if _, err := l.Reserve(ctx, f, []cataloguestore.Claim{{Key: "k", CapabilityID: "cap"}}); err != nil {
		t.Fatalf("Reserve after the upgrade: %v", err)
	}
	if _, err := l.AcquireLease(ctx, "c1", time.Minute); err != nil {
		t.Fatalf("AcquireLease after the upgrade: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("format")); string(v) != "8" {
			t.Errorf("format after upgrade = %q, want 8", v)
		}
		if tx.Bucket([]byte("leases")).Stats().KeyN != 1 {
			t.Errorf("leases bucket does not hold the one lease")
		}
		if tx.Bucket([]byte("evidence")).Stats().KeyN != 1 {
			t.Errorf("evidence bucket does not hold the one record")
		}
		if tx.Bucket([]byte("catalogue")).Stats().KeyN != 2 {
			t.Errorf("catalogue bucket does not hold the reservation and its index")
		}
		return nil
	})
}

// stripChecksums removes the 4-byte checksum format 8 ends every value
// with, in every bucket but meta, or only in blobs (the values stay in
// their keys' order, so the cursor walks each once).
func stripChecksums(tx *bbolt.Tx, onlyBlobs bool) error {
	return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		if string(name) == "meta" || onlyBlobs && string(name) != "blobs" {
			return nil
		}
		var keys, vals [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			if len(v) < 4 {
				return fmt.Errorf("bucket %q key %q: %d bytes, no checksum", name, k, len(v))
			}
			keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v[:len(v)-4]))
			return nil
		}); err != nil {
			return err
		}
		for i := range keys {
			if err := b.Put(keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestUpgradeRefusesDamagedArtifact: a format 7 file whose artifact bytes
// no longer have their digest is not sealed: Open refuses it with
// ErrCorrupt naming the artifact, and the file is left as it was.
func TestUpgradeRefusesDamagedArtifact(t *testing.T) {
	path, ref := closedWithArtifact(t)
	editFile(t, path, func(tx *bbolt.Tx) error {
		if err := stripChecksums(tx, true); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("blobs")).Put([]byte(ref), []byte("the artefact")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("format"), []byte("7"))
	})
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bolt.Open(path, bolt.Options{})
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), ref) || !strings.Contains(err.Error(), "do not match its digest") {
		t.Fatalf("Open of a format 7 file with a damaged artifact: %v, want ErrCorrupt naming %s", err, ref)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the refused upgrade changed the file")
	}
}

// TestCheckFindsResealedArtifact: artifact bytes replaced under a valid
// checksum (which damage does not make; a writer of the file could) pass
// the per-read checksum, but Check compares them with their digest.
func TestCheckFindsResealedArtifact(t *testing.T) {
	path, ref := closedWithArtifact(t)
	editFile(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("blobs")).Put([]byte(ref), bolt.Seal([]byte("blobs"), []byte(ref), []byte("the artefact")))
	})
	ctx := context.Background()
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if err := l.Check(ctx); !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), ref) {
		t.Fatalf("Check of a ledger whose artifact was resealed with other bytes: %v, want ErrCorrupt naming %s", err, ref)
	}
}

// TestCatalogueChecked: Check (and Open with CheckRecords) verifies the
// catalogue's records too: a reservation whose holding index entry is
// gone is reported as corruption.
func TestCatalogueChecked(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scope := ledger.Scope{OrganizationID: "org", ProjectID: "proj"}
	if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: "op", CapabilityID: "cap",
		RequestDigest: ledgertest.Digest("r"), ManifestDigest: ledgertest.Digest("m")}); err != nil {
		t.Fatal(err)
	}
	f, err := l.StartAttempt(ctx, scope, "op", "a1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reserve(ctx, f, []cataloguestore.Claim{{Key: "k", CapabilityID: "cap"}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatalf("Check of a sound ledger: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	editFile(t, path, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("catalogue"))
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if k[0] == 8 { // the holding index (core.KindHolding)
				return b.Delete(k)
			}
		}
		return errors.New("no holding index entry")
	})
	_, err = bolt.Open(path, bolt.Options{CheckRecords: true})
	if !errors.Is(err, ledger.ErrCorrupt) || !strings.Contains(err.Error(), "not in the holding index") {
		t.Fatalf("Open with CheckRecords of a ledger missing a holding index entry: %v, want ErrCorrupt naming it", err)
	}
}
