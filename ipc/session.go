package ipc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/protocol"
	"github.com/zeoruntime/runtimeipc/internal/wire"
)

// Session is the Runtime end of one attempt's IPC connection
// (doc/protocol.md, “Frames”, “Session order” and “Runtime duties”). It
// serves one attempt: Serve may be called once. Summary may be called from
// any goroutine at any time; the other methods are not for concurrent use.
type Session struct {
	id     string // random, fixed at NewSession; see ID
	conn   net.Conn
	cfg    SessionConfig // normalized copy
	cfgErr error
	// binding is the canonical JSON of cfg.Binding, written in every reply.
	binding []byte
	known   knownBinding // binding and cfg.Binding, for the fast decoder
	log     *slog.Logger
	used    atomic.Bool

	mu      sync.Mutex // guards summary
	summary Summary
}

// NewSession returns a Session that will serve conn, normally the Runtime's
// end of the socketpair whose other end is the child's FD 4. Unless
// credentials are off, it turns SO_PASSCRED on at once (see EnablePassCred:
// the launcher should already have done so before starting the child). It
// never fails: an invalid config is recorded and returned by Serve before
// conn is read (as exec.Command records a LookPath failure). Use
// SessionConfig.Validate to check first.
func NewSession(conn net.Conn, cfg SessionConfig) *Session {
	s := &Session{id: newSessionID(), conn: conn, cfg: cfg}
	if conn == nil {
		s.cfgErr = fmt.Errorf("%w: nil connection", ErrConfig)
	} else if s.cfgErr = cfg.Validate(); s.cfgErr == nil {
		if s.binding, s.cfgErr = canon.Marshal(cfg.Binding); s.cfgErr != nil {
			s.cfgErr = fmt.Errorf("%w: Binding: %w", ErrConfig, s.cfgErr)
		} else {
			s.known = knownBinding{raw: s.binding, b: cfg.Binding}
			s.cfgErr = prepareConn(conn, cfg.Credentials)
		}
	}
	if s.cfg.RPCTimeout == 0 {
		s.cfg.RPCTimeout = DefaultRPCTimeout
	}
	if s.cfg.MaxMessageBytes == 0 {
		s.cfg.MaxMessageBytes = MaxMessageBytes
	}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.summary.Methods = map[Method]int{}
	s.summary.States = map[ReplyState]int{}
	return s
}

// ID returns the Session's identity: 32 lowercase hex digits (128 random
// bits) chosen by NewSession, distinct for every Session. It names the IPC
// session a bootstrap was redeemed on (ledger.Redemption.SessionID), so
// that a retried redemption can be told from a second claimant. It is
// safe to call from any goroutine.
func (s *Session) ID() string { return s.id }

// newSessionID returns 128 bits from crypto/rand in hex.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24; it crashes the program instead
	return hex.EncodeToString(b[:])
}

// Summary returns a copy of what the Session has seen so far.
func (s *Session) Summary() Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.summary
	out.Methods = make(map[Method]int, len(s.summary.Methods))
	for k, v := range s.summary.Methods {
		out.Methods[k] = v
	}
	out.States = make(map[ReplyState]int, len(s.summary.States))
	for k, v := range s.summary.States {
		out.States[k] = v
	}
	out.Exchanges = append([]Exchange(nil), s.summary.Exchanges...)
	return out
}

// errCleanEOF ends Serve without error.
var errCleanEOF = errors.New("clean EOF")

// sessionState is what Serve tracks between exchanges.
type sessionState struct {
	next         int64 // the sequence the next request must carry
	bootstrapped bool  // a bootstrap request was answered
	nonce        string
	admitted     bool // an invoke.admit was answered allowed
	admitSeen    bool
	published    bool
	ended        bool       // a non-allowed reply was sent: the host is done
	endedBy      ReplyState // the state that ended it
	data, out    []byte     // reply data and reply body being built
	after        afterReply // what the Handler deferred past the current reply (AfterReply)
}

