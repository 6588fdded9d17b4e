package ipc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
)

// ProtocolVersion is the only protocol_version of the runtime host protocol.
const ProtocolVersion = protocol.Version

// MaxIdentifierRunes is the longest Identifier, counted in Unicode code
// points (see doc/protocol.md, “Identifiers”). The shortest is one code
// point.
const MaxIdentifierRunes = protocol.MaxIdentifierRunes

// Method names a request the host sends (doc/protocol.md, “Methods”).
type Method string

// The four protocol methods, in the order a full invocation sends them.
const (
	MethodBootstrap Method = "bootstrap"      // sequence 1, exactly once
	MethodAdmit     Method = "invoke.admit"   // once, after an allowed bootstrap
	MethodEffect    Method = "effect.request" // 0..n times
	MethodPublish   Method = "result.publish" // at most once, last
)

// Valid reports whether m is one of the four protocol methods.
func (m Method) Valid() bool {
	switch m {
	case MethodBootstrap, MethodAdmit, MethodEffect, MethodPublish:
		return true
	}
	return false
}

// ReplyState is the state a RuntimeReply carries (doc/protocol.md,
// “Reply envelope”).
type ReplyState string

// The reply states. Only StateAllowed lets the host go on; the three
// "not consumed" states (refused, cancelled, waiting_approval) tell the host
// that nothing was done on its behalf, and needs_reconciliation that the
// outcome is uncertain.
const (
	StateAllowed             ReplyState = "allowed"
	StateRefused             ReplyState = "refused"
	StateCancelled           ReplyState = "cancelled"
	StateWaitingApproval     ReplyState = "waiting_approval"
	StateNeedsReconciliation ReplyState = "needs_reconciliation"
)

// Valid reports whether s is one of the five reply states.
func (s ReplyState) Valid() bool {
	switch s {
	case StateAllowed, StateRefused, StateCancelled, StateWaitingApproval, StateNeedsReconciliation:
		return true
	}
	return false
}

// NotConsumed reports whether s tells the host that the request was not
// consumed: refused, cancelled or waiting_approval (doc/protocol.md,
// “Reply envelope”).
func (s ReplyState) NotConsumed() bool {
	return s == StateRefused || s == StateCancelled || s == StateWaitingApproval
}

// Request is the envelope the host sends (doc/protocol.md,
// “Request envelope”). The host writes it as canonical JSON, so its keys
// appear in the order of the fields below. Payload is the still-undecoded
// payload object; use the Decode* methods of Request to read it as its
// method's type.
type Request struct {
	Binding         AttemptBinding `json:"binding"`
	HostNonce       string         `json:"host_nonce"`
	Method          Method         `json:"method"`
	Payload         canon.Value    `json:"payload"`
	ProtocolVersion int64          `json:"protocol_version"`
	Sequence        int64          `json:"sequence"`

	// payloadRaw is the payload's canonical bytes as a slice of the
	// request body, set by DecodeRequest; nil for a Request built by hand.
	payloadRaw []byte
	// lazy marks a Request decoded by the fast path: Payload is not built
	// yet, and body is the request body it came from.
	lazy bool
	body []byte
	max  int
	// payloadSum, when set, delivers the digest of payloadRaw, hashed on
	// another goroutine while this one hashes the body.
	payloadSum     chan canon.Digest
	payloadSumDone canon.Digest
}

// parallelHashBytes is the payload size from which a Session hashes an
// effect's payload and the whole body at the same time, on two cores: two
// SHA-256 passes over a large payload are most of an exchange, and the
// host is idle waiting for the reply. Below it a goroutine costs more than
// it saves.
const parallelHashBytes = 16 << 10

// Reply is the RuntimeReply envelope (doc/protocol.md, “Reply envelope”).
// Data is any value that marshals to a JSON object; nil is written as {}. On
// input (DecodeReply) Data is a map[string]any, never nil.
type Reply struct {
	ProtocolVersion int64          `json:"protocol_version"`
	Sequence        int64          `json:"sequence"`
	HostNonce       string         `json:"host_nonce"`
	Binding         AttemptBinding `json:"binding"`
	RequestDigest   canon.Digest   `json:"request_digest"`
	State           ReplyState     `json:"state"`
	Data            any            `json:"data" canon:"optional"`
}

