package hostsim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/wire"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// ChannelConfig configures a Channel with the values the host takes from
// the LaunchContext.
type ChannelConfig struct {
	// Binding is LaunchContext.attempt; every request carries it and every
	// reply must carry an equal one. Required.
	Binding ipc.AttemptBinding
	// HostNonce is the per-process nonce. Empty means a fresh random one
	// (64 lowercase hex digits, as upstream).
	HostNonce string
	// Deadline is deadline_unix_ms as a wall-clock time. Required.
	Deadline time.Time
	// RPCTimeout is rpc_timeout_ms. Zero means 5 s.
	RPCTimeout time.Duration
	// MaxMessageBytes is max_message_bytes for both directions. Zero means
	// ipc.MaxMessageBytes.
	MaxMessageBytes int
	// Now reads the wall clock for the deadline checks. Nil means time.Now.
	Now func() time.Time
}

// Channel is the host's end of the IPC socket (doc/protocol.md, “Frames”,
// “Exchange deadlines”, “Broken channel” and “Session order”): it sends one
// canonical request and reads exactly one reply, under a lock, checking every
// correlation field. Any failure breaks it for good: later calls fail without
// I/O, and nothing is ever retried. A Channel is safe for use by several
// goroutines; their calls are serialized.
type Channel struct {
	conn net.Conn
	// in buffers conn's reads, so that a reply's header and body usually
	// arrive in one read instead of two.
	in  *bufio.Reader
	cfg ChannelConfig
	now func() time.Time
	// prefix is the canonical `{"binding":…,"host_nonce":"…","method":`
	// shared by every request.
	prefix []byte
	// replies decodes replies as ipc.DecodeReply does, fast for canonical
	// replies that carry cfg.Binding.
	replies *ReplyDecoder

	mu          sync.Mutex // serializes exchanges and guards the fields below
	seq         int64      // last sequence sent
	broken      error      // first failure, nil while healthy
	bootTried   bool
	bootAllowed bool
	methods     []ipc.Method // methods of the frames sent
	// buf is reused for each request body: nothing keeps a body past
	// its exchange.
	buf []byte
}

// NewChannel returns a Channel over conn, normally the socket inherited as
// FD 4. It does not take ownership: Close closes conn.
func NewChannel(conn net.Conn, cfg ChannelConfig) (*Channel, error) {
	if conn == nil {
		return nil, errors.New("hostsim: nil connection")
	}
	if err := cfg.Binding.Validate(); err != nil {
		return nil, fmt.Errorf("hostsim: channel binding: %w", err)
	}
	if cfg.Deadline.IsZero() {
		return nil, errors.New("hostsim: channel needs an attempt deadline")
	}
	if cfg.HostNonce == "" {
		n, err := NewNonce()
		if err != nil {
			return nil, err
		}
		cfg.HostNonce = n
	}
	if cfg.RPCTimeout == 0 {
		cfg.RPCTimeout = ipc.DefaultRPCTimeout
	}
	if cfg.RPCTimeout < time.Millisecond || cfg.RPCTimeout > ipc.MaxRPCTimeout {
		return nil, fmt.Errorf("hostsim: rpc timeout %v outside [1ms, 30s]", cfg.RPCTimeout)
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = ipc.MaxMessageBytes
	}
	if cfg.MaxMessageBytes < ipc.MinMessageBytes || cfg.MaxMessageBytes > ipc.MaxMessageBytes {
		return nil, fmt.Errorf("hostsim: max_message_bytes %d outside [%d, %d]", cfg.MaxMessageBytes, ipc.MinMessageBytes, ipc.MaxMessageBytes)
	}
	if !ipc.ValidNonce(cfg.HostNonce) {
		return nil, fmt.Errorf("hostsim: host nonce must be 64 lowercase hex digits")
	}
	b, err := canon.Marshal(cfg.Binding)
	if err != nil {
		return nil, err
	}
	prefix := append([]byte(`{"binding":`), b...)
	prefix = append(prefix, `,"host_nonce":"`...)
	prefix = append(prefix, cfg.HostNonce...)
	prefix = append(prefix, `","method":`...)
	replies, err := NewReplyDecoder(cfg.Binding, cfg.MaxMessageBytes)
	if err != nil {
		return nil, err
	}
	c := &Channel{conn: conn, in: bufio.NewReaderSize(conn, 4096), cfg: cfg, now: cfg.Now, prefix: prefix, replies: replies}
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// HostNonce returns the nonce every request carries.
func (c *Channel) HostNonce() string { return c.cfg.HostNonce }

// Sent returns how many request frames have been sent (the last sequence).
func (c *Channel) Sent() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// Broken returns the failure that broke the channel, or nil.
func (c *Channel) Broken() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}

// Close closes the connection. The host closes it before writing stdout,
// so the Runtime sees EOF before the process exits.
func (c *Channel) Close() error { return c.conn.Close() }

// canonicalAppender is a payload that writes its own canonical bytes
// (ipc.EffectRequest does).
type canonicalAppender interface {
	AppendCanonical(dst []byte) ([]byte, error)
}

