package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// The corruption campaign: a populated ledger file, corrupted in many ways
// (pages with flipped bytes, truncations), opened and used by a child
// process (the test binary again) that reports one outcome per file. A
// crash is the child dying; the parent counts it and starts a new child on
// the next file.
const (
	campaignSeed = 20261201
	campaignOps  = 30
)

// campaignFiles is how many corrupted files the campaign opens: 520 with
// ZEO_LONG_TESTS=1, 80 by default (the fixed cases and 75 random ones),
// 30 by default under the race detector (which slows every read and sees
// nothing in a campaign of one reader; CI runs it again at full size
// without the detector). The child reads the same variable from the
// environment it inherits.
func campaignFiles() int {
	if raceEnabled {
		return longtest.Size(30, 520)
	}
	return longtest.Size(80, 520)
}

// Outcomes of one corrupted file.
const (
	outOpenCorrupt  = "open: ErrCorrupt"     // Open refused the file
	outUseCorrupt   = "use: ErrCorrupt"      // a later call found the damage; the ledger stopped
	outClean        = "clean"                // opened, passed Check, served every call, reopened clean
	outWrongError   = "wrong error"          // any failure that does not wrap ErrCorrupt
	outNotFailStop  = "not fail-stop"        // a call succeeded after one had reported ErrCorrupt
	outCrash        = "crash"                // the child died
	outHelperFailed = "helper could not run" // setup failure in the child
)

var campaignScope = ledger.Scope{OrganizationID: "org", ProjectID: "proj"}

// populateLedger writes campaignOps operations into a new ledger at path,
// with everything a ledger holds: attempts (some operations have two),
// bootstrap ids, effects in every state and past the staged index,
// results with artifacts, evidence, a cancelled operation, and attempts
// launched by a controller (whose lease, and a released one, are
// recorded).
func populateLedger(t testing.TB, path string) {
	t.Helper()
	ctx := context.Background()
	l, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = l.AcquireLease(ctx, "ctl-campaign", time.Hour)
	must(err)
	_, err = l.AcquireLease(ctx, "ctl-gone", time.Hour)
	must(err)
	_, err = l.ReleaseLease(ctx, "ctl-gone")
	must(err)
	for i := range campaignOps {
		op := fmt.Sprintf("op-%02d", i)
		_, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: campaignScope, OperationID: op, CapabilityID: "cap",
			RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man"), EffectBudget: 40})
		must(err)
		var f ledger.Fence
		for a := range 1 + i%2 {
			boot := fmt.Sprintf("boot-%s-%d", op, a)
			if i%5 == 4 { // launched by the campaign's controller
				f, err = l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: ledger.OperationSpec{Scope: campaignScope, OperationID: op,
					CapabilityID: "cap", RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man"), EffectBudget: 40},
					AttemptID: fmt.Sprintf("att-%d", a), Generation: int64(a + 1), BootstrapID: boot, LaunchDigest: ledgertest.Digest("launch"),
					ControllerID: "ctl-campaign"})
				must(err)
			} else {
				f, err = l.StartAttempt(ctx, campaignScope, op, fmt.Sprintf("att-%d", a))
				must(err)
				_, err = ledgertest.Issue(ctx, l, f, boot, ledgertest.Digest("launch"))
				must(err)
			}
			_, err = l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: ledgertest.Digest("launch"), PID: 1000 + i, SessionID: "s"})
			must(err)
			_, err = l.Admit(ctx, f, ledgertest.Digest("req"))
			must(err)
			for e := range 3 + i%13 {
				id := fmt.Sprintf("effect-%d-%d", a, e)
				d := ledgertest.Digest(op + id)
				_, err = l.BeginEffect(ctx, f, id, d)
				must(err)
				switch e % 4 {
				case 0:
					_, err = l.ConfirmEffect(ctx, f, id, d, "rcpt-"+id)
				case 1:
					_, err = l.MarkUnknown(ctx, f, id, d)
				case 2:
					_, err = l.MarkNotConsumed(ctx, f, id, d, ledger.ReasonRefused)
				}
				must(err)
			}
			_, err = l.RecordAttempt(ctx, f, ledger.AttemptEvidence{SeatID: "seat", RuntimeBindingID: "rb", PacketID: "pk",
				BootstrapID: boot, LaunchDigest: ledgertest.Digest("launch"), State: "succeeded", Launched: true, PID: 1000 + i,
				HostResult: []byte(strings.Repeat("host result ", 20)), StdoutBytes: 240})
			must(err)
		}
		switch i % 3 {
		case 0:
			_, err = l.AcceptResult(ctx, f, ledgertest.Digest(op+"data"), bytes.Repeat([]byte(op), 300))
		case 1:
			_, err = l.Cancel(ctx, campaignScope, op, "cancelled by the test")
		}
		must(err)
	}
	must(l.Check(ctx))
}

