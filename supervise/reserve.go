package supervise

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/supervise/internal/telemetry"
)

// reserve takes the attempt's reservations through the Reserver before
// anything is launched. done reports that the attempt ends here: refused
// when another attempt holds what it needs (the error names the holder),
// or an error before any outcome.
func (a *attempt) reserve(ctx context.Context) (done bool, res *Outcome, err error) {
	s, c, fence, o := a.s, a.c, a.fence, a.o
	err = s.cfg.Reserver.Reserve(ctx, fence, a.p.binding, a.m, a.prep.Arguments, c.ReservationWait)
	if err == nil {
		return false, nil, nil
	}
	// Reserve takes all or nothing; a release makes sure of it whatever
	// the error was.
	s.release(ctx, fence)
	if !errors.Is(err, cataloguestore.ErrReserved) {
		return true, nil, fmt.Errorf("supervise: operation %q: taking its reservations: %w", c.OperationID, err)
	}
	o.AttemptID, o.Generation = fence.AttemptID, fence.Generation
	o.State = launch.StateRefused
	o.Reason = "a resource this capability reserves is held by another attempt; nothing was launched: Invoke again with the same operation id later"
	s.record(ctx, fence, o, evidence(o, a.binding, "", "", nil, nil, a.started))
	s.emit(Event{Kind: EventOutcome, Scope: c.Scope, OperationID: c.OperationID, AttemptID: o.AttemptID, Generation: o.Generation, Outcome: o})
	res, err = o.result(err)
	return true, res, err
}

// release releases the attempt's reservations under
// context.WithoutCancel, bounded by OutcomeTimeout, so that a caller
// giving up does not leave them held until the operation's deadline.
func (s *Supervisor) release(ctx context.Context, f ledger.Fence) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.OutcomeTimeout)
	defer cancel()
	if err := s.cfg.Reserver.Release(wctx, f); err != nil {
		// The reservations are freed anyway once the attempt is fenced
		// off, the operation ends or its deadline passes.
		s.log.Warn("supervise: releasing the attempt's reservations failed", telemetry.KeyOperation, f.OperationID, telemetry.KeyAttempt, f.AttemptID, telemetry.KeyErr, err)
	}
}
