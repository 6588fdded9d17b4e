package bolt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
)

// crashItersEnv sets the number of SIGKILL iterations of TestCrash. The
// default keeps CI fast; run with ZEO_LEDGER_CRASH_ITERS=100 (or more) for
// the full test.
const crashItersEnv = "ZEO_LEDGER_CRASH_ITERS"

var crashScope = ledger.Scope{OrganizationID: "org", ProjectID: "proj"}

// crashBudget and the effect ids (e0..e15, up to 20 tries per attempt)
// let an operation hold more effects than ledger/bolt stages in its
// operation record, so kills also land around the staged index's flushes.
const crashBudget = 12

// report is one line the child appends after a call was acknowledged
// (durably committed). Kinds: create, attempt, begin, confirm, unknown,
// notconsumed, result, violation.
type report struct {
	Kind    string   `json:"k"`
	Op      string   `json:"op"`
	Effect  string   `json:"e,omitempty"`
	Auth    string   `json:"auth,omitempty"`
	Gen     int64    `json:"gen,omitempty"`
	Receipt string   `json:"rcpt,omitempty"`
	Refs    []string `json:"refs,omitempty"`
	Msg     string   `json:"msg,omitempty"`
}

func effectDigest(op, id string) canon.Digest { return ledgertest.Digest(op + "/" + id) }
func dataDigest(op string) canon.Digest       { return ledgertest.Digest(op + "/data") }

// TestCrash: a child process does random ledger work on 4 goroutines and is
// SIGKILLed at a random moment, repeatedly, on the same file. After each
// kill the parent reopens the file and checks, against what the child had
// reported as acknowledged:
//
//  1. every acknowledged effect exists with the same authorization id and
//     request digest, in the acknowledged state or (for an acknowledged
//     authorization only) any state reachable from it;
//  2. no effect is confirmed twice: a confirmed effect carries the one
//     receipt the child used, and the child's attempts to confirm again
//     with another receipt were refused;
//  3. effects used equal effects recorded and never exceed the budget;
//  4. no accepted result is lost or changed (digest, refs, artifact bytes);
//  5. every effect left authorized or unknown is listed by ListUnknown;
//  6. bbolt's own consistency check passes.
func TestCrash(t *testing.T) {
	iters := longtest.Size(3, 8)
	if v := os.Getenv(crashItersEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", crashItersEnv, v)
		}
		iters = n
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	reportPath := filepath.Join(dir, "report.jsonl")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range iters {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"=crash", "ZEO_LEDGER_PATH="+path,
			"ZEO_LEDGER_REPORT="+reportPath, fmt.Sprintf("ZEO_LEDGER_ROUND=%d", i))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		before := countLines(t, reportPath)
		// Kill only once the child is working: it has acknowledged a
		// durable call in this round (10 s is a hang detector, not a
		// timing claim). Then a random moment in the middle of its work.
		// Every round thus kills a child that had acknowledged work; the
		// wait guarantees it, so nothing counts it afterwards.
		for wait := time.Now().Add(10 * time.Second); countLines(t, reportPath) == before; {
			if time.Now().After(wait) {
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: the child acknowledged no work within 10 s\n%s", i, stderr.String())
			}
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child did not die by SIGKILL: %v\n%s", i, err, stderr.String())
		}
		verifyCrash(t, path, reportPath, i)
	}
	t.Logf("%d SIGKILL rounds, each after the child had acknowledged work in that round; %d acknowledged calls in all",
		iters, countLines(t, reportPath))
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

type wantEffect struct {
	auth    string
	state   ledger.EffectState // last acknowledged
	receipt string
}

type wantOp struct {
	gen     int64
	effects map[string]*wantEffect
	result  *report
}