// BootstrapPayload is the payload of bootstrap (doc/protocol.md, “Methods”):
// the child's pid as the host sees it (os.getpid()), the bootstrap id from
// the LaunchContext and the host's digest of the LaunchContext.
type BootstrapPayload struct {
	BootstrapID  string       `json:"bootstrap_id"`
	LaunchDigest canon.Digest `json:"launch_digest"`
	PID          int          `json:"pid"`
}

// AdmitPayload is the payload of invoke.admit: the normalized arguments.
// Their digest together with the capability id must equal the binding's
// request_digest (see RequestDigest).
type AdmitPayload struct {
	Arguments map[string]any `json:"arguments"`
}

// EffectRequest is the payload of effect.request (doc/protocol.md,
// “Methods”), strict and without protocol_version. Its digest
// (EffectRequest.Digest) is the effect's fingerprint, echoed as
// effect_request_digest in an allowed reply.
type EffectRequest struct {
	LogicalEffectID   string         `json:"logical_effect_id"`
	ConnectionRef     string         `json:"connection_ref"`
	ConnectorRevision canon.Digest   `json:"connector_revision"`
	Operation         string         `json:"operation"`
	Arguments         map[string]any `json:"arguments"`
}

// PublishPayload is the payload of result.publish: the capability's
// response object and its digest.
type PublishPayload struct {
	Data       map[string]any `json:"data"`
	DataDigest canon.Digest   `json:"data_digest"`
}

// EffectReceipt is the data of an allowed effect.request reply: the five keys
// the host requires (doc/protocol.md, “Methods”) and, when the dispatcher
// returned one, the effect's result object under "result" (doc/design.md,
// “Effect results”). The host hands the whole object to the provider.
type EffectReceipt struct {
	LogicalEffectID     string         `json:"logical_effect_id"`
	EffectRequestDigest canon.Digest   `json:"effect_request_digest"`
	ReceiptID           string         `json:"receipt_id"`
	AuthorizationID     string         `json:"authorization_id"`
	EffectDisposition   string         `json:"effect_disposition"`
	Result              map[string]any `json:"result,omitzero"`
}

// PublishReceipt is the data of an allowed result.publish reply: the echoed
// data digest and the non-empty list of stored artifact references.
type PublishReceipt struct {
	DataDigest   canon.Digest `json:"data_digest"`
	ArtifactRefs []string     `json:"artifact_refs"`
}

// ValidIdentifier reports whether s is an Identifier: valid UTF-8 of
// 1..MaxIdentifierRunes code points (code points, not bytes or UTF-16
// units).
func ValidIdentifier(s string) bool { return protocol.ValidIdentifier(s) }

// ValidNonce reports whether s has the form of a host nonce: 64 lowercase
// hex digits (32 random bytes; doc/protocol.md, “Descriptors”).
func ValidNonce(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Validate checks every field of b: the seven Identifiers and
// capability_id of 1..MaxIdentifierRunes code points, fencing_generation
// ≥ 1, and two well-formed digests (see doc/protocol.md, “Attempt binding”).
// The error wraps ErrPayload and names every field that is wrong, joined
// with errors.Join.
func (b AttemptBinding) Validate() error {
	var errs []error
	for _, f := range [...]struct{ name, v string }{
		{"organization_id", b.OrganizationID}, {"project_id", b.ProjectID}, {"seat_id", b.SeatID},
		{"runtime_binding_id", b.RuntimeBindingID}, {"packet_id", b.PacketID},
		{"operation_id", b.OperationID}, {"attempt_id", b.AttemptID}, {"capability_id", b.CapabilityID},
	} {
		if err := protocol.CheckIdentifier(f.name, f.v); err != nil {
			errs = append(errs, err)
		}
	}
	if b.FencingGeneration < 1 {
		errs = append(errs, fmt.Errorf("fencing_generation must be ≥ 1, got %d", b.FencingGeneration))
	}
	if err := b.RequestDigest.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("request_digest: %w", err))
	}
	if err := b.ManifestDigest.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("manifest_digest: %w", err))
	}
	if errs == nil {
		return nil
	}
	return fmt.Errorf("%w: binding: %w", ErrPayload, errors.Join(errs...))
}

