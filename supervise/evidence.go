package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/supervise/internal/answer"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// evidence is what the ledger keeps of an attempt: the binding fields it
// does not otherwise hold, the launch, the process, the session and the
// verdict.
func evidence(o *Outcome, b ipc.AttemptBinding, bootstrapID string, launchDigest canon.Digest, lo *launch.Outcome, h *answer.Handler, started time.Time) ledger.AttemptEvidence {
	ev := ledger.AttemptEvidence{
		SeatID: b.SeatID, RuntimeBindingID: b.RuntimeBindingID, PacketID: b.PacketID,
		BootstrapID: bootstrapID, LaunchDigest: launchDigest,
		State: string(o.State), Reason: clip(o.Reason, ledger.MaxEvidenceTextBytes),
		StartedAt: started, EndedAt: time.Now(),
	}
	if lo == nil {
		return ev
	}
	p := lo.Process
	ev.Launched, ev.PID, ev.ExitCode = true, p.PID, p.ExitCode
	if p.Signal != nil {
		ev.Signal = clip(p.Signal.String(), 64)
	}
	ev.HostResult = p.Stdout[:min(len(p.Stdout), ledger.MaxEvidenceOutputBytes)]
	ev.StdoutBytes = max(p.StdoutBytes, int64(len(ev.HostResult)))
	ev.StderrTail = p.StderrTail[max(0, len(p.StderrTail)-ledger.MaxEvidenceStderrBytes):]
	sum := lo.Session
	ev.Session.SessionID = h.SessionID()
	ev.Session.HostNonce, ev.Session.Frames = sum.HostNonce, sum.Frames
	ev.Session.DroppedExchanges = sum.DroppedExchanges
	for _, x := range sum.Exchanges {
		if len(ev.Session.Exchanges) == ledger.MaxEvidenceExchanges {
			ev.Session.DroppedExchanges++
			continue
		}
		ev.Session.Exchanges = append(ev.Session.Exchanges, ledger.ExchangeEvidence{
			Sequence: x.Sequence, Method: string(x.Method), State: string(x.State), RequestDigest: x.RequestDigest})
	}
	if lo.SessionErr != nil {
		ev.Session.Error = clip(lo.SessionErr.Error(), ledger.MaxEvidenceTextBytes)
	}
	return ev
}

// record writes the attempt's evidence under context.WithoutCancel, so
// that a caller giving up does not lose it, bounded by OutcomeTimeout.
func (s *Supervisor) record(ctx context.Context, f ledger.Fence, o *Outcome, ev ledger.AttemptEvidence) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.OutcomeTimeout)
	defer cancel()
	rec, err := s.cfg.Ledger.RecordAttempt(wctx, f, ev)
	if err != nil {
		o.EvidenceErr = fmt.Errorf("supervise: recording the evidence of attempt %q: %w", f.AttemptID, err)
		s.log.Warn("supervise: attempt evidence not recorded", telemetry.KeyOperation, f.OperationID, telemetry.KeyAttempt, f.AttemptID, telemetry.KeyErr, err)
		return
	}
	o.Evidence = &rec
}

// clip makes s valid UTF-8 (error text may quote a host's bytes) and cuts
// it to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	const ell = "…"
	i := n - len(ell)
	for i > 0 && (s[i]&0xc0) == 0x80 {
		i--
	}
	return s[:i] + ell
}

