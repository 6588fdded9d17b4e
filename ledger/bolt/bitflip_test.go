package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// The bit-flip campaign: a small ledger file (two organizations, an
// artifact, effects in every state, bootstraps, evidence, leases, a
// catalogue reservation), and for every byte past the two meta pages a
// copy of it with one bit of that byte flipped (bit position%8, so every
// bit position is used), opened and read by a child process (the test
// binary again; a crash is the child dying). Every read must give the
// answer it gave on the file before the flip, or fail with an error
// wrapping ledger.ErrCorrupt: never another answer, another error, or a
// crash. Among the reads is org-c asking for org-a's artifact, refused
// before the flip; it must stay refused.

var (
	flipOrgA = ledger.Scope{OrganizationID: "org-a", ProjectID: "proj"}
	flipOrgC = ledger.Scope{OrganizationID: "org-c", ProjectID: "proj"}
)

// Outcomes of one flipped file.
const (
	flipSame      = "same answers"      // every read gave the answer of the file before the flip
	flipCorrupt   = "ErrCorrupt"        // Open or a read failed with ErrCorrupt; the other reads were the same or ErrCorrupt
	flipWrong     = "wrong answer"      // a read succeeded with another answer
	flipWrongErr  = "wrong error"       // a read failed with an error that is not ErrCorrupt and not the one before the flip
	flipScopeLeak = "cross-scope leak"  // org-c was given org-a's artifact
	flipCrash     = "crash"             // the child died
	flipSetup     = "helper setup fail" // the child could not run
)

// populateSmall writes the campaign's small ledger at path and returns
// the ref of org-a's artifact.
func populateSmall(t testing.TB, path string) {
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
	_, err = l.AcquireLease(ctx, "ctl-1", time.Hour)
	must(err)
	for i, s := range []ledger.Scope{flipOrgA, flipOrgC} {
		op := fmt.Sprintf("op-%d", i)
		spec := ledger.OperationSpec{Scope: s, OperationID: op, CapabilityID: "cap",
			RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man"), EffectBudget: 12}
		f, err := l.LaunchAttempt(ctx, ledger.AttemptLaunch{Operation: spec, AttemptID: "att", Generation: 1,
			BootstrapID: "boot-" + s.OrganizationID + op, LaunchDigest: ledgertest.Digest("launch"), ControllerID: "ctl-1"})
		must(err)
		_, err = l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: "boot-" + s.OrganizationID + op, LaunchDigest: ledgertest.Digest("launch"), PID: 100 + i, SessionID: "s"})
		must(err)
		_, err = l.Admit(ctx, f, ledgertest.Digest("req"))
		must(err)
		for e := range 3 + 7*(1-i) { // op-0 past the staged index: some in effidx
			id := fmt.Sprintf("e%d", e)
			d := ledgertest.Digest(op + id)
			_, err = l.BeginEffect(ctx, f, id, d)
			must(err)
			switch e % 3 {
			case 0:
				_, err = l.ConfirmEffect(ctx, f, id, d, "rcpt-"+id)
			case 1:
				_, err = l.MarkUnknown(ctx, f, id, d)
			}
			must(err)
		}
		_, err = l.Reserve(ctx, f, []cataloguestore.Claim{{Key: "k-" + op, CapabilityID: "cap"}})
		must(err)
		_, err = l.RecordAttempt(ctx, f, ledger.AttemptEvidence{SeatID: "seat", RuntimeBindingID: "rb", PacketID: "pk",
			BootstrapID: "boot-" + s.OrganizationID + op, LaunchDigest: ledgertest.Digest("launch"), State: "succeeded", Launched: true, PID: 100 + i})
		must(err)
		if i == 0 {
			_, err = l.AcceptResult(ctx, f, ledgertest.Digest("data"), []byte("org-a's artifact, which org-c must never read"))
			must(err)
		}
	}
	must(l.Check(ctx))
}

// flipRead is one read of the campaign and its answer, rendered.
type flipRead struct {
	name   string
	answer string
	err    error
}