// Diff describes how got differs from b, the expected binding: each
// differing field as "name got G, want W", joined by "; ", or "" when the
// two are equal field by field.
func (b AttemptBinding) Diff(got AttemptBinding) string {
	var d []string
	add := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s got %v, want %v", name, g, w))
		}
	}
	add("organization_id", got.OrganizationID, b.OrganizationID)
	add("project_id", got.ProjectID, b.ProjectID)
	add("seat_id", got.SeatID, b.SeatID)
	add("runtime_binding_id", got.RuntimeBindingID, b.RuntimeBindingID)
	add("packet_id", got.PacketID, b.PacketID)
	add("operation_id", got.OperationID, b.OperationID)
	add("attempt_id", got.AttemptID, b.AttemptID)
	add("fencing_generation", got.FencingGeneration, b.FencingGeneration)
	add("capability_id", got.CapabilityID, b.CapabilityID)
	add("request_digest", got.RequestDigest, b.RequestDigest)
	add("manifest_digest", got.ManifestDigest, b.ManifestDigest)
	return strings.Join(d, "; ")
}

// Validate checks the EffectRequest rules of doc/protocol.md, “Methods”:
// three Identifiers, a well-formed connector_revision digest and a non-nil
// arguments object. The error wraps ErrPayload.
func (e EffectRequest) Validate() error {
	for _, f := range [...]struct{ name, v string }{
		{"logical_effect_id", e.LogicalEffectID}, {"connection_ref", e.ConnectionRef}, {"operation", e.Operation},
	} {
		if err := protocol.CheckIdentifier(f.name, f.v); err != nil {
			return fmt.Errorf("%w: effect.%w", ErrPayload, err)
		}
	}
	if err := e.ConnectorRevision.Validate(); err != nil {
		return fmt.Errorf("%w: effect.connector_revision: %w", ErrPayload, err)
	}
	if e.Arguments == nil {
		return fmt.Errorf("%w: effect.arguments must be an object", ErrPayload)
	}
	return nil
}

// Digest returns the effect's fingerprint: the digest of its canonical
// JSON, which is what effect_request_digest must echo.
func (e EffectRequest) Digest() (canon.Digest, error) {
	b, err := e.AppendCanonical(nil)
	if err != nil {
		return "", err
	}
	return canon.Sum(b), nil
}

// RequestDigest returns the request digest (doc/protocol.md,
// “What is hashed”): the digest of {"capability_id": capabilityID,
// "arguments": arguments}.
func RequestDigest(capabilityID string, arguments map[string]any) (canon.Digest, error) {
	if arguments == nil {
		arguments = map[string]any{}
	}
	return canon.DigestOf(struct {
		CapabilityID string         `json:"capability_id"`
		Arguments    map[string]any `json:"arguments"`
	}{capabilityID, arguments})
}

// DecodeRequest decodes a request frame body as a Session does before
// looking at sequence, nonce or binding: strict JSON of at most max bytes
// (max ≤ 0 means MaxMessageBytes), canonical (re-canonicalizing gives the
// same bytes; ErrNotCanonical), the strict envelope shape with every
// member present and none unknown (ErrMalformed), protocol_version 1
// (ErrProtocolVersion), a known method (ErrMethod), sequence ≥ 1
// (ErrSequence), a 64-hex nonce (ErrNonce), a valid binding and an object
// payload (ErrPayload). It returns the request and the digest of body,
// which is the request_digest a reply must carry. Errors are
// *ViolationError values. DecodeRequest never panics, whatever the input.
func DecodeRequest(body []byte, max int) (*Request, canon.Digest, error) {
	return decodeRequestTree(body, max)
}

// decodeRequest is DecodeRequest for a Session, which knows the binding
// every request must carry: a canonical body with that binding is decoded
// without building its Value tree, and Payload stays unset until a
// payload decoder needs it (see materialize). Anything else goes through
// decodeRequestTree, which gives the same result or names the violation.
func decodeRequest(body []byte, max int, known *knownBinding) (*Request, canon.Digest, error) {
	if (canon.Options{MaxBytes: effectiveMax(max)}).CheckCanonical(body) == nil {
		req := &Request{body: body, max: max}
		if decodeEnvelopeFast(body, req, known) && req.check() == nil {
			if req.Method == MethodEffect && len(req.payloadRaw) >= parallelHashBytes {
				ch := make(chan canon.Digest, 1)
				go func(b []byte) { ch <- canon.Sum(b) }(req.payloadRaw)
				req.payloadSum = ch
			}
			return req, canon.Sum(body), nil
		}
	}
	return decodeRequestTree(body, max)
}