// Serve answers the host's requests until the host closes its end at a
// frame boundary, in which case it returns nil (Summary tells what
// happened, possibly nothing: a host may end without any IPC). Otherwise it
// returns a *ViolationError naming the broken rule (errors.Is with the
// package's sentinels; ErrStopped when ctx was cancelled, wrapping
// context.Cause), or ErrConfig (an invalid config, a nil Handler) or
// ErrPoisoned (a second call) before reading anything.
//
// Time bounds: each exchange, from the arrival of the first byte of a
// request to the last byte of its reply, is bounded by
// min(first byte + RPCTimeout, Deadline), enforced with connection
// deadlines, so a request dribbled too slowly fails with ErrTimeout. The
// wait for the next request is bounded only by Deadline (ErrDeadline) and
// ctx, because the host may run the capability for a long time between
// frames.
//
// Serve closes conn before it returns, whatever the outcome, ErrConfig
// included: a poisoned or misconfigured session reads nothing further, and
// the host sees EOF at once instead of waiting for its own timeout.
func (s *Session) Serve(ctx context.Context, h Handler) error {
	if !s.used.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: Serve may be called once per Session", ErrPoisoned)
	}
	if s.conn != nil {
		defer s.conn.Close()
	}
	if s.cfgErr != nil {
		return s.cfgErr
	}
	if h == nil {
		return fmt.Errorf("%w: nil Handler", ErrConfig)
	}
	src, err := newSource(s.conn, s.cfg.Credentials, s.cfg.ChildPID)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(src, 4096)
	stop := context.AfterFunc(ctx, func() {
		// Unblock any read or write at once; the loop turns the resulting
		// timeout into ErrStopped by looking at ctx.
		_ = s.conn.SetDeadline(time.Unix(1, 0))
	})
	defer stop()
	st := &sessionState{next: 1}
	// The Handler's contexts carry st.after, for AfterReply.
	ctx = context.WithValue(ctx, afterReplyKey{}, &st.after)
	for {
		err := s.exchange(ctx, h, br, st)
		if err == nil {
			continue
		}
		if errors.Is(err, errCleanEOF) {
			s.log.Debug("ipc: host closed the connection", "frames", s.Summary().Frames)
			return nil
		}
		s.log.Warn("ipc: session poisoned", "err", err)
		return err
	}
}

func (s *Session) stopped(ctx context.Context, seq int64, m Method) error {
	return &ViolationError{Err: ErrStopped, Sequence: seq, Method: m, Cause: context.Cause(ctx)}
}

// readErr maps an error met while reading a request to its rule.
func (s *Session) readErr(ctx context.Context, err error, idle bool) error {
	switch {
	case ctx.Err() != nil:
		return s.stopped(ctx, 0, "")
	case errors.Is(err, ErrPeerCredentials):
		return &ViolationError{Err: ErrPeerCredentials, Cause: err}
	case errors.Is(err, ErrFrameTooLarge):
		return &ViolationError{Err: ErrFrameTooLarge, Cause: err}
	case errors.Is(err, ErrEmptyFrame):
		return &ViolationError{Err: ErrEmptyFrame, Cause: err}
	case errors.Is(err, io.ErrUnexpectedEOF), !idle && errors.Is(err, io.EOF):
		return &ViolationError{Err: ErrTruncated, Cause: err}
	case errors.Is(err, os.ErrDeadlineExceeded) && idle:
		return &ViolationError{Err: ErrDeadline, Detail: "no request before the attempt deadline", Cause: err}
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &ViolationError{Err: ErrTimeout, Detail: "request not complete within the exchange bound", Cause: err}
	}
	return &ViolationError{Err: ErrIO, Cause: err}
}

