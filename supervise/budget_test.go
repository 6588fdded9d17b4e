package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/ledgertest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/handler"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// crashDispatcher is the dispatcher of the budget property: it counts
// every dispatch per logical effect and answers by the mode drawn for the
// call; "crash" consumes the effect and then kills the controller's ledger
// before the outcome can be recorded, as a controller dying mid-dispatch.
type crashDispatcher struct {
	mu         sync.Mutex
	dispatched map[string]int
	mode       string
	l          ledger.Ledger
}

func (d *crashDispatcher) Dispatch(ctx context.Context, x port.Dispatch) (port.Receipt, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dispatched[x.LogicalEffectID]++
	switch d.mode {
	case "not-consumed":
		return port.Receipt{}, port.NotConsumed("refused")
	case "uncertain":
		return port.Receipt{}, errors.New("lost")
	case "crash":
		d.l.Close(ctx)
	}
	return port.Receipt{ReceiptID: "rcpt-" + x.LogicalEffectID}, nil
}

// TestBudgetNeverExceeded is a property over random histories of one
// operation on a bolt ledger: attempts that request effects (new ones,
// redeliveries, changed input), dispatches that succeed, are refused, are
// uncertain or crash the controller (the ledger is closed mid-dispatch and
// reopened by a new controller, which recovers), and reconciliations. In
// every history, no logical effect is dispatched twice and the distinct
// effects dispatched never exceed the operation's budget.
func TestBudgetNeverExceeded(t *testing.T) {
	ln := newLauncher(t, 0) // Recover needs a Supervisor; nothing is launched
	ids := []string{"e1", "e2", "e3", "e4", "e5"}
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "budget-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "ledger.db")
		var l *bolt.Ledger
		open := func() {
			if l, err = bolt.Open(path, bolt.Options{}); err != nil {
				rt.Fatal(err)
			}
		}
		open()
		defer func() { l.Close(ctx) }()
		budget := rapid.Int64Range(0, 4).Draw(rt, "budget")
		d := &crashDispatcher{dispatched: map[string]int{}}
		b := testBinding(nil)
		reqDigest := canon.Sum([]byte("request"))
		if _, err := l.CreateOperation(ctx, ledger.OperationSpec{Scope: scope, OperationID: "op", CapabilityID: "example.two_effects@1.0.0",
			RequestDigest: reqDigest, ManifestDigest: b.ManifestDigest, EffectBudget: budget, Deadline: time.Now().Add(time.Hour)}); err != nil {
			rt.Fatal(err)
		}
		attempts := rapid.IntRange(1, 5).Draw(rt, "attempts")
		for a := range attempts {
			f, err := l.StartAttempt(ctx, scope, "op", fmt.Sprintf("attempt-%d", a))
			if err != nil {
				break // the operation is over (a result was accepted)
			}
			binding := ipc.AttemptBinding{OrganizationID: scope.OrganizationID, ProjectID: scope.ProjectID, SeatID: "seat",
				RuntimeBindingID: "rb", PacketID: "packet", OperationID: "op", AttemptID: f.AttemptID, FencingGeneration: f.Generation,
				CapabilityID: "example.two_effects@1.0.0", RequestDigest: reqDigest, ManifestDigest: b.ManifestDigest}
			launchDigest := canon.Sum([]byte(f.AttemptID))
			if _, err := ledgertest.Issue(ctx, l, f, "boot-"+f.AttemptID, launchDigest); err != nil {
				rt.Fatal(err)
			}
			d.l = l
			h, err := handler.New(handler.Config{Ledger: l, Fence: f, Binding: binding, BootstrapID: "boot-" + f.AttemptID, Dispatcher: d})
			if err != nil {
				rt.Fatal(err)
			}
			call := ipc.Call{Binding: binding, SessionID: "session-" + f.AttemptID}
			dec, err := h.Bootstrap(ctx, ipc.BootstrapRequest{Call: call, Payload: ipc.BootstrapPayload{BootstrapID: "boot-" + f.AttemptID, LaunchDigest: launchDigest, PID: 100 + a}})
			if err != nil || dec.State != ipc.StateAllowed {
				rt.Fatalf("bootstrap: %+v, %v", dec, err)
			}
			if dec, err := h.Admit(ctx, ipc.AdmitRequest{Call: call}); err != nil || dec.State != ipc.StateAllowed {
				rt.Fatalf("admit: %+v, %v", dec, err)
			}
			crashed := false
			for range rapid.IntRange(0, 6).Draw(rt, "requests") {
				id := rapid.SampledFrom(ids).Draw(rt, "effect")
				req := ipc.EffectRequest{LogicalEffectID: id, ConnectionRef: "conn", ConnectorRevision: canon.Sum([]byte("rev")),
					Operation: "op", Arguments: map[string]any{"changed": rapid.IntRange(0, 9).Draw(rt, "changed") == 0}}
				digest, err := req.Digest()
				if err != nil {
					rt.Fatal(err)
				}
				d.mode = rapid.SampledFrom([]string{"ok", "ok", "not-consumed", "uncertain", "crash"}).Draw(rt, "dispatch")
				dec, err := h.Effect(ctx, ipc.EffectCall{Call: call, Effect: req, EffectDigest: digest})
				if err != nil {
					if !errors.Is(err, ledger.ErrClosed) {
						rt.Fatalf("effect %s: %v", id, err)
					}
					crashed = true
					break
				}
				if dec.State == ipc.StateNeedsReconciliation && rapid.Bool().Draw(rt, "resolve") {
					res := ledger.Resolution{State: ledger.EffectNotConsumed, Reason: ledger.ReasonRefused}
					if rapid.Bool().Draw(rt, "consumed") {
						res = ledger.Resolution{State: ledger.EffectConfirmed, ReceiptID: "rcpt-reconciled"}
					}
					if _, err := l.Resolve(ctx, scope, "op", id, digest, res); err != nil && !errors.Is(err, ledger.ErrChangedInput) {
						rt.Fatalf("resolve %s: %v", id, err)
					}
				}
			}
			if crashed {
				// A new controller: the file lock passes, it recovers.
				open()
				s, err := supervise.New(config(nil, l, ln))
				if err != nil {
					rt.Fatal(err)
				}
				if _, err := s.Recover(ctx); err != nil {
					rt.Fatal(err)
				}
				if err := s.Close(ctx); err != nil {
					rt.Fatal(err)
				}
				continue
			}
			if rapid.IntRange(0, 4).Draw(rt, "publish") == 0 {
				if _, err := h.Publish(ctx, ipc.PublishRequest{Call: call, Payload: ipc.PublishPayload{Data: map[string]any{}, DataDigest: canon.Sum([]byte("{}"))}}); err != nil {
					rt.Fatal(err)
				}
			}
		}
		view, err := l.Operation(ctx, scope, "op")
		if err != nil {
			rt.Fatal(err)
		}
		distinct := 0
		for id, n := range d.dispatched {
			if n > 1 {
				rt.Fatalf("effect %s dispatched %d times", id, n)
			}
			distinct++
		}
		if int64(distinct) > budget || view.Operation.EffectsUsed > budget || int64(distinct) > view.Operation.EffectsUsed {
			rt.Fatalf("budget %d: %d distinct effects dispatched, ledger used %d", budget, distinct, view.Operation.EffectsUsed)
		}
	})
}