// payloadDigest returns the digest of payloadRaw, waiting for the
// goroutine that hashes it when there is one.
func (r *Request) payloadDigest() canon.Digest {
	if r.payloadSum != nil {
		r.payloadSumDone, r.payloadSum = <-r.payloadSum, nil
	}
	if r.payloadSumDone != "" {
		return r.payloadSumDone
	}
	return canon.Sum(r.payloadRaw)
}

// materialize builds the Payload of a lazily decoded Request from its
// body, so that the tree-based payload decoders can run (and name the
// exact violation).
func (r *Request) materialize() error {
	if !r.lazy {
		return nil
	}
	full, _, err := decodeRequestTree(r.body, r.max)
	if err != nil {
		return err // unreachable: the fast path accepted the body
	}
	r.Payload, r.payloadRaw, r.lazy = full.Payload, full.payloadRaw, false
	return nil
}

func decodeRequestTree(body []byte, max int) (*Request, canon.Digest, error) {
	v, err := canon.Options{MaxBytes: effectiveMax(max)}.Parse(body)
	if err != nil {
		return nil, "", &ViolationError{Err: ErrMalformed, Detail: "request body is not strict JSON", Cause: err}
	}
	if v.Kind != canon.Object {
		return nil, "", &ViolationError{Err: ErrMalformed, Detail: "request body is a JSON " + v.Kind.String() + ", not an object"}
	}
	if err := (canon.Options{MaxBytes: effectiveMax(max)}).CheckCanonical(body); err != nil {
		if !errors.Is(err, canon.ErrNotCanonical) {
			return nil, "", &ViolationError{Err: ErrMalformed, Detail: "request body cannot be canonicalized", Cause: err}
		}
		return nil, "", &ViolationError{Err: ErrNotCanonical, Detail: "request body is not in canonical form", Cause: err}
	}
	req := new(Request)
	if err := decodeRequestValue(&v, req); err != nil {
		return nil, "", &ViolationError{Err: ErrMalformed, Detail: "request envelope", Cause: err}
	}
	if err := req.check(); err != nil {
		return nil, "", err
	}
	req.payloadRaw = payloadSlice(body, req)
	return req, canon.Sum(body), nil
}

// check applies the per-request shape rules that need no session state.
func (r *Request) check() error {
	verr := func(rule error, format string, args ...any) error {
		return &ViolationError{Err: rule, Sequence: r.Sequence, Method: r.Method, Detail: fmt.Sprintf(format, args...)}
	}
	if r.ProtocolVersion != ProtocolVersion {
		return verr(ErrProtocolVersion, "protocol_version is %d, want %d", r.ProtocolVersion, ProtocolVersion)
	}
	if !r.Method.Valid() {
		m := r.Method
		r.Method = ""
		return verr(ErrMethod, "method %q is not bootstrap, invoke.admit, effect.request or result.publish", truncate(string(m)))
	}
	if r.Sequence < 1 {
		return verr(ErrSequence, "sequence %d is below 1", r.Sequence)
	}
	if !ValidNonce(r.HostNonce) {
		return verr(ErrNonce, "host_nonce %q is not 64 lowercase hex digits", truncate(r.HostNonce))
	}
	if err := r.Binding.Validate(); err != nil {
		return &ViolationError{Err: ErrBinding, Sequence: r.Sequence, Method: r.Method, Detail: "binding is not a valid AttemptBinding", Cause: err}
	}
	if !r.lazy && r.Payload.Kind != canon.Object {
		return verr(ErrPayload, "payload is a JSON %s, not an object", r.Payload.Kind)
	}
	return nil
}

// payloadSlice returns the payload's bytes inside a canonical body. The
// envelope's members are in canonical order and the last two are the
// integers protocol_version and sequence, so the payload runs from its
// offset to the fixed tail. Any doubt returns nil (the caller then
// re-encodes the payload).
func payloadSlice(body []byte, req *Request) []byte {
	tail := `,"protocol_version":` + strconv.FormatInt(req.ProtocolVersion, 10) + `,"sequence":` + strconv.FormatInt(req.Sequence, 10) + `}`
	start, end := req.Payload.Offset, len(body)-len(tail)
	if start <= 0 || end <= start || !bytes.HasSuffix(body, []byte(tail)) || body[start] != '{' || body[end-1] != '}' {
		return nil
	}
	return body[start:end:end]
}

// canonicalPayload returns the payload's canonical bytes.
func (r *Request) canonicalPayload() ([]byte, error) {
	if r.payloadRaw != nil {
		return r.payloadRaw, nil
	}
	return r.Payload.Canonical()
}