// encode builds the canonical request envelope: its members in RFC 8785
// order are binding, host_nonce, method, payload, protocol_version,
// sequence.
//
// It returns the request as a frame: the body after wire.HeaderBytes bytes
// of room for the header, so that wire.WriteFramed sends it in one write.
func (c *Channel) encode(method ipc.Method, payload any, seq int64) ([]byte, error) {
	body := append(c.buf[:0], make([]byte, wire.HeaderBytes)...)
	body = append(body, c.prefix...)
	var err error
	if method.Valid() {
		// The method names need no escaping.
		body = append(body, '"')
		body = append(body, method...)
		body = append(body, '"')
	} else {
		m, err := canon.Marshal(string(method))
		if err != nil {
			return nil, err
		}
		body = append(body, m...)
	}
	body = append(body, `,"payload":`...)
	if a, ok := payload.(canonicalAppender); ok {
		body, err = a.AppendCanonical(body)
	} else {
		body, err = canon.AppendMarshal(body, payload)
	}
	if err != nil {
		return nil, err
	}
	body = append(body, `,"protocol_version":1,"sequence":`...)
	body = strconv.AppendInt(body, seq, 10)
	body = append(body, '}')
	c.buf = body
	return body, nil
}

// Call sends one request with the given payload (any value that marshals to
// a JSON object) and returns the checked reply. The error wraps ErrExchange
// and the specific cause; after it the Channel is broken, except for the
// local refusals of bootstrap order that send nothing.
func (c *Channel) Call(ctx context.Context, method ipc.Method, payload any) (*ipc.Reply, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, errors.Join(ErrExchange, ErrBroken, c.broken)
	}
	if method == ipc.MethodBootstrap {
		if c.bootTried {
			return nil, errors.Join(ErrExchange, ErrBootstrapUsed)
		}
		c.bootTried = true
	} else if !c.bootAllowed {
		return nil, errors.Join(ErrExchange, ErrSessionUnavailable)
	}
	rep, err := c.exchange(ctx, method, payload)
	if err != nil {
		c.broken = err
		return nil, errors.Join(ErrExchange, err)
	}
	if method == ipc.MethodBootstrap {
		c.bootAllowed = rep.State == ipc.StateAllowed
	}
	return rep, nil
}

func (c *Channel) exchange(ctx context.Context, method ipc.Method, payload any) (*ipc.Reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	remaining := c.cfg.Deadline.Sub(c.now())
	if remaining <= 0 {
		return nil, ErrDeadline
	}
	timeout := min(remaining, c.cfg.RPCTimeout)
	frame, err := c.encode(method, payload, c.seq+1)
	if err != nil {
		return nil, fmt.Errorf("hostsim: encoding %s request: %w", method, err)
	}
	body := frame[wire.HeaderBytes:]
	if len(body) > c.cfg.MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrRequestTooLarge, len(body), c.cfg.MaxMessageBytes)
	}
	c.seq++
	c.methods = append(c.methods, method)
	// Hashed before sending: after the write it would overlap with the
	// Runtime's work, but then the Runtime's goroutine wakes on the other
	// core, which on an idle machine costs more than the hash of a small
	// request (measured: 1 KiB exchanges 15–25% slower, 64 KiB ones 5%
	// faster).
	reqDigest := canon.Sum(body)
	// time.Now carries a monotonic reading, so the conn deadline measures
	// the whole exchange on the monotonic clock, each read getting only
	// the time left.
	if err := c.conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := wire.WriteFramed(c.conn, frame); err != nil {
		return nil, c.ioErr(ctx, err)
	}
	rbody, err := ipc.ReadFrame(c.in, c.cfg.MaxMessageBytes)
	if err != nil {
		if errors.Is(err, ipc.ErrFrameTooLarge) || errors.Is(err, ipc.ErrEmptyFrame) {
			return nil, fmt.Errorf("%w: %w", ErrReplyTooLarge, err)
		}
		return nil, c.ioErr(ctx, err)
	}
	rep, err := c.replies.Decode(rbody)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReply, err)
	}
	switch {
	case rep.Sequence != c.seq:
		return nil, fmt.Errorf("%w: sequence %d, sent %d", ErrCorrelation, rep.Sequence, c.seq)
	case rep.HostNonce != c.cfg.HostNonce:
		return nil, fmt.Errorf("%w: host_nonce", ErrCorrelation)
	case c.cfg.Binding != rep.Binding:
		return nil, fmt.Errorf("%w: binding: %s", ErrCorrelation, c.cfg.Binding.Diff(rep.Binding))
	case rep.RequestDigest != reqDigest:
		return nil, fmt.Errorf("%w: request_digest %s, sent %s", ErrCorrelation, rep.RequestDigest, reqDigest)
	}
	if !c.now().Before(c.cfg.Deadline) {
		return nil, ErrLateReply
	}
	return rep, nil
}

func (c *Channel) ioErr(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return errors.Join(context.Cause(ctx), err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %w", ErrDisconnected, err)
	}
	return err
}

// Methods returns the methods of the frames sent, in order.
func (c *Channel) Methods() []ipc.Method {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ipc.Method(nil), c.methods...)
}