// exchange waits for one request, decides it and answers it.
func (s *Session) exchange(ctx context.Context, h Handler, br *bufio.Reader, st *sessionState) error {
	// Idle wait: bounded by the attempt deadline and ctx only.
	if err := s.conn.SetReadDeadline(s.cfg.Deadline); err != nil {
		// Some conns (net.Pipe) refuse deadlines once the peer has
		// closed; a read then reports at once whether that was at a frame
		// boundary.
		if _, perr := br.Peek(1); errors.Is(perr, io.EOF) && br.Buffered() == 0 {
			return errCleanEOF
		}
		return &ViolationError{Err: ErrIO, Cause: err}
	}
	if ctx.Err() != nil {
		return s.stopped(ctx, 0, "")
	}
	if _, err := br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) && br.Buffered() == 0 && ctx.Err() == nil {
			return errCleanEOF
		}
		return s.readErr(ctx, err, true)
	}
	start := time.Now()
	dl := start.Add(s.cfg.RPCTimeout)
	if !s.cfg.Deadline.IsZero() {
		if !start.Before(s.cfg.Deadline) {
			return &ViolationError{Err: ErrDeadline, Detail: "request arrived at or after the attempt deadline"}
		}
		if s.cfg.Deadline.Before(dl) {
			dl = s.cfg.Deadline
		}
	}
	if err := s.conn.SetDeadline(dl); err != nil {
		return &ViolationError{Err: ErrIO, Cause: err}
	}
	if ctx.Err() != nil {
		return s.stopped(ctx, 0, "")
	}
	body, err := ReadFrame(br, s.cfg.MaxMessageBytes)
	if err != nil {
		return s.readErr(ctx, err, false)
	}
	s.mu.Lock()
	s.summary.Frames++
	s.mu.Unlock()

	req, digest, err := decodeRequest(body, s.cfg.MaxMessageBytes, &s.known)
	if err != nil {
		return err
	}
	if err := s.checkSession(req, st); err != nil {
		return err
	}
	call := Call{Sequence: req.Sequence, Method: req.Method, RequestDigest: digest, HostNonce: req.HostNonce, Binding: req.Binding, SessionID: s.id}

	hctx, cancel := context.WithDeadline(ctx, dl)
	defer cancel()
	// What the Handler defers with AfterReply runs when this exchange
	// returns: after the reply is written, or on any way out without one.
	st.after.begin()
	defer st.after.run()
	state, data, herr, err := s.decide(hctx, h, req, call, st.data[:0])
	if err != nil {
		return err // a payload rule broke: no reply, no handler call
	}
	st.data = data
	// The reply is built after room for its frame header, so that it goes
	// out in one write.
	header := append(st.out[:0], make([]byte, wire.HeaderBytes)...)
	frame, err := appendReply(header, s.binding, req.Sequence, req.HostNonce, digest, state, data)
	if err == nil && len(frame)-wire.HeaderBytes > s.cfg.MaxMessageBytes {
		err = &FrameSizeError{Length: uint64(len(frame) - wire.HeaderBytes), Max: s.cfg.MaxMessageBytes, Err: ErrFrameTooLarge}
	}
	if err != nil {
		// The decision cannot be sent; fall back to an empty
		// needs_reconciliation, which always fits and never claims the
		// request was not consumed.
		herr = errors.Join(herr, fmt.Errorf("reply for state %s cannot be sent: %w", state, err))
		state = StateNeedsReconciliation
		frame, err = appendReply(header, s.binding, req.Sequence, req.HostNonce, digest, state, []byte("{}"))
		if err != nil {
			return &ViolationError{Err: ErrHandler, Sequence: req.Sequence, Method: req.Method, Cause: errors.Join(herr, err)}
		}
	}
	st.out = frame
	reply := frame[wire.HeaderBytes:]
	if ctx.Err() != nil {
		return s.stopped(ctx, req.Sequence, req.Method)
	}
	if err := wire.WriteFramed(s.conn, frame); err != nil { // its size was checked above
		rule := ErrIO
		switch {
		case ctx.Err() != nil:
			return s.stopped(ctx, req.Sequence, req.Method)
		case errors.Is(err, os.ErrDeadlineExceeded):
			rule = ErrTimeout
		}
		return &ViolationError{Err: rule, Sequence: req.Sequence, Method: req.Method,
			Detail: fmt.Sprintf("the %s reply was decided but could not be sent", state), Cause: errors.Join(err, herr)}
	}
	s.record(st, req, digest, state, len(body), len(reply))
	if s.log.Enabled(ctx, slog.LevelDebug) { // spares boxing the attributes on every exchange
		s.log.Debug("ipc: exchange", "sequence", req.Sequence, "method", req.Method, "state", state,
			"request_bytes", len(body), "reply_bytes", len(reply), "elapsed", time.Since(start))
	}
	if herr != nil {
		return &ViolationError{Err: ErrHandler, Sequence: req.Sequence, Method: req.Method,
			Detail: "answered needs_reconciliation", Cause: herr}
	}
	return nil
}