func truncate(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (r *Request) payloadErr(err error) error {
	return &ViolationError{Err: ErrPayload, Sequence: r.Sequence, Method: r.Method, Detail: "payload of " + string(r.Method), Cause: err}
}

var (
	bootstrapNames = []string{"bootstrap_id", "launch_digest", "pid"}
	admitNames     = []string{"arguments"}
	effectNames    = []string{"logical_effect_id", "connection_ref", "connector_revision", "operation", "arguments"}
	publishNames   = []string{"data", "data_digest"}
)

// DecodeBootstrap decodes the payload as a strict BootstrapPayload.
func (r *Request) DecodeBootstrap() (BootstrapPayload, error) {
	if r.lazy {
		if p, ok := bootstrapFast(r.payloadRaw); ok && ValidIdentifier(p.BootstrapID) && p.LaunchDigest.Validate() == nil {
			return p, nil
		}
		if err := r.materialize(); err != nil {
			return BootstrapPayload{}, err
		}
	}
	var p BootstrapPayload
	var pid int64
	f := fieldSet{ptr: "/payload"}
	if err := f.walk(&r.Payload, bootstrapNames, func(i int, m *canon.Value) {
		switch i {
		case 0:
			f.str(m, bootstrapNames[i], &p.BootstrapID)
		case 1:
			f.str(m, bootstrapNames[i], (*string)(&p.LaunchDigest))
		case 2:
			f.integer(m, bootstrapNames[i], &pid)
		}
	}); err != nil {
		return p, r.payloadErr(err)
	}
	// A pid the platform's int cannot hold names no process of ours.
	if p.PID = int(pid); int64(p.PID) != pid {
		return p, r.payloadErr(fmt.Errorf("pid %d does not fit an int", pid))
	}
	if err := protocol.CheckIdentifier("bootstrap_id", p.BootstrapID); err != nil {
		return p, r.payloadErr(err)
	}
	if err := p.LaunchDigest.Validate(); err != nil {
		return p, r.payloadErr(fmt.Errorf("launch_digest: %w", err))
	}
	return p, nil
}

// DecodeAdmit decodes the payload as a strict AdmitPayload.
func (r *Request) DecodeAdmit() (AdmitPayload, error) {
	if r.lazy {
		if p, ok := admitFast(r.payloadRaw); ok {
			return p, nil
		}
		if err := r.materialize(); err != nil {
			return AdmitPayload{}, err
		}
	}
	var p AdmitPayload
	f := fieldSet{ptr: "/payload"}
	if err := f.walk(&r.Payload, admitNames, func(i int, m *canon.Value) {
		f.object(m, admitNames[i], &p.Arguments)
	}); err != nil {
		return p, r.payloadErr(err)
	}
	return p, nil
}

// DecodeEffect decodes the payload as a strict, valid EffectRequest and
// returns it with its digest, computed from the payload's canonical bytes.
func (r *Request) DecodeEffect() (EffectRequest, canon.Digest, error) {
	if r.lazy {
		// The payload's canonical bytes are its slice of the body.
		if p, ok := effectFast(r.payloadRaw); ok && p.Validate() == nil {
			return p, r.payloadDigest(), nil
		}
		if err := r.materialize(); err != nil {
			return EffectRequest{}, "", err
		}
	}
	var p EffectRequest
	f := fieldSet{ptr: "/payload"}
	if err := f.walk(&r.Payload, effectNames, func(i int, m *canon.Value) {
		k := effectNames[i]
		switch i {
		case 0:
			f.str(m, k, &p.LogicalEffectID)
		case 1:
			f.str(m, k, &p.ConnectionRef)
		case 2:
			f.str(m, k, (*string)(&p.ConnectorRevision))
		case 3:
			f.str(m, k, &p.Operation)
		case 4:
			f.object(m, k, &p.Arguments)
		}
	}); err != nil {
		return p, "", r.payloadErr(err)
	}
	if err := p.Validate(); err != nil {
		return p, "", r.payloadErr(err)
	}
	c, err := r.canonicalPayload()
	if err != nil {
		return p, "", r.payloadErr(err)
	}
	return p, canon.Sum(c), nil
}

// DecodePublish decodes the payload as a strict PublishPayload and returns
// it with the digest of its data, computed from the data's canonical
// bytes. It does not compare that digest with DataDigest.
func (r *Request) DecodePublish() (PublishPayload, canon.Digest, error) {
	if r.lazy {
		if p, data, ok := publishFast(r.payloadRaw); ok && p.DataDigest.Validate() == nil {
			return p, canon.Sum(data), nil
		}
		if err := r.materialize(); err != nil {
			return PublishPayload{}, "", err
		}
	}
	var p PublishPayload
	var data *canon.Value
	f := fieldSet{ptr: "/payload"}
	if err := f.walk(&r.Payload, publishNames, func(i int, m *canon.Value) {
		switch i {
		case 0:
			f.object(m, publishNames[i], &p.Data)
			data = m
		case 1:
			f.str(m, publishNames[i], (*string)(&p.DataDigest))
		}
	}); err != nil {
		return p, "", r.payloadErr(err)
	}
	if err := p.DataDigest.Validate(); err != nil {
		return p, "", r.payloadErr(fmt.Errorf("data_digest: %w", err))
	}
	// In canonical bytes the payload is {"data":DATA,"data_digest":"…"}.
	var c []byte
	if raw := r.payloadRaw; raw != nil {
		head, tail := len(`{"data":`), len(`,"data_digest":""}`)+len(p.DataDigest)
		if len(raw) > head+tail {
			c = raw[head : len(raw)-tail]
		}
	}
	if c == nil {
		var err error
		if c, err = data.Canonical(); err != nil {
			return p, "", r.payloadErr(err)
		}
	}
	return p, canon.Sum(c), nil
}

// DecodeReply decodes a RuntimeReply body as the host does (doc/protocol.md,
// “Frames” and “Reply envelope”): strict JSON of at most max bytes (max ≤ 0
// means MaxMessageBytes), not necessarily canonical; the strict reply shape
// with no unknown member (ErrMalformed); protocol_version 1
// (ErrProtocolVersion); sequence ≥ 1; host_nonce an Identifier; a valid
// binding; request_digest a digest; state one of the five states; data an
// object, {} when absent. It does not correlate the reply with a request:
// that is the caller's job.
func DecodeReply(body []byte, max int) (*Reply, error) {
	var rep Reply
	v, err := canon.Options{MaxBytes: effectiveMax(max)}.Parse(body)
	if err != nil {
		return nil, &ViolationError{Err: ErrMalformed, Detail: "reply is not strict JSON", Cause: err}
	}
	// "data" may be absent (then {}), but null or a non-object is refused,
	// as the host's strict model does.
	if dv, ok := v.Get("data"); ok && dv.Kind != canon.Object {
		return nil, &ViolationError{Err: ErrMalformed, Detail: "reply data is a JSON " + dv.Kind.String() + ", not an object"}
	}
	if err := decodeReplyValue(&v, &rep); err != nil {
		return nil, &ViolationError{Err: ErrMalformed, Detail: "reply is not a strict RuntimeReply", Cause: err}
	}
	fail := func(rule error, format string, args ...any) (*Reply, error) {
		return nil, &ViolationError{Err: rule, Sequence: rep.Sequence, Detail: fmt.Sprintf(format, args...)}
	}
	if rep.ProtocolVersion != ProtocolVersion {
		return fail(ErrProtocolVersion, "reply protocol_version is %d", rep.ProtocolVersion)
	}
	if rep.Sequence < 1 {
		return fail(ErrSequence, "reply sequence %d is below 1", rep.Sequence)
	}
	if !ValidIdentifier(rep.HostNonce) {
		return fail(ErrNonce, "reply host_nonce is not an Identifier")
	}
	if err := rep.Binding.Validate(); err != nil {
		return nil, &ViolationError{Err: ErrBinding, Sequence: rep.Sequence, Detail: "reply binding is not a valid AttemptBinding", Cause: err}
	}
	if err := rep.RequestDigest.Validate(); err != nil {
		return nil, &ViolationError{Err: ErrDigest, Sequence: rep.Sequence, Detail: "reply request_digest", Cause: err}
	}
	if !rep.State.Valid() {
		return fail(ErrMalformed, "reply state %q is not a reply state", truncate(string(rep.State)))
	}
	switch d := rep.Data.(type) {
	case nil:
		rep.Data = map[string]any{}
	case map[string]any:
	default:
		return fail(ErrMalformed, "reply data is a %T, not an object", d)
	}
	return &rep, nil
}
