package hostsim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// OutcomeStatus is how a capability run ended, before the host maps it to
// a HostResult state.
type OutcomeStatus string

// Outcome statuses. Every non-success status other than unavailable and
// cancelled (policy_skipped, guard_rejected, integration_failure,
// invalid_return, unexpected_exception upstream) is OutcomeFailed here.
const (
	OutcomeSuccess     OutcomeStatus = "success"
	OutcomeUnavailable OutcomeStatus = "unavailable"
	OutcomeCancelled   OutcomeStatus = "cancelled"
	OutcomeFailed      OutcomeStatus = "failed"
)

// Outcome is what a Provider returns. Response is the capability's response
// object (success only); ErrorCode is its machine message (failures).
type Outcome struct {
	Status    OutcomeStatus
	ErrorCode string
	Response  map[string]any
}

// Provider is a scripted capability: it gets the normalized arguments and
// the "runtime.effects" port, and returns an outcome. A panic is reported
// as a failed outcome with ZEO_CAP_UNEXPECTED, as upstream's managed
// execution reports an unexpected exception.
type Provider func(ctx context.Context, args map[string]any, effects *EffectPort) Outcome

// Invocation is one host invocation (doc/protocol.md, “Invocation sequence”)
// as plain inputs: what the executable reads from the LaunchContext and the
// InvocationRequest, and hooks standing in for provider activation. Zero
// hooks pass.
type Invocation struct {
	// From the LaunchContext.
	Binding                ipc.AttemptBinding // attempt
	ProviderManifestDigest canon.Digest       // provider.manifest_digest
	AdmittedCapabilities   []string           // admitted_capabilities
	BootstrapID            string             // bootstrap_id
	LaunchDigest           canon.Digest       // the host's digest of the parsed context
	Deadline               time.Time          // deadline_unix_ms
	RPCTimeout             time.Duration      // rpc_timeout_ms; zero means 5 s
	MaxMessageBytes        int                // max_message_bytes; zero means 1 MiB
	Budget                 int64              // total_dispatch_budget

	// From the InvocationRequest.
	CapabilityID string
	Arguments    map[string]any

	// PID is sent in bootstrap; zero means os.Getpid().
	PID int
	// HostNonce is the nonce; empty means a fresh random one.
	HostNonce string
	// Now reads the wall clock; nil means time.Now.
	Now func() time.Time

	// Activate stands for step 9 (interpreter, distribution, factory,
	// inventory checks): an error gives protocol_error after bootstrap.
	Activate func() error
	// Normalize stands for step 11 (schema + model validation): it returns
	// the normalized arguments, an error gives invalid_request. Nil means
	// the arguments are already normalized.
	Normalize func(args map[string]any) (map[string]any, error)
	// Requirements stands for the requirements check (doc/protocol.md,
	// “Requirements check”): an error gives unavailable.
	Requirements func() error
	// ValidateResponse stands for the response_schema check: an error
	// gives protocol_error without publishing.
	ValidateResponse func(resp map[string]any) error
	// Provider runs the capability. Nil means Echo.
	Provider Provider
}

// Report is the end of a Run: the HostResult, the methods of the frames
// sent in order, and the failure behind a non-success result (for test
// diagnostics; the real host never prints it).
type Report struct {
	Result  Result
	Methods []ipc.Method
	Err     error
}

// Run performs the invocation over conn (the socket the host holds as FD
// 4) and closes conn before returning, so the Runtime sees EOF before the
// result is written. It never fails: every problem becomes the Result the
// upstream host would write.
func (inv *Invocation) Run(ctx context.Context, conn net.Conn) Report {
	r := &run{inv: inv, now: inv.Now}
	if r.now == nil {
		r.now = time.Now
	}
	res := r.do(ctx, conn)
	if r.ch != nil {
		r.methods = r.ch.Methods()
	}
	_ = conn.Close()
	if err := res.Validate(); err != nil {
		// An envelope the host model refuses (for example an error code
		// over 256 code points) becomes protocol_error.
		r.err = errors.Join(r.err, err)
		res = r.fail(nil)
	}
	return Report{Result: res, Methods: r.methods, Err: r.err}
}