// corruption returns the i-th corruption of the file base and says what
// it did. The first cases are fixed: the reproducer of the report (16
// bytes XORed at the header of page 18), an empty file and truncations to
// 4,095, 4,096 and 8,191 bytes. Then, from a seeded generator: a third
// truncations to a random length, two thirds pages with 1 to 16 bytes
// XORed (at the page header half the time), one to three pages at once.
func corruption(base []byte, i int) ([]byte, string) {
	const page = 4096
	data := bytes.Clone(base)
	flip := func(p, off, n int, r *rand.Rand) {
		for j := range n {
			if at := p*page + off + j; at < len(data) {
				x := byte(0xFF)
				if r != nil {
					x = byte(1 + r.IntN(255))
				}
				data[at] ^= x
			}
		}
	}
	switch i {
	case 0:
		flip(18, 0, 16, nil)
		return data, "XOR 0xFF over 16 bytes at the header of page 18"
	case 1:
		return data[:0], "truncated to 0 bytes"
	case 2:
		return data[:4095], "truncated to 4095 bytes"
	case 3:
		return data[:4096], "truncated to 4096 bytes"
	case 4:
		return data[:8191], "truncated to 8191 bytes"
	}
	r := rand.New(rand.NewPCG(campaignSeed, uint64(i)))
	pages := len(data) / page
	if r.IntN(3) == 0 {
		n := r.IntN(len(data))
		return data[:n], fmt.Sprintf("truncated to %d bytes", n)
	}
	var desc []string
	for range 1 + r.IntN(3) {
		p, n := r.IntN(pages), 1+r.IntN(16)
		off := 0
		if r.IntN(2) == 0 {
			off = r.IntN(page - n)
		}
		flip(p, off, n, r)
		desc = append(desc, fmt.Sprintf("XOR %d random bytes at page %d offset %d", n, p, off))
	}
	return data, strings.Join(desc, "; ")
}

// TestCorruptionCampaign corrupts a populated ledger campaignFiles() times
// and checks that no corrupted file crashes the process, and that each
// either fails with an error wrapping ledger.ErrCorrupt (at Open or at a
// later call, after which the ledger refuses every call) or opens clean:
// its data passes the ledger's own invariant check (Check), every read and
// a few writes succeed, and it reopens clean.
func TestCorruptionCampaign(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.db")
	populateLedger(t, base)
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	files := campaignFiles()
	outcomes := map[string]int{}
	var failures []string
	for next := 0; next < files; {
		results, err := runCampaignChild(t, dir, base, next)
		for _, r := range results {
			outcomes[r.outcome]++
			switch r.outcome {
			case outOpenCorrupt, outUseCorrupt, outClean:
			default:
				_, desc := corruption(data, r.file)
				failures = append(failures, fmt.Sprintf("file %d (%s): %s: %s", r.file, desc, r.outcome, r.detail))
			}
			next = r.file + 1
		}
		if err != nil {
			// The child died on file next: a crash.
			_, desc := corruption(data, next)
			outcomes[outCrash]++
			failures = append(failures, fmt.Sprintf("file %d (%s): crash: %v", next, desc, err))
			next++
		}
	}
	t.Logf("%d corrupted files of a %d-byte ledger (%d operations): %v", files, len(data), campaignOps, outcomes)
	if len(failures) > 0 {
		t.Errorf("%d of %d corrupted files failed:\n%s", len(failures), files, strings.Join(failures, "\n"))
	}
	if outcomes[outOpenCorrupt] == 0 || outcomes[outClean] == 0 {
		t.Errorf("outcomes %v: the campaign should reach both refusals and clean opens", outcomes)
	}
}