// readAll opens path and runs every read; openErr is Open's error.
func readAll(path string) (reads []flipRead, openErr error) {
	ctx := context.Background()
	l, err := bolt.Open(path, bolt.Options{LockTimeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer l.Close(ctx)
	add := func(name string, v any, err error) {
		r := flipRead{name: name, err: err}
		if err == nil {
			b, jerr := json.Marshal(v)
			r.answer = string(b)
			if jerr != nil {
				r.answer = fmt.Sprintf("(%v)", jerr)
			}
			if a, ok := v.(ledger.Artifact); ok {
				r.answer += fmt.Sprintf(" bytes %q", a.Bytes)
			}
		}
		reads = append(reads, r)
	}
	var ref string
	for _, s := range []ledger.Scope{flipOrgA, flipOrgC} {
		for i := range 3 { // op-2 exists in neither
			op := fmt.Sprintf("op-%d", i)
			v, err := l.Operation(ctx, s, op)
			add("Operation "+s.OrganizationID+"/"+op, v, err)
			if err == nil && v.Result != nil && len(v.Result.ArtifactRefs) > 0 && s == flipOrgA {
				ref = v.Result.ArtifactRefs[0]
			}
			ev, err := l.Evidence(ctx, s, op)
			add("Evidence "+s.OrganizationID+"/"+op, ev, err)
		}
	}
	if ref == "" {
		ref = "artifact_unknown" // the flip hid it; the reads below must still not answer wrongly
	}
	a, err := l.Artifact(ctx, flipOrgA, ref)
	add("Artifact org-a", a, err)
	a, err = l.Artifact(ctx, flipOrgC, ref)
	add("Artifact org-c (org-a's ref)", a, err)
	ops, err := l.ListOperations(ctx, ledger.OperationQuery{})
	add("ListOperations", ops, err)
	ops, err = l.ListOperations(ctx, ledger.OperationQuery{Scope: flipOrgC})
	add("ListOperations org-c", ops, err)
	ops, err = l.ListOperations(ctx, ledger.OperationQuery{Orphaned: true})
	add("ListOperations orphaned", ops, err)
	u, err := l.ListUnknown(ctx)
	add("ListUnknown", u, err)
	u, err = l.ListInFlight(ctx)
	add("ListInFlight", u, err)
	ls, err := l.Leases(ctx)
	add("Leases", ls, err)
	add("Check", nil, l.Check(ctx))
	return reads, nil
}

// judge compares the reads of a flipped file with those before the flip.
func judge(before, after []flipRead, openErr error) (outcome, detail string) {
	if openErr != nil {
		if errors.Is(openErr, ledger.ErrCorrupt) {
			return flipCorrupt, "Open: " + openErr.Error()
		}
		return flipWrongErr, "Open: " + openErr.Error()
	}
	if len(after) != len(before) {
		return flipWrong, fmt.Sprintf("%d reads, want %d", len(after), len(before))
	}
	outcome = flipSame
	for i, a := range after {
		b := before[i]
		switch {
		case a.err == nil && b.err == nil && a.answer == b.answer:
		case a.err != nil && errors.Is(a.err, ledger.ErrCorrupt):
			if outcome == flipSame {
				outcome, detail = flipCorrupt, a.name+": "+a.err.Error()
			}
		case a.err == nil && b.err != nil && strings.HasPrefix(a.name, "Artifact org-c"):
			return flipScopeLeak, fmt.Sprintf("%s: %s, before the flip %v", a.name, a.answer, b.err)
		case a.err == nil:
			return flipWrong, fmt.Sprintf("%s: %s; before the flip %s%v", a.name, a.answer, b.answer, b.err)
		case b.err != nil && a.err.Error() == b.err.Error():
		default:
			return flipWrongErr, fmt.Sprintf("%s: %v; before the flip %s%v", a.name, a.err, b.answer, b.err)
		}
	}
	return outcome, detail
}

// flipStride is the campaign's stride under the race detector with
// ZEO_LONG_TESTS=1; flipStrideDefault without it, and flipStrideRace
// without it under the race detector, which slows every flip and sees
// nothing in a campaign whose reads run one at a time (CI runs it again
// at full size without the detector). All are odd, so that the flipped
// bit (byte%8) still takes every position.
const (
	flipStride        = 5
	flipStrideDefault = 23
	flipStrideRace    = 71
)

// nextFlip is the first byte at or after i that a campaign from first
// with stride flips.
func nextFlip(i, first, stride int) int {
	return i + (stride-(i-first)%stride)%stride
}

// flipStart is the first byte flipped: past the two meta pages (4 KiB
// each), which bbolt checksums itself.
const flipStart = 2 * 4096

// TestBitFlipCampaign flips one bit of every byte of a small ledger
// file past its meta pages, one file per byte (see the comment at the
// top): 28,672 files, about 50 s on two cores, with ZEO_LONG_TESTS=1.
// Under the race detector, which makes each several times slower, it takes
// every flipStride-th byte, and by default every flipStrideDefault-th
// (the bit still byte%8 and the strides odd, so every bit position and
// every page is covered); ZEO_LEDGER_FLIP_BYTES=from-to runs those bytes
// only, every one of them.
func TestBitFlipCampaign(t *testing.T) {
	dir := t.TempDir()
	written := filepath.Join(dir, "written.db")
	populateSmall(t, written)
	base := filepath.Join(dir, "base.db")
	compactFile(t, written, base)
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	before, err := readAll(base)
	if err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, r := range before {
		if r.err != nil && strings.HasPrefix(r.name, "Artifact org-c") {
			refused = errors.Is(r.err, ledger.ErrOutOfScope) || errors.Is(r.err, ledger.ErrNotFound)
		}
		if r.err != nil && !strings.HasPrefix(r.name, "Artifact org-c") && !errors.Is(r.err, ledger.ErrNotFound) {
			t.Fatalf("before the flips: %s: %v", r.name, r.err)
		}
	}
	if !refused {
		t.Fatalf("before the flips, org-c was not refused org-a's artifact: %+v", before)
	}
	first, end, stride := flipStart, len(data), 1
	switch {
	case !longtest.Enabled() && raceEnabled:
		stride = flipStrideRace
	case !longtest.Enabled():
		stride = flipStrideDefault
	case raceEnabled:
		stride = flipStride
	}
	if r := os.Getenv("ZEO_LEDGER_FLIP_BYTES"); r != "" { // "from-to", to reproduce a failure
		a, b, _ := strings.Cut(r, "-")
		first, _ = strconv.Atoi(a)
		end, _ = strconv.Atoi(b)
		end, stride = min(end+1, len(data)), 1
	}
	flips := (end - first + stride - 1) / stride
	outcomes := map[string]int{}
	var failures []string
	// Two children at a time, each on its own half and its own copy.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for shard := range 2 {
		from, to := nextFlip(first+shard*(end-first)/2, first, stride), first+(shard+1)*(end-first)/2
		sub := filepath.Join(dir, strconv.Itoa(shard))
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for next := from; next < to; {
				results, err := runFlipChild(sub, base, next, to, stride)
				mu.Lock()
				for _, r := range results {
					outcomes[r.outcome]++
					if r.outcome != flipSame && r.outcome != flipCorrupt {
						failures = append(failures, fmt.Sprintf("byte %d bit %d: %s: %s", r.file, r.file%8, r.outcome, r.detail))
					}
					next = r.file + stride
				}
				if err != nil { // the child died on the first file it did not report
					outcomes[flipCrash]++
					failures = append(failures, fmt.Sprintf("byte %d bit %d: crash: %v", next, next%8, err))
					next += stride
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("%d single-bit flips (bytes %d..%d of a %d-byte ledger file, every %d, one bit each): %v", flips, first, end-1, len(data), stride, outcomes)
	if len(failures) > 0 {
		if len(failures) > 40 {
			failures = append(failures[:40], fmt.Sprintf("... and %d more", len(failures)-40))
		}
		t.Errorf("%d of %d flipped files failed:\n%s", outcomes[flipWrong]+outcomes[flipWrongErr]+outcomes[flipScopeLeak]+outcomes[flipCrash]+outcomes[flipSetup], flips, strings.Join(failures, "\n"))
	}
	if os.Getenv("ZEO_LEDGER_FLIP_BYTES") == "" && (outcomes[flipCorrupt] == 0 || outcomes[flipSame] == 0) {
		t.Errorf("outcomes %v: the campaign should reach both detected damage and harmless flips", outcomes)
	}
}

// compactFile writes a compacted copy of the ledger file src at dst (so
// that every page below its high water mark is in use), cut at its high
// water mark: bbolt never reads past it, so the bytes there would only
// make flips that cannot matter.
func compactFile(t *testing.T, src, dst string) {
	t.Helper()
	from, err := bbolt.Open(src, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, err := bbolt.Open(dst, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bbolt.Compact(to, from, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := to.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	// The meta page with the higher transaction id: its high water mark
	// (page header 16 bytes; in the meta, pgid at 40, txid at 48).
	le := binary.LittleEndian
	hwm := le.Uint64(data[16+40:])
	if le.Uint64(data[4096+16+48:]) > le.Uint64(data[16+48:]) {
		hwm = le.Uint64(data[4096+16+40:])
	}
	if err := os.Truncate(dst, int64(hwm)*4096); err != nil {
		t.Fatal(err)
	}
}

// runFlipChild runs one child on bytes from..end-1 and returns the
// outcomes it reported, and an error when it died before the end. It
// runs on a goroutine of its own, so it reports rather than fails.
func runFlipChild(dir, base string, from, end, stride int) ([]campaignResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=bitflip", "ZEO_LEDGER_PATH="+base,
		"ZEO_LEDGER_DIR="+dir, "ZEO_LEDGER_FROM="+strconv.Itoa(from), "ZEO_LEDGER_END="+strconv.Itoa(end), "ZEO_LEDGER_STRIDE="+strconv.Itoa(stride))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var results []campaignResult
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		file, rest, _ := strings.Cut(sc.Text(), "\t")
		outcome, detail, _ := strings.Cut(rest, "\t")
		n, err := strconv.Atoi(file)
		if err != nil {
			results = append(results, campaignResult{from, flipSetup, "child wrote " + sc.Text()})
			break
		}
		results = append(results, campaignResult{n, outcome, detail})
	}
	err = cmd.Wait()
	if err == nil && (len(results) > 0 || from >= end) {
		return results, nil
	}
	tail := stderr.String()
	if i := strings.Index(tail, "goroutine "); i > 0 {
		tail = tail[:i]
	}
	return results, fmt.Errorf("%v: %s", err, strings.TrimSpace(tail))
}

// helperBitFlip is the campaign's child: it reads the unflipped file
// once, then for each byte from ZEO_LEDGER_FROM on writes the flipped
// copy (always at the same path, so that messages compare), reads it and
// prints "byte\toutcome\tdetail".
func helperBitFlip() {
	base, err := os.ReadFile(os.Getenv("ZEO_LEDGER_PATH"))
	if err != nil {
		fmt.Printf("0\t%s\t%v\n", flipSetup, err)
		os.Exit(1)
	}
	path := filepath.Join(os.Getenv("ZEO_LEDGER_DIR"), "flipped.db")
	if err := os.WriteFile(path, base, 0o600); err != nil {
		fmt.Printf("0\t%s\t%v\n", flipSetup, err)
		os.Exit(1)
	}
	before, err := readAll(path)
	if err != nil {
		fmt.Printf("0\t%s\t%v\n", flipSetup, err)
		os.Exit(1)
	}
	from, _ := strconv.Atoi(os.Getenv("ZEO_LEDGER_FROM"))
	end, _ := strconv.Atoi(os.Getenv("ZEO_LEDGER_END"))
	stride, _ := strconv.Atoi(os.Getenv("ZEO_LEDGER_STRIDE"))
	data := bytes.Clone(base)
	for i := from; i < min(end, len(base)); i += max(stride, 1) {
		copy(data, base)
		data[i] ^= 1 << (i % 8)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			fmt.Printf("%d\t%s\t%v\n", i, flipSetup, err)
			continue
		}
		after, openErr := readAll(path)
		outcome, detail := judge(before, after, openErr)
		fmt.Printf("%d\t%s\t%s\n", i, outcome, strings.ReplaceAll(detail, "\n", " | "))
	}
	os.Exit(0)
}
