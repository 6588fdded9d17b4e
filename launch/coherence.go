package launch

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// Coherence of a host's result with the session (doc/design.md, “A host
// result is evidence”).
//
// A HostResult is the host's claim, and a child can write any well-formed
// one: it can read its binding from FD 3 and print waiting_approval
// without sending a frame. Invoke accepts a claim only if an honest host
// could have made it after living through what the Runtime itself saw
// (history): the replies its session gave, whether the session broke,
// whether the launcher stopped the host at the deadline or on a cancel.
// A claim that the history contradicts is a protocol failure
// (ErrSessionMismatch), never an outcome.
//
// The session refuses any request after a reply other than allowed, so
// on a session that ended cleanly at most one reply was not allowed, and
// it was the last. An honest host ends its invocation at that reply, with
// the state of the same name. The table below is the whole rule set; the
// host's own endings come from doc/protocol.md, “Host endings”. An ending
// before any frame is judged whatever became of the session afterwards
// (past the deadline, the session itself ends on the deadline).
//
//	claimed state         coherent history
//	succeeded             clean session; every reply allowed; a result.publish
//	                      answered allowed (so bootstrap and admit were too)
//	waiting_approval      clean session whose last reply was waiting_approval
//	refused               clean session whose last reply was refused; or the
//	                      host's own refusals: ZEO_HOST_SCOPE with no frame
//	                      and the attempt really out of scope (OutOfScope),
//	                      ZEO_HOST_REQUEST_BINDING or ZEO_HOST_ORGANIZATION
//	                      after bootstrap alone, answered allowed
//	cancelled             clean session whose last reply was cancelled; or the
//	                      capability cancelled: bootstrap and admit allowed,
//	                      every effect allowed, no result.publish; or the
//	                      launcher stopped the host on a cancel
//	needs_reconciliation  the last reply was needs_reconciliation; or an
//	                      effect may be unknown to the host: admit was allowed
//	                      and the session broke, or its last exchange was an
//	                      effect.request (a reply the host may have lost)
//	failed                clean session: bootstrap and admit allowed, every
//	                      effect allowed, no result.publish (the capability
//	                      failed)
//	unavailable           as failed; or ZEO_HOST_REQUIREMENTS after bootstrap
//	                      alone, answered allowed
//	invalid_request       no frame (stdin refused), or
//	                      bootstrap alone, answered allowed (arguments refused)
//	timed_out             no frame and the attempt deadline had passed when the
//	                      host ended (DeadlinePassed); or the launcher stopped
//	                      the host at the deadline
//	protocol_error        always: the host proves nothing, and says so
//	queued, running       never: the host does not write them
//
// And for every state: effect_disposition confirmed needs at least one
// effect.request answered allowed (the host confirms an effect only on
// an allowed reply).

// history is what the Runtime itself saw of one invocation: the evidence
// a host's result is judged against (see Check). Outcome carries each of
// its parts (Session, SessionErr, Process.Stopped, DeadlinePassed,
// OutOfScope).
type history struct {
	// Session summarizes the requests the session answered.
	Session ipc.Summary
	// SessionErr is how the session ended: nil when the host closed its
	// end at a frame boundary.
	SessionErr error
	// Stopped says whether the launcher stopped the host, and why.
	Stopped StopReason
	// DeadlinePassed reports that the attempt deadline had passed when the
	// launcher saw the host end: only then may the host have found it
	// passed at its start.
	DeadlinePassed bool
	// OutOfScope reports that the host's own scope check fails for this
	// invocation: the request names another capability than the
	// attempt's, or one not admitted, or the attempt's manifest digest is
	// not the provider's.
	OutOfScope bool
}

// Error codes the host writes for its own refusals (doc/protocol.md,
// “Error codes”), which the coherence rules tell apart.
const (
	codeScope          = "ZEO_HOST_SCOPE"
	codeRequestBinding = "ZEO_HOST_REQUEST_BINDING"
	codeOrganization   = "ZEO_HOST_ORGANIZATION"
	codeRequirements   = "ZEO_HOST_REQUIREMENTS"
	codeDeadline       = "ZEO_HOST_DEADLINE"
)

// Check reports whether an honest host could have claimed r after the
// history h (see the table at the top of coherence.go): nil if so, else
// an error saying what contradicts the claim. It judges only the claim's
// agreement with the session; ParseResult judges its form, binding and
// exit status.
func (h history) Check(r HostResult) error {
	s := h.view()
	if r.EffectDisposition == EffectConfirmed && s.effectsAllowed == 0 {
		return errors.New("effect_disposition confirmed, but the session allowed no effect.request")
	}
	code := ""
	if r.ErrorCode != nil {
		code = *r.ErrorCode
	}
	endedBy := func(st ipc.ReplyState) bool { return s.clean && s.ended == st }
	ok := false
	switch r.State {
	case StateProtocolError:
		ok = true
	case StateSucceeded:
		ok = s.clean && s.ended == "" && s.publish
	case StateWaitingApproval:
		ok = endedBy(ipc.StateWaitingApproval)
	case StateRefused:
		ok = endedBy(ipc.StateRefused) ||
			code == codeScope && s.frames == 0 && h.OutOfScope ||
			(code == codeRequestBinding || code == codeOrganization) && s.bootstrapOnly()
	case StateCancelled:
		ok = endedBy(ipc.StateCancelled) || s.capabilityEnded() || h.Stopped == StopCancelled
	case StateNeedsReconciliation:
		ok = s.ended == ipc.StateNeedsReconciliation ||
			s.admitted && (!s.clean || s.lastEffect)
	case StateFailed:
		ok = s.capabilityEnded()
	case StateUnavailable:
		ok = s.capabilityEnded() || code == codeRequirements && s.bootstrapOnly()
	case StateInvalidRequest:
		ok = s.frames == 0 || s.bootstrapOnly()
	case StateTimedOut:
		ok = code == codeDeadline && s.frames == 0 && h.DeadlinePassed || h.Stopped == StopDeadline
	}
	if ok {
		return nil
	}
	return fmt.Errorf("the host claims %s (error_code %q), but %s", r.State, code, s)
}