// checkSession applies the rules that depend on earlier requests.
func (s *Session) checkSession(req *Request, st *sessionState) error {
	verr := func(rule error, format string, args ...any) error {
		return &ViolationError{Err: rule, Sequence: req.Sequence, Method: req.Method, Detail: fmt.Sprintf(format, args...)}
	}
	if req.Sequence != st.next {
		return verr(ErrSequence, "sequence is %d, want %d", req.Sequence, st.next)
	}
	if req.Binding != s.cfg.Binding {
		return verr(ErrBinding, "binding differs from the attempt's: %s", s.cfg.Binding.Diff(req.Binding))
	}
	if !st.bootstrapped {
		if req.Method != MethodBootstrap {
			return verr(ErrBootstrapOrder, "the first request must be bootstrap")
		}
		return nil
	}
	if req.HostNonce != st.nonce {
		return verr(ErrNonce, "host_nonce differs from the one fixed at bootstrap")
	}
	if req.Method == MethodBootstrap {
		return verr(ErrBootstrapOrder, "a second bootstrap")
	}
	if st.ended {
		return verr(ErrOrder, "a request after a %s reply", st.endedBy)
	}
	switch req.Method {
	case MethodAdmit:
		if st.admitSeen {
			return verr(ErrOrder, "a second invoke.admit")
		}
	case MethodEffect:
		if !st.admitted {
			return verr(ErrOrder, "effect.request before an allowed invoke.admit")
		}
		if st.published {
			return verr(ErrOrder, "effect.request after result.publish")
		}
	case MethodPublish:
		if !st.admitted {
			return verr(ErrOrder, "result.publish before an allowed invoke.admit")
		}
		if st.published {
			return verr(ErrOrder, "a second result.publish")
		}
	}
	return nil
}