func verifyCrash(t *testing.T, path, reportPath string, round int) {
	t.Helper()
	ops := map[string]*wantOp{}
	f, err := os.Open(reportPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if f != nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r report
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				continue // a line torn by the kill: never acknowledged
			}
			o := ops[r.Op]
			if o == nil && r.Kind != "violation" {
				o = &wantOp{effects: map[string]*wantEffect{}}
				ops[r.Op] = o
			}
			switch r.Kind {
			case "violation":
				t.Fatalf("round %d: child saw a violation: %s", round, r.Msg)
			case "attempt":
				o.gen = max(o.gen, r.Gen)
			case "begin":
				if e := o.effects[r.Effect]; e != nil && e.auth != r.Auth {
					t.Fatalf("round %d: effect %s/%s authorized twice: %s and %s", round, r.Op, r.Effect, e.auth, r.Auth)
				}
				if o.effects[r.Effect] == nil {
					o.effects[r.Effect] = &wantEffect{auth: r.Auth, state: ledger.EffectAuthorized}
				}
			case "confirm":
				o.effects[r.Effect].state, o.effects[r.Effect].receipt = ledger.EffectConfirmed, r.Receipt
			case "unknown":
				o.effects[r.Effect].state = ledger.EffectUnknown
			case "notconsumed":
				o.effects[r.Effect].state = ledger.EffectNotConsumed
			case "result":
				o.result = &r
			}
		}
		f.Close()
	}

	l, err := bolt.Open(path, bolt.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
	}
	ctx := context.Background()
	unknown, err := l.ListUnknown(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range unknown {
		listed[e.OperationID+"/"+e.LogicalEffectID] = true
	}
	for opID, w := range ops {
		v, err := l.Operation(ctx, crashScope, opID)
		if err != nil {
			t.Fatalf("round %d: acknowledged operation %s: %v", round, opID, err)
		}
		if v.Operation.CurrentGeneration < w.gen {
			t.Fatalf("round %d: %s: generation %d < acknowledged %d", round, opID, v.Operation.CurrentGeneration, w.gen)
		}
		if v.Operation.EffectsUsed != int64(len(v.Effects)) || v.Operation.EffectsUsed > v.Operation.EffectBudget {
			t.Fatalf("round %d: %s: used %d, recorded %d, budget %d", round, opID, v.Operation.EffectsUsed, len(v.Effects), v.Operation.EffectBudget)
		}
		got := map[string]ledger.Effect{}
		for _, e := range v.Effects {
			got[e.LogicalEffectID] = e
			pending := e.State == ledger.EffectAuthorized || e.State == ledger.EffectUnknown
			if listed[opID+"/"+e.LogicalEffectID] != pending {
				t.Fatalf("round %d: %s/%s in state %s, listed for reconciliation: %v", round, opID, e.LogicalEffectID, e.State, !pending)
			}
			if e.State == ledger.EffectConfirmed && e.ReceiptID != "rcpt-"+e.LogicalEffectID {
				t.Fatalf("round %d: %s/%s confirmed with receipt %q", round, opID, e.LogicalEffectID, e.ReceiptID)
			}
		}
		for id, we := range w.effects {
			e, ok := got[id]
			if !ok {
				t.Fatalf("round %d: acknowledged effect %s/%s lost", round, opID, id)
			}
			if e.AuthorizationID != we.auth || e.RequestDigest != effectDigest(opID, id) {
				t.Fatalf("round %d: %s/%s changed: %+v, acknowledged auth %s", round, opID, id, e, we.auth)
			}
			if we.state != ledger.EffectAuthorized && (e.State != we.state || e.ReceiptID != we.receipt) {
				t.Fatalf("round %d: %s/%s is %s (%q), acknowledged %s (%q)", round, opID, id, e.State, e.ReceiptID, we.state, we.receipt)
			}
		}
		if r := w.result; r != nil {
			if v.Result == nil || v.Result.DataDigest != dataDigest(opID) || fmt.Sprint(v.Result.ArtifactRefs) != fmt.Sprint(r.Refs) {
				t.Fatalf("round %d: %s: accepted result %+v lost or changed (acknowledged refs %v)", round, opID, v.Result, r.Refs)
			}
			a, err := l.Artifact(ctx, crashScope, r.Refs[0])
			if err != nil || string(a.Bytes) != "artifact of "+opID {
				t.Fatalf("round %d: %s: artifact %+v, %v", round, opID, a, err)
			}
		}
	}
	ledgertest.Check(t, l)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}); err != nil {
		t.Fatalf("round %d: bbolt consistency check: %v", round, err)
	}
}