// sessionView is a Summary read for the coherence rules.
type sessionView struct {
	clean          bool           // the session ended at a frame boundary
	frames         int            // request frames read
	ended          ipc.ReplyState // the one reply not allowed, "" if none (meaningful when clean)
	lastMethod     ipc.Method     // the method of the last answered request, "" if none
	bootstrapped   bool           // bootstrap answered allowed
	admitted       bool           // invoke.admit answered allowed
	effectsAllowed int            // effect.requests answered allowed
	lastEffect     bool           // the last answered request was an effect.request
	publish        bool           // result.publish answered allowed
	methods        map[ipc.Method]int
}

func (h history) view() sessionView {
	sum := h.Session
	v := sessionView{clean: h.SessionErr == nil, frames: sum.Frames, publish: sum.Published, methods: sum.Methods}
	for st, n := range sum.States {
		if st != ipc.StateAllowed && n > 0 {
			v.ended = st
		}
	}
	// The last answered request: the last recorded one, or, when the
	// record is full, a result.publish if there was one (it can only be
	// last), else an effect.request (nothing else comes that late).
	switch {
	case sum.DroppedExchanges == 0 && len(sum.Exchanges) > 0:
		v.lastMethod = sum.Exchanges[len(sum.Exchanges)-1].Method
	case sum.DroppedExchanges > 0 && sum.Methods[ipc.MethodPublish] > 0:
		v.lastMethod = ipc.MethodPublish
	case sum.DroppedExchanges > 0:
		v.lastMethod = ipc.MethodEffect
	}
	lastRefused := func(m ipc.Method) int {
		if v.ended != "" && v.lastMethod == m {
			return 1
		}
		return 0
	}
	v.bootstrapped = sum.Methods[ipc.MethodBootstrap]-lastRefused(ipc.MethodBootstrap) > 0
	v.admitted = sum.Methods[ipc.MethodAdmit]-lastRefused(ipc.MethodAdmit) > 0
	v.effectsAllowed = sum.Methods[ipc.MethodEffect] - lastRefused(ipc.MethodEffect)
	v.lastEffect = v.lastMethod == ipc.MethodEffect
	return v
}

// bootstrapOnly reports a clean session that answered bootstrap alone,
// allowed: the host refused on its own before invoke.admit.
func (v sessionView) bootstrapOnly() bool {
	return v.clean && v.bootstrapped && v.frames == 1
}

// capabilityEnded reports a clean session in which the capability ran
// and ended without publishing: bootstrap and admit allowed, every
// effect allowed, no result.publish.
func (v sessionView) capabilityEnded() bool {
	return v.clean && v.admitted && v.ended == "" && v.methods[ipc.MethodPublish] == 0
}

func (v sessionView) String() string {
	var b []byte
	if v.clean {
		b = append(b, "the session ended cleanly"...)
	} else {
		b = append(b, "the session broke"...)
	}
	b = fmt.Appendf(b, " after %d frames", v.frames)
	if v.lastMethod != "" {
		b = fmt.Appendf(b, ", the last answered %s", v.lastMethod)
	}
	if v.ended != "" {
		b = fmt.Appendf(b, ", the one reply not allowed was %s", v.ended)
	} else {
		b = append(b, ", every reply allowed"...)
	}
	if v.publish {
		b = append(b, ", result.publish allowed"...)
	}
	return string(b)
}

// outOfScope reports whether the host's own scope check (doc/protocol.md,
// “Invocation sequence”, step 7) fails for request under c: the
// request's capability_id is not the attempt's or not admitted, or the
// attempt's manifest digest is not the provider's. A request without a
// capability_id the host would refuse before that check.
func outOfScope(c LaunchContext, request []byte) bool {
	v, err := canon.Parse(request)
	if err != nil || v.Kind != canon.Object {
		return false // the host refuses the request first, as invalid_request
	}
	id, ok := v.Get("capability_id")
	if !ok || id.Kind != canon.String {
		return false
	}
	return id.Str != c.Attempt.CapabilityID || !slices.Contains(c.AdmittedCapabilities, id.Str) ||
		c.Attempt.ManifestDigest != c.Provider.ManifestDigest
}