func (s *Session) record(st *sessionState, req *Request, digest canon.Digest, state ReplyState, reqBytes, repBytes int) {
	st.next++
	switch req.Method {
	case MethodBootstrap:
		st.bootstrapped = true
		st.nonce = req.HostNonce
	case MethodAdmit:
		st.admitSeen = true
		st.admitted = state == StateAllowed
	case MethodPublish:
		st.published = true
	}
	if state != StateAllowed {
		st.ended = true
		st.endedBy = state
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.Method == MethodBootstrap {
		s.summary.HostNonce = req.HostNonce
	}
	if req.Method == MethodPublish && state == StateAllowed {
		s.summary.Published = true
	}
	s.summary.Methods[req.Method]++
	s.summary.States[state]++
	if len(s.summary.Exchanges) == MaxSummaryExchanges {
		s.summary.DroppedExchanges++
		return
	}
	s.summary.Exchanges = append(s.summary.Exchanges, Exchange{
		Sequence: req.Sequence, Method: req.Method, RequestDigest: digest, State: state,
		RequestBytes: reqBytes, ReplyBytes: repBytes,
	})
}

// decide checks the payload of req, asks h, and returns the reply state and
// data. err is a payload violation (nothing is sent); herr is a handler
// failure, already turned into needs_reconciliation.
func (s *Session) decide(ctx context.Context, h Handler, req *Request, call Call, buf []byte) (state ReplyState, data []byte, herr, err error) {
	nr := func(e error) (ReplyState, []byte, error, error) {
		return StateNeedsReconciliation, append(buf, '{', '}'), e, nil
	}
	// obj encodes a handler's data for a reply that is not allowed.
	obj := func(st ReplyState, m map[string]any) (ReplyState, []byte, error, error) {
		b, err := appendObject(buf, m)
		if err != nil {
			return nr(fmt.Errorf("%s reply data: %w", st, err))
		}
		return st, b, nil, nil
	}
	verr := func(rule error, format string, args ...any) error {
		return &ViolationError{Err: rule, Sequence: req.Sequence, Method: req.Method, Detail: fmt.Sprintf(format, args...)}
	}
	switch req.Method {
	case MethodBootstrap:
		p, err := req.DecodeBootstrap()
		if err != nil {
			return "", nil, nil, err
		}
		switch {
		case p.PID != s.cfg.ChildPID:
			return "", nil, nil, verr(ErrBootstrap, "pid is %d, the child is %d", p.PID, s.cfg.ChildPID)
		case p.BootstrapID != s.cfg.BootstrapID:
			return "", nil, nil, verr(ErrBootstrap, "bootstrap_id differs from the one launched")
		case p.LaunchDigest != s.cfg.LaunchDigest:
			return "", nil, nil, verr(ErrBootstrap, "launch_digest %s differs from the Runtime's %s", p.LaunchDigest, s.cfg.LaunchDigest)
		}
		d, e := h.Bootstrap(ctx, BootstrapRequest{Call: call, Payload: p})
		if e != nil {
			return nr(e)
		}
		if !d.State.Valid() {
			return nr(fmt.Errorf("bootstrap decision has state %q", d.State))
		}
		return obj(d.State, d.Data)

	case MethodAdmit:
		p, err := req.DecodeAdmit()
		if err != nil {
			return "", nil, nil, err
		}
		got, err := s.admitDigest(req)
		if err != nil {
			return "", nil, nil, req.payloadErr(err)
		}
		if got != s.cfg.Binding.RequestDigest {
			return "", nil, nil, verr(ErrDigest, "digest of capability_id and arguments is %s, the binding's request_digest is %s", got, s.cfg.Binding.RequestDigest)
		}
		d, e := h.Admit(ctx, AdmitRequest{Call: call, Payload: p})
		if e != nil {
			return nr(e)
		}
		if !d.State.Valid() {
			return nr(fmt.Errorf("admit decision has state %q", d.State))
		}
		return obj(d.State, d.Data)

	case MethodEffect:
		p, fp, err := req.DecodeEffect()
		if err != nil {
			return "", nil, nil, err
		}
		d, e := h.Effect(ctx, EffectCall{Call: call, Effect: p, EffectDigest: fp})
		if e != nil {
			return nr(e)
		}
		switch {
		case !d.State.Valid():
			return nr(fmt.Errorf("effect decision has state %q", d.State))
		case d.State != StateAllowed:
			return obj(d.State, d.Data)
		case d.ReceiptID == "" || d.AuthorizationID == "":
			return nr(fmt.Errorf("allowed effect %q has no receipt_id or authorization_id", p.LogicalEffectID))
		}
		b, err := appendEffectReceipt(buf, EffectReceipt{
			LogicalEffectID: p.LogicalEffectID, EffectRequestDigest: fp,
			ReceiptID: d.ReceiptID, AuthorizationID: d.AuthorizationID,
			EffectDisposition: protocol.EffectDispositionConfirmed, Result: d.Result,
		})
		if err != nil {
			return nr(fmt.Errorf("allowed effect %q: %w", p.LogicalEffectID, err))
		}
		return StateAllowed, b, nil, nil

	case MethodPublish:
		p, got, err := req.DecodePublish()
		if err != nil {
			return "", nil, nil, err
		}
		if got != p.DataDigest {
			return "", nil, nil, verr(ErrDigest, "data digests to %s, data_digest says %s", got, p.DataDigest)
		}
		d, e := h.Publish(ctx, PublishRequest{Call: call, Payload: p})
		if e != nil {
			return nr(e)
		}
		switch {
		case !d.State.Valid():
			return nr(fmt.Errorf("publish decision has state %q", d.State))
		case d.State != StateAllowed:
			return obj(d.State, d.Data)
		case len(d.ArtifactRefs) == 0:
			return nr(errors.New("allowed publish has no artifact_refs"))
		}
		for i, ref := range d.ArtifactRefs {
			if !ValidIdentifier(ref) {
				return nr(fmt.Errorf("artifact_refs[%d] is not 1..%d code points", i, MaxIdentifierRunes))
			}
		}
		b, err := appendPublishReceipt(buf, PublishReceipt{DataDigest: p.DataDigest, ArtifactRefs: d.ArtifactRefs})
		if err != nil {
			return nr(fmt.Errorf("allowed publish: %w", err))
		}
		return StateAllowed, b, nil, nil
	}
	return "", nil, nil, verr(ErrMethod, "unknown method")
}

// admitDigest computes digest({"capability_id","arguments"}) from the
// payload's canonical bytes, without re-marshalling Go values.
func (s *Session) admitDigest(req *Request) (canon.Digest, error) {
	var args []byte
	// In canonical bytes the payload is {"arguments":ARGS}.
	if raw := req.payloadRaw; len(raw) > len(`{"arguments":}`) {
		args = raw[len(`{"arguments":`) : len(raw)-1]
	} else {
		v, ok := req.Payload.Get("arguments")
		if !ok {
			return "", errors.New("arguments missing")
		}
		var err error
		if args, err = v.Canonical(); err != nil {
			return "", err
		}
	}
	buf := make([]byte, 0, len(args)+64+len(s.cfg.Binding.CapabilityID))
	buf = append(buf, `{"arguments":`...)
	buf = append(buf, args...)
	buf = append(buf, `,"capability_id":`...)
	buf, err := canon.AppendString(buf, s.cfg.Binding.CapabilityID)
	if err != nil {
		return "", err
	}
	buf = append(buf, '}')
	return canon.Sum(buf), nil
}