// helperCrash is the child of TestCrash: it works until it is killed.
func helperCrash() {
	fail := func(err error) {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
	l, err := bolt.Open(os.Getenv("ZEO_LEDGER_PATH"), bolt.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fail(err)
	}
	rep, err := os.OpenFile(os.Getenv("ZEO_LEDGER_REPORT"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fail(err)
	}
	var mu sync.Mutex
	emit := func(r report) {
		b, _ := json.Marshal(r)
		mu.Lock()
		defer mu.Unlock()
		if _, err := rep.Write(append(b, '\n')); err != nil { // one write(2): whole line or nothing
			fail(err)
		}
	}
	round, _ := strconv.Atoi(os.Getenv("ZEO_LEDGER_ROUND"))
	for w := range 4 {
		go crashWorker(l, emit, fail, round, w)
	}
	select {}
}

func crashWorker(l ledger.Ledger, emit func(report), fail func(error), round, w int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
	violation := func(format string, args ...any) { emit(report{Kind: "violation", Msg: fmt.Sprintf(format, args...)}) }
	for n := 0; ; n++ {
		// Sometimes resume an operation of an earlier round (the same
		// file survived the kill): new attempt, redeliveries.
		op := fmt.Sprintf("op-%d-%d-%d", round, w, n)
		if round > 0 && rng.IntN(3) == 0 {
			op = fmt.Sprintf("op-%d-%d-%d", rng.IntN(round), w, rng.IntN(3))
		}
		if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: crashScope, OperationID: op, CapabilityID: "cap",
			RequestDigest: ledgertest.Digest("req"), ManifestDigest: ledgertest.Digest("man"), EffectBudget: crashBudget}); err != nil {
			fail(err)
		}
		emit(report{Kind: "create", Op: op})
		f, err := l.StartAttempt(ctx, crashScope, op, fmt.Sprintf("att-%d-%d", round, n))
		if errors.Is(err, ledger.ErrResultAlreadyAccepted) {
			continue
		}
		if err != nil {
			fail(err)
		}
		emit(report{Kind: "attempt", Op: op, Gen: f.Generation})
		// The protocol's opening: bootstrap id (unique per attempt), then
		// admission; effects and the result need both.
		boot, launch := "boot-"+op+"-"+f.AttemptID, ledgertest.Digest("launch")
		if _, err := ledgertest.Issue(ctx, l, f, boot, launch); err != nil {
			fail(err)
		}
		if _, err := l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: boot, LaunchDigest: launch, PID: os.Getpid(), SessionID: "s"}); err != nil {
			fail(err)
		}
		if _, err := l.Admit(ctx, f, ledgertest.Digest("req")); err != nil {
			fail(err)
		}
		for range rng.IntN(20) {
			id := fmt.Sprintf("e%d", rng.IntN(16))
			d := effectDigest(op, id)
			g, err := l.BeginEffect(ctx, f, id, d)
			if errors.Is(err, ledger.ErrBudgetExhausted) {
				continue
			}
			if err != nil {
				fail(err)
			}
			emit(report{Kind: "begin", Op: op, Effect: id, Auth: g.Effect.AuthorizationID})
			if g.Redelivery {
				again, err := l.BeginEffect(ctx, f, id, d)
				if err != nil || again.Effect != g.Effect {
					violation("redelivery of %s/%s changed: %+v then %+v (%v)", op, id, g.Effect, again.Effect, err)
				}
				continue
			}
			switch rng.IntN(4) {
			case 0:
				if _, err := l.ConfirmEffect(ctx, f, id, d, "rcpt-"+id); err != nil {
					fail(err)
				}
				emit(report{Kind: "confirm", Op: op, Effect: id, Receipt: "rcpt-" + id})
				if _, err := l.ConfirmEffect(ctx, f, id, d, "second-receipt"); !errors.Is(err, ledger.ErrInvalidTransition) {
					violation("%s/%s confirmed twice: %v", op, id, err)
				}
			case 1:
				if _, err := l.MarkUnknown(ctx, f, id, d); err != nil {
					fail(err)
				}
				emit(report{Kind: "unknown", Op: op, Effect: id})
			case 2:
				if _, err := l.MarkNotConsumed(ctx, f, id, d, ledger.ReasonRefused); err != nil {
					fail(err)
				}
				emit(report{Kind: "notconsumed", Op: op, Effect: id})
			default: // left authorized, as if the Runtime died before dispatching
			}
		}
		if rng.IntN(2) == 0 {
			r, err := l.AcceptResult(ctx, f, dataDigest(op), []byte("artifact of "+op))
			if err != nil {
				fail(err)
			}
			emit(report{Kind: "result", Op: op, Refs: r.ArtifactRefs})
		}
	}
}