type campaignResult struct {
	file            int
	outcome, detail string
}

// runCampaignChild runs one child on files from..campaignFiles()-1 and
// returns the outcomes it reported, and an error when it died before the
// end (the first file it did not report crashed it).
func runCampaignChild(t *testing.T, dir, base string, from int) ([]campaignResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=corrupt", "ZEO_LEDGER_PATH="+base,
		"ZEO_LEDGER_DIR="+dir, "ZEO_LEDGER_FROM="+strconv.Itoa(from))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var results []campaignResult
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		file, rest, _ := strings.Cut(sc.Text(), "\t")
		outcome, detail, _ := strings.Cut(rest, "\t")
		n, err := strconv.Atoi(file)
		if err != nil {
			t.Fatalf("child wrote %q", sc.Text())
		}
		results = append(results, campaignResult{n, outcome, detail})
	}
	err = cmd.Wait()
	if len(results) > 0 && results[len(results)-1].file == campaignFiles()-1 && err == nil {
		return results, nil
	}
	tail := stderr.String()
	if i := strings.Index(tail, "goroutine "); i > 0 {
		tail = tail[:i] // the panic or fatal error, not every stack
	}
	return results, fmt.Errorf("%v: %s", err, strings.TrimSpace(tail))
}

// helperCorrupt is the campaign's child: for each file from
// ZEO_LEDGER_FROM on, it writes the corrupted copy, uses it, and prints
// "file\toutcome\tdetail".
func helperCorrupt() {
	base, err := os.ReadFile(os.Getenv("ZEO_LEDGER_PATH"))
	if err != nil {
		fmt.Printf("0\t%s\t%v\n", outHelperFailed, err)
		os.Exit(1)
	}
	from, _ := strconv.Atoi(os.Getenv("ZEO_LEDGER_FROM"))
	for i := from; i < campaignFiles(); i++ {
		path := filepath.Join(os.Getenv("ZEO_LEDGER_DIR"), fmt.Sprintf("corrupt-%d.db", i))
		data, _ := corruption(base, i)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			fmt.Printf("%d\t%s\t%v\n", i, outHelperFailed, err)
			continue
		}
		outcome, detail := useCorrupted(path)
		os.Remove(path)
		fmt.Printf("%d\t%s\t%s\n", i, outcome, strings.ReplaceAll(detail, "\n", " | "))
	}
	os.Exit(0)
}