type run struct {
	inv     *Invocation
	now     func() time.Time
	ch      *Channel
	port    *EffectPort
	methods []ipc.Method
	err     error
}

func (r *run) binding() *ipc.AttemptBinding { b := r.inv.Binding; return &b }

func (r *run) disposition() string {
	if r.port == nil {
		return DispositionNone
	}
	return r.port.Disposition()
}

func (r *run) result(state string, errCode *string) Result {
	return Result{ArtifactRefs: []string{}, Binding: r.binding(), EffectDisposition: r.disposition(),
		ErrorCode: errCode, ProtocolVersion: 1, State: state}
}

// fail maps an unexpected failure: protocol_error, or needs_reconciliation
// when an effect is unknown.
func (r *run) fail(err error) Result {
	if err != nil {
		r.err = errors.Join(r.err, err)
	}
	if r.disposition() == DispositionUnknown {
		return r.result(StateNeedsReconciliation, code(CodeProtocol))
	}
	return r.result(StateProtocolError, code(CodeProtocol))
}

// fromReply maps a reply that was not allowed (doc/protocol.md,
// “Host endings”).
func (r *run) fromReply(rep *ipc.Reply) Result {
	res := r.result("", nil)
	b := rep.Binding
	res.Binding = &b
	switch rep.State {
	case ipc.StateRefused:
		res.State, res.ErrorCode = StateRefused, code(CodeRefused)
	case ipc.StateCancelled:
		res.State = StateCancelled
	case ipc.StateWaitingApproval:
		res.State = StateWaitingApproval
	default:
		res.State, res.EffectDisposition = StateNeedsReconciliation, DispositionUnknown
	}
	return res
}