// Recover takes over the attempts of controllers that are gone, and lists
// what needs reconciliation. For every open operation whose current
// attempt is orphaned (its controller's lease expired or was released, or
// it recorded no controller), that was launched (it has a bootstrap id)
// and has no recorded evidence, it starts a new, empty attempt owned by
// this controller (ledger.TakeOver), which fences the old one off, so
// that a host still running from before is refused on every method; the
// old attempt's effects still authorized are marked unknown. Then it
// lists the effects that need reconciliation.
//
// The attempts of a live controller are never touched, this
// Supervisor's own included: the ledger checks the owner's lease in the
// same write (ErrOwnerLive), so Recover is safe to run at any time on a
// ledger many controllers share. Config.TakeoverInterval runs it in the
// background. On ledger/bolt the file lock proves every earlier owner
// gone, so a restarted controller takes its predecessor's attempts over
// at once.
func (s *Supervisor) Recover(ctx context.Context) (Recovery, error) {
	rec := Recovery{Fenced: []ledger.Fence{}}
	if err := s.own(ctx); err != nil {
		return rec, err
	}
	q := ledger.OperationQuery{State: ledger.OperationOpen, Orphaned: true, Limit: ledger.MaxListLimit}
	for {
		ops, err := s.cfg.Ledger.ListOperations(ctx, q)
		if err != nil {
			return rec, fmt.Errorf("supervise: recover: listing orphaned operations: %w", err)
		}
		for _, op := range ops {
			f, err := s.recoverOne(ctx, op)
			if err != nil {
				return rec, err
			}
			if f != nil {
				rec.Fenced = append(rec.Fenced, *f)
			}
		}
		if len(ops) < q.Limit {
			break
		}
		last := ops[len(ops)-1]
		q.After = ledger.OperationRef{Scope: last.Scope, OperationID: last.OperationID}
	}
	unknown, err := s.cfg.Ledger.ListUnknown(ctx)
	if err != nil {
		return rec, fmt.Errorf("supervise: recover: listing effects to reconcile: %w", err)
	}
	rec.Unknown = unknown
	inflight, err := s.cfg.Ledger.ListInFlight(ctx)
	if err != nil {
		return rec, fmt.Errorf("supervise: recover: listing effects in flight: %w", err)
	}
	rec.InFlight = inflight
	return rec, nil
}

// recoverOne takes op's current attempt over when it was left open by a
// controller that is gone, and returns its fence; nil when there was
// nothing to do (or another controller did it first).
func (s *Supervisor) recoverOne(ctx context.Context, op ledger.Operation) (*ledger.Fence, error) {
	if op.CurrentAttemptID == "" {
		return nil, nil
	}
	s.mu.Lock()
	_, running := s.running[opKey{op.Scope, op.OperationID}]
	s.mu.Unlock()
	if running {
		return nil, nil
	}
	view, err := s.cfg.Ledger.Operation(ctx, op.Scope, op.OperationID)
	if err != nil {
		return nil, fmt.Errorf("supervise: recover: operation %q: %w", op.OperationID, err)
	}
	launched := false
	for _, b := range view.Bootstraps {
		launched = launched || (b.AttemptID == op.CurrentAttemptID && b.Generation == op.CurrentGeneration)
	}
	if !launched {
		return nil, nil
	}
	evs, err := s.cfg.Ledger.Evidence(ctx, op.Scope, op.OperationID)
	if err != nil {
		return nil, fmt.Errorf("supervise: recover: operation %q: %w", op.OperationID, err)
	}
	for _, e := range evs {
		if e.AttemptID == op.CurrentAttemptID {
			return nil, nil
		}
	}
	id, err := newID("takeover")
	if err != nil {
		return nil, err
	}
	old := ledger.Fence{Scope: op.Scope, OperationID: op.OperationID, AttemptID: op.CurrentAttemptID, Generation: op.CurrentGeneration}
	nf, err := s.cfg.Ledger.TakeOver(ctx, ledger.Takeover{From: old, AttemptID: id, ControllerID: s.ctl.id})
	switch {
	case err == nil:
	case errors.Is(err, ledger.ErrOperationCancelled), errors.Is(err, ledger.ErrResultAlreadyAccepted),
		errors.Is(err, ledger.ErrStaleFence), errors.Is(err, ledger.ErrOwnerLive):
		// Settled, taken over by another controller, or its owner renewed
		// since it was listed: nothing to do.
		return nil, nil
	default:
		return nil, fmt.Errorf("supervise: recover: taking operation %q over: %w", op.OperationID, err)
	}
	for _, e := range view.Effects {
		if e.State != ledger.EffectAuthorized || e.AttemptID != old.AttemptID {
			continue
		}
		// Its dispatch may have happened: unknown, never not consumed.
		if _, err := s.cfg.Ledger.MarkUnknown(ctx, nf, e.LogicalEffectID, e.RequestDigest); err != nil {
			s.log.Warn("supervise: recover: marking an orphaned effect unknown failed; it is listed all the same", telemetry.KeyOperation, op.OperationID, telemetry.KeyEffect, e.LogicalEffectID, telemetry.KeyErr, err)
		}
	}
	s.tel.TookOver()
	s.log.Info("supervise: recover: took over an attempt of a controller that is gone", telemetry.KeyOperation, op.OperationID,
		telemetry.KeyAttempt, op.CurrentAttemptID, telemetry.KeyController, op.CurrentControllerID)
	return &old, nil
}
