package agent

import (
	"context"
	"errors"

	"github.com/zeoruntime/runtimeipc/catalogue"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// Authority returns the port.Authority that asks the catalogue first:
// at invoke.admit, CheckAdmission (the operation's pin, the capability
// still visible to its scope in the pinned generation, its account still
// consented); before each new effect, CheckEffect (the effect names the
// operation's account, and the consent covers its operation). When the
// catalogue allows, next decides (nil: allow).
//
// The catalogue's answers map to the host's reply states as follows: a
// capability no longer visible, an operation never prepared by the
// catalogue or pinned to something else → refused; missing consent at
// admission → refused (the attempt cannot run as launched), missing consent
// for an effect → waiting_approval (nothing is recorded, so a later attempt
// asks again once consent is granted); any other error means the catalogue
// could not decide, and the Handler answers needs_reconciliation.
//
// The Facade uses it for every Supervisor it makes; embedders running their
// own Supervisor over a catalogue use it the same way.
func Authority(c *catalogue.Catalogue, next port.Authority) port.Authority {
	if next == nil {
		next = port.AllowAll{}
	}
	return catalogueAuthority{c: c, next: next}
}

type catalogueAuthority struct {
	c    *catalogue.Catalogue
	next port.Authority
}

// refusal reports whether a catalogue error is a decision to refuse.
func refusal(err error) bool {
	return errors.Is(err, catalogue.ErrUnknownCapability) || errors.Is(err, catalogue.ErrNotPinned) ||
		errors.Is(err, catalogue.ErrPinMismatch)
}

func (a catalogueAuthority) Admit(ctx context.Context, adm port.Admission) (port.Verdict, error) {
	if err := a.c.CheckAdmission(ctx, adm.Operation); err != nil {
		if refusal(err) || errors.Is(err, catalogue.ErrConsentRequired) {
			return port.Verdict{Decision: port.Refuse, Reason: err.Error()}, nil
		}
		return port.Verdict{}, err
	}
	return a.next.Admit(ctx, adm)
}

func (a catalogueAuthority) Effect(ctx context.Context, q port.EffectQuestion) (port.Verdict, error) {
	if err := a.c.CheckEffect(ctx, q.Operation, q.Request.ConnectionRef, q.Request.Operation); err != nil {
		switch {
		case errors.Is(err, catalogue.ErrConsentRequired):
			return port.Verdict{Decision: port.Hold, Reason: err.Error()}, nil
		case refusal(err):
			return port.Verdict{Decision: port.Refuse, Reason: err.Error()}, nil
		}
		return port.Verdict{}, err
	}
	return a.next.Effect(ctx, q)
}