// useCorrupted opens the ledger at path and uses it: Check, every read
// (each operation, its evidence, its artifacts, the reconciliation list,
// the operation list) and writes (a new operation through to an effect,
// new attempts on existing ones), then Close and a second Open and Check. It
// stops at the first error: one wrapping ErrCorrupt must be followed by
// the same refusal of every further call.
func useCorrupted(path string) (outcome, detail string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := bolt.Open(path, bolt.Options{LockTimeout: time.Second})
	switch {
	case errors.Is(err, ledger.ErrCorrupt):
		return outOpenCorrupt, err.Error()
	case err != nil:
		return outWrongError, "Open: " + err.Error()
	}
	closed := false
	defer func() {
		if !closed {
			_ = l.Close(ctx)
		}
	}()
	failed := func(step string, err error) (string, string) {
		if !errors.Is(err, ledger.ErrCorrupt) {
			return outWrongError, step + ": " + err.Error()
		}
		// Fail-stop: every later call is refused the same way.
		if _, again := l.ListUnknown(ctx); !errors.Is(again, ledger.ErrCorrupt) {
			return outNotFailStop, fmt.Sprintf("%s: %v; then ListUnknown: %v", step, err, again)
		}
		_, again := l.CreateOperation(ctx, ledger.OperationSpec{Scope: campaignScope, OperationID: "after", CapabilityID: "cap",
			RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man")})
		if !errors.Is(again, ledger.ErrCorrupt) {
			return outNotFailStop, fmt.Sprintf("%s: %v; then CreateOperation: %v", step, err, again)
		}
		return outUseCorrupt, step + ": " + err.Error()
	}
	if err := l.Check(ctx); err != nil {
		return failed("Check", err)
	}
	var ops []ledger.Operation
	for q := (ledger.OperationQuery{Limit: 7}); ; {
		page, err := l.ListOperations(ctx, q)
		if err != nil {
			return failed("ListOperations", err)
		}
		ops = append(ops, page...)
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.After = ledger.OperationRef{Scope: last.Scope, OperationID: last.OperationID}
	}
	for _, o := range ops {
		v, err := l.Operation(ctx, o.Scope, o.OperationID)
		if err != nil {
			return failed("Operation "+o.OperationID, err)
		}
		if _, err := l.Evidence(ctx, o.Scope, o.OperationID); err != nil {
			return failed("Evidence "+o.OperationID, err)
		}
		if v.Result != nil {
			for _, ref := range v.Result.ArtifactRefs {
				if _, err := l.Artifact(ctx, o.Scope, ref); err != nil {
					return failed("Artifact "+ref, err)
				}
			}
		}
	}
	if _, err := l.ListUnknown(ctx); err != nil {
		return failed("ListUnknown", err)
	}
	if _, err := l.ListInFlight(ctx); err != nil {
		return failed("ListInFlight", err)
	}
	if _, err := l.ListOperations(ctx, ledger.OperationQuery{Orphaned: true}); err != nil {
		return failed("ListOperations(Orphaned)", err)
	}
	if _, err := l.Leases(ctx); err != nil {
		return failed("Leases", err)
	}
	// Writes: a new operation through to an effect, and a new attempt on
	// three open operations that had one.
	if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: campaignScope, OperationID: "new", CapabilityID: "cap",
		RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man"), EffectBudget: 1}); err != nil {
		return failed("CreateOperation", err)
	}
	f, err := l.StartAttempt(ctx, campaignScope, "new", "a")
	if err != nil {
		return failed("StartAttempt", err)
	}
	if _, err := ledgertest.Issue(ctx, l, f, "boot-new", ledgertest.Digest("launch")); err != nil {
		return failed("LaunchAttempt", err)
	}
	if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-new", LaunchDigest: ledgertest.Digest("launch"), PID: 1, SessionID: "s"}); err != nil {
		return failed("RedeemBootstrap", err)
	}
	if _, err := l.Admit(ctx, f, ledgertest.Digest("req")); err != nil {
		return failed("Admit", err)
	}
	if _, err := l.BeginEffect(ctx, f, "e", ledgertest.Digest("e")); err != nil {
		return failed("BeginEffect", err)
	}
	started := 0
	for _, o := range ops {
		if o.State != ledger.OperationOpen || o.CurrentAttemptID == "" || started == 3 {
			continue
		}
		started++
		if _, err := l.StartAttempt(ctx, o.Scope, o.OperationID, "campaign"); err != nil {
			return failed("StartAttempt "+o.OperationID, err)
		}
	}
	if err := l.Check(ctx); err != nil {
		return failed("Check after writes", err)
	}
	closed = true
	if err := l.Close(ctx); err != nil {
		return outWrongError, "Close: " + err.Error()
	}
	l2, err := bolt.Open(path, bolt.Options{LockTimeout: time.Second})
	if err != nil {
		return outWrongError, "reopen after clean use: " + err.Error()
	}
	defer l2.Close(ctx)
	if err := l2.Check(ctx); err != nil {
		return outWrongError, "Check after reopen: " + err.Error()
	}
	return outClean, ""
}