func (r *run) do(ctx context.Context, conn net.Conn) Result {
	inv := r.inv
	// Step 7: scope and deadline, without IPC.
	if inv.CapabilityID != inv.Binding.CapabilityID || !slices.Contains(inv.AdmittedCapabilities, inv.CapabilityID) ||
		inv.Binding.ManifestDigest != inv.ProviderManifestDigest {
		r.err = errors.New("capability or manifest digest outside the attempt's scope")
		return r.result(StateRefused, code(CodeScope))
	}
	if r.now().UnixMilli() >= inv.Deadline.UnixMilli() {
		r.err = errors.New("attempt deadline elapsed before start")
		return r.result(StateTimedOut, code(CodeDeadline))
	}
	ch, err := NewChannel(conn, ChannelConfig{Binding: inv.Binding, HostNonce: inv.HostNonce, Deadline: inv.Deadline,
		RPCTimeout: inv.RPCTimeout, MaxMessageBytes: inv.MaxMessageBytes, Now: r.now})
	if err != nil {
		return r.fail(err)
	}
	r.ch = ch
	r.port = NewEffectPort(ch, inv.Budget)

	// Step 8: bootstrap.
	pid := inv.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	rep, err := ch.Call(ctx, ipc.MethodBootstrap, ipc.BootstrapPayload{BootstrapID: inv.BootstrapID, LaunchDigest: inv.LaunchDigest, PID: pid})
	if err != nil {
		return r.fail(err)
	}
	if rep.State != ipc.StateAllowed {
		return r.fromReply(rep)
	}
	// Step 9: activation.
	if inv.Activate != nil {
		if err := inv.Activate(); err != nil {
			return r.fail(err)
		}
	}
	// Steps 11–12: normalization, request binding, organization,
	// requirements.
	args := inv.Arguments
	if args == nil {
		args = map[string]any{}
	}
	if inv.Normalize != nil {
		if args, err = inv.Normalize(args); err != nil {
			r.err = err
			return r.result(StateInvalidRequest, code(CodeInvalidRequest))
		}
	}
	d, err := ipc.RequestDigest(inv.CapabilityID, args)
	if err != nil {
		return r.fail(err)
	}
	if d != inv.Binding.RequestDigest {
		r.err = fmt.Errorf("normalized request digest %s, attempt has %s", d, inv.Binding.RequestDigest)
		return r.result(StateRefused, code(CodeRequestBinding))
	}
	if org, ok := args["organization_id"]; ok && org != inv.Binding.OrganizationID {
		r.err = errors.New("organization_id differs from the attempt's")
		return r.result(StateRefused, code(CodeOrganization))
	}
	if inv.Requirements != nil {
		if err := inv.Requirements(); err != nil {
			r.err = err
			return r.result(StateUnavailable, code(CodeRequirements))
		}
	}
	// Step 13: admit.
	if rep, err = ch.Call(ctx, ipc.MethodAdmit, ipc.AdmitPayload{Arguments: args}); err != nil {
		return r.fail(err)
	}
	if rep.State != ipc.StateAllowed {
		return r.fromReply(rep)
	}
	// Step 14: the capability.
	out := r.runProvider(ctx, args)
	// Step 15: a pending or unknown effect decides.
	if p := r.port.Pending(); p != nil {
		return r.fromReply(p)
	}
	if r.port.Unknown() {
		return r.result(StateNeedsReconciliation, nil)
	}
	// Step 16: capability failure.
	switch out.Status {
	case OutcomeSuccess:
	case OutcomeUnavailable:
		c := out.ErrorCode
		if c == "" {
			c = CodeCapabilityFailed
		}
		return r.result(StateUnavailable, code(c))
	case OutcomeCancelled:
		return r.result(StateCancelled, optCode(out.ErrorCode))
	default:
		c := out.ErrorCode
		if c == "" {
			c = CodeCapabilityFailed
		}
		return r.result(StateFailed, code(c))
	}
	// Step 17: publish.
	resp := out.Response
	if resp == nil {
		resp = map[string]any{}
	}
	if inv.ValidateResponse != nil {
		if err := inv.ValidateResponse(resp); err != nil {
			return r.fail(err)
		}
	}
	dd, err := canon.DigestOf(resp)
	if err != nil {
		return r.fail(err)
	}
	if rep, err = ch.Call(ctx, ipc.MethodPublish, ipc.PublishPayload{Data: resp, DataDigest: dd}); err != nil {
		return r.fail(err)
	}
	if rep.State != ipc.StateAllowed {
		return r.fromReply(rep)
	}
	data := rep.Data.(map[string]any)
	if data["data_digest"] != string(dd) {
		return r.fail(errors.New("publish reply data_digest differs"))
	}
	raw, ok := data["artifact_refs"].([]any)
	if !ok || len(raw) == 0 {
		return r.fail(errors.New("publish reply artifact_refs missing or empty"))
	}
	refs := make([]string, 0, len(raw))
	for _, x := range raw {
		s, ok := x.(string)
		if !ok || s == "" {
			return r.fail(errors.New("publish reply artifact_refs holds a non-string or empty ref"))
		}
		refs = append(refs, s)
	}
	res := r.result(StateSucceeded, nil)
	res.ArtifactRefs = refs // a ref over 256 code points fails Validate in Run
	return res
}

func optCode(s string) *string {
	if s == "" {
		return nil
	}
	return code(s)
}

func (r *run) runProvider(ctx context.Context, args map[string]any) (out Outcome) {
	p := r.inv.Provider
	if p == nil {
		p = Echo()
	}
	defer func() {
		if v := recover(); v != nil {
			r.err = errors.Join(r.err, fmt.Errorf("provider panicked: %v", v))
			out = Outcome{Status: OutcomeFailed, ErrorCode: "ZEO_CAP_UNEXPECTED"}
		}
	}()
	return p(ctx, args, r.port)
}