// TestEmptyAndShortFilesAreCorrupt checks that Open creates a ledger only
// at a path where no file exists, and refuses an existing empty or short
// file with ErrCorrupt instead of starting an empty ledger on it.
func TestEmptyAndShortFilesAreCorrupt(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.db")
	populateLedger(t, base)
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 100, 4095, 4096, 4097, 8191, 8192, 12288, 16383} {
		path := filepath.Join(dir, fmt.Sprintf("short-%d.db", n))
		if err := os.WriteFile(path, data[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := bolt.Open(path, bolt.Options{})
		if !errors.Is(err, ledger.ErrCorrupt) {
			t.Errorf("Open of the ledger truncated to %d bytes: %v, want ErrCorrupt", n, err)
		}
		if err == nil {
			_ = l.Close(context.Background())
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, data[:n]) {
			t.Errorf("Open of the ledger truncated to %d bytes changed the file (now %d bytes)", n, len(got))
		}
	}
	// A path with no file is where a new ledger starts.
	fresh := filepath.Join(dir, "fresh.db")
	l, err := bolt.Open(fresh, bolt.Options{})
	if err != nil {
		t.Fatalf("Open of a new file: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l, err = bolt.Open(fresh, bolt.Options{}); err != nil {
		t.Fatalf("reopen of the new ledger: %v", err)
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptLedgerFailsStop damages the file under a live ledger (every
// leaf page's element count set to 65535, through the shared memory map
// the ledger reads) and checks that the first call to meet the damage,
// a read or a write (which runs on the committer goroutine), reports
// ErrCorrupt instead of crashing; that from then on every call is refused
// with ErrCorrupt; and that Close still releases the file.
func TestCorruptLedgerFailsStop(t *testing.T) {
	for _, first := range []string{"read", "write", "check"} {
		t.Run(first, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "ledger.db")
			populateLedger(t, path)
			ctx := context.Background()
			l, err := bolt.Open(path, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			damageLeaves(t, path)
			var firstErr error
			for i := 0; i < campaignOps && firstErr == nil; i++ {
				op := fmt.Sprintf("op-%02d", i)
				switch first {
				case "read":
					_, firstErr = l.Operation(ctx, campaignScope, op)
				case "write":
					_, firstErr = l.StartAttempt(ctx, campaignScope, op, "later")
				case "check":
					firstErr = l.Check(ctx)
				}
			}
			if !errors.Is(firstErr, ledger.ErrCorrupt) {
				t.Fatalf("first %s after the damage: %v, want ErrCorrupt", first, firstErr)
			}
			calls := map[string]error{"Check": l.Check(ctx)}
			_, calls["ListUnknown"] = l.ListUnknown(ctx)
			_, calls["Operation"] = l.Operation(ctx, campaignScope, "op-29")
			_, calls["CreateOperation"] = l.CreateOperation(ctx, ledger.OperationSpec{Scope: campaignScope, OperationID: "x", CapabilityID: "cap",
				RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man")})
			for name, err := range calls {
				if !errors.Is(err, ledger.ErrCorrupt) {
					t.Errorf("%s after the ledger found corruption: %v, want ErrCorrupt", name, err)
				}
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := l.Close(cctx); err != nil {
				t.Errorf("Close after corruption: %v", err)
			}
			// The file is released: Open takes its lock again, and refuses it.
			if l, err := bolt.Open(path, bolt.Options{LockTimeout: time.Second}); !errors.Is(err, ledger.ErrCorrupt) {
				t.Errorf("Open of the damaged file: %v, want ErrCorrupt", err)
				if err == nil {
					l.Close(ctx)
				}
			}
		})
	}
}

// damageLeaves sets the element count of every leaf page of the bbolt
// file at path to 65535, writing through a descriptor of its own.
func damageLeaves(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const leafPageFlag = 0x02
	damaged := 0
	for p := 2; (p+1)*4096 <= len(data); p++ {
		hdr := data[p*4096:]
		if binary.LittleEndian.Uint16(hdr[8:]) == leafPageFlag && binary.LittleEndian.Uint16(hdr[10:]) > 0 {
			if _, err := f.WriteAt([]byte{0xFF, 0xFF}, int64(p*4096+10)); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	if damaged == 0 {
		t.Fatal("no leaf page found")
	}
}
