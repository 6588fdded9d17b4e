package launch

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The egress proxy's bounds (doc/design.md, “Containment”): per host, at
// most egressMaxConns connections at once (more are answered 503); a
// request's head must arrive within egressHeadTimeout; a destination must
// answer within egressDialTimeout; a connection with no byte moving either
// way for egressIdleTimeout is closed.
const (
	egressMaxConns    = 64
	egressHeadTimeout = 10 * time.Second
	egressDialTimeout = 10 * time.Second
	egressIdleTimeout = 60 * time.Second
	egressMaxHead     = 64 << 10
	// egressLoggedRefusals is how many refusals of one host are logged one
	// by one; the rest are counted and logged once when the host ends, so
	// that a host cannot flood the log.
	egressLoggedRefusals = 100
)

// egressRule is one admitted network_hosts entry: a host name or an IP
// literal, and a port (0: any port).
type egressRule struct {
	name string     // lower case, no trailing dot; "" for an IP literal
	ip   netip.Addr // valid for an IP literal
	port int
}

// parseEgressHosts reads network_hosts entries: "host", "host:port",
// "IP", "IP:port", "[IPv6]" or "[IPv6]:port"; host names match exactly,
// case-insensitively, without a trailing dot (no wildcards). It returns
// the rules and the entries it could not read, which admit nothing.
func parseEgressHosts(hosts []string) (rules []egressRule, bad []string) {
	for _, e := range hosts {
		r, ok := parseEgressHost(e)
		if !ok {
			bad = append(bad, e)
			continue
		}
		rules = append(rules, r)
	}
	return rules, bad
}

func parseEgressHost(e string) (egressRule, bool) {
	host, port := e, 0
	if h, p, err := net.SplitHostPort(e); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return egressRule{}, false
		}
		host, port = h, n
	} else if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
		host = e[1 : len(e)-1]
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return egressRule{}, false
		}
		return egressRule{ip: a.Unmap(), port: port}, true
	}
	name, ok := egressName(host)
	if !ok {
		return egressRule{}, false
	}
	return egressRule{name: name, port: port}, true
}

// egressName normalizes a DNS host name (lower case, no trailing dot) and
// reports whether it is one: labels of letters, digits, '-' and '_'.
func egressName(h string) (string, bool) {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "" || len(h) > 253 {
		return "", false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", false
			}
		}
	}
	return h, true
}

// errEgressRefused is wrapped by every refusal of the egress proxy.
var errEgressRefused = errors.New("not admitted by network_hosts")

// egressResolver resolves host names for the proxy (*net.Resolver).
type egressResolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// egressProxy is one host's egress proxy: it serves HTTP CONNECT and
// plain-HTTP forward requests on a listener in the host's network
// namespace, and dials, from this process's network, only destinations
// the host's network_hosts admit (doc/design.md, “Containment”). It lives
// as long as the host; close ends every connection and goroutine.
type egressProxy struct {
	ln       net.Listener
	rules    []egressRule
	log      *slog.Logger
	resolver egressResolver
	ctx      context.Context
	cancel   context.CancelFunc
	sem      chan struct{}
	wg       sync.WaitGroup

	refusals atomic.Int64

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// refused logs one refusal (up to egressLoggedRefusals of them).
func (p *egressProxy) refused(msg string, attrs ...any) {
	switch n := p.refusals.Add(1); {
	case n <= egressLoggedRefusals:
		p.log.Warn(msg, attrs...)
	case n == egressLoggedRefusals+1:
		p.log.Warn("launch: egress: more refusals; they are counted and logged once when the host ends", "logged", egressLoggedRefusals)
	}
}

// startEgress serves ln until close, for a host admitted to hosts; log
// receives the refusals (with attrs).
func startEgress(ln net.Listener, hosts []string, log *slog.Logger, resolver egressResolver) *egressProxy {
	rules, bad := parseEgressHosts(hosts)
	ctx, cancel := context.WithCancel(context.Background())
	p := &egressProxy{ln: ln, rules: rules, log: log, resolver: resolver, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, egressMaxConns), conns: map[net.Conn]struct{}{}}
	if len(bad) > 0 {
		log.Warn("launch: egress: network_hosts entries that are not a host, host:port or IP literal admit nothing", "entries", bad)
	}
	p.wg.Add(1)
	go p.serve()
	return p
}

// close stops the proxy: the listener, every connection both ways, and
// waits for every goroutine.
func (p *egressProxy) close() {
	if p == nil {
		return
	}
	p.cancel()
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if n := p.refusals.Load(); n > egressLoggedRefusals {
		p.log.Warn("launch: egress refused more than were logged", "refusals", n)
	}
}

// track records c for close; false when the proxy is closing (c is then
// closed).
func (p *egressProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *egressProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *egressProxy) serve() {
	defer p.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or the like: wait, as net/http does.
			t := time.NewTimer(backoff)
			select {
			case <-p.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if !p.track(c) {
			return
		}
		select {
		case p.sem <- struct{}{}:
		default:
			p.log.Warn("launch: egress: too many connections at once; answered 503", "limit", egressMaxConns)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			writeEgressStatus(c, http.StatusServiceUnavailable, "too many connections through the egress proxy")
			p.untrack(c)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.sem }()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

// handle serves one client connection: one request head, then, for an
// admitted destination, the bytes both ways until either side ends.
func (p *egressProxy) handle(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(egressHeadTimeout))
	lr := &io.LimitedReader{R: c, N: egressMaxHead}
	br := bufio.NewReader(lr)
	req, err := http.ReadRequest(br)
	if err != nil {
		writeEgressStatus(c, http.StatusBadRequest, "unreadable proxy request")
		return
	}
	lr.N = 1<<63 - 1 // the head is read; the body and tunnel are not bounded here
	host, port, err := egressTarget(req)
	if err != nil {
		writeEgressStatus(c, http.StatusBadRequest, err.Error())
		return
	}
	lit, ok := p.admitted(host, port)
	if !ok {
		p.refused("launch: egress refused: not admitted by network_hosts", "host", host, "port", port, "method", req.Method)
		writeEgressStatus(c, http.StatusForbidden, fmt.Sprintf("%s port %d: %v", host, port, errEgressRefused))
		return
	}
	up, err := p.dial(host, port, lit)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, errEgressRefused) {
			status = http.StatusForbidden
			p.refused("launch: egress refused: the name resolves to an address never dialed by name", "host", host, "port", port, "err", err)
		} else {
			p.log.Info("launch: egress: the destination did not answer", "host", host, "port", port, "err", err)
		}
		writeEgressStatus(c, status, err.Error())
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	_ = c.SetDeadline(time.Time{})
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else {
		// Forwarded in origin form, one request per connection: the
		// response ends the tunnel.
		for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Connection", "Keep-Alive"} {
			req.Header.Del(h)
		}
		req.Close = true
		req.RequestURI = ""
		if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
			// The proxy has decided: let the client send its body now
			// rather than wait for a continue the forwarded request
			// would no longer ask for.
			req.Header.Del("Expect")
			if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
		_ = up.SetWriteDeadline(time.Now().Add(egressIdleTimeout))
		if err := req.Write(up); err != nil {
			writeEgressStatus(c, http.StatusBadGateway, "forwarding the request: "+err.Error())
			return
		}
	}
	// Bytes the client sent beyond the head go first.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		_ = up.SetWriteDeadline(time.Now().Add(egressIdleTimeout))
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	var act activity
	act.touch()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		pipe(up, c, &act)
	}()
	pipe(c, up, &act)
}

// writeEgressStatus answers a request with status and a one-line reason,
// closing the connection.
func writeEgressStatus(w io.Writer, status int, reason string) {
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		status, http.StatusText(status), len(reason)+1, reason)
}

// target returns the host and port a request asks for: CONNECT's
// authority, or an absolute http:// URL's host (port 80 by default).
func egressTarget(req *http.Request) (host string, port int, err error) {
	hostport := req.Host
	def := ""
	if req.Method != http.MethodConnect {
		if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
			return "", 0, errors.New("only CONNECT and absolute http:// URLs are proxied")
		}
		hostport, def = req.URL.Host, "80"
	}
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		if def == "" {
			return "", 0, fmt.Errorf("CONNECT %q: want host:port", hostport)
		}
		h, ps = strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]"), def
	}
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, fmt.Errorf("port %q", ps)
	}
	return h, n, nil
}

// admitted reports whether host:port matches a rule; host is an IP
// literal or a name.
func (p *egressProxy) admitted(host string, port int) (lit netip.Addr, ok bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		for _, r := range p.rules {
			if r.ip.IsValid() && r.ip == a && (r.port == 0 || r.port == port) {
				return a, true
			}
		}
		return netip.Addr{}, false
	}
	name, valid := egressName(host)
	if !valid {
		return netip.Addr{}, false
	}
	for _, r := range p.rules {
		if r.name != "" && r.name == name && (r.port == 0 || r.port == port) {
			return netip.Addr{}, true
		}
	}
	return netip.Addr{}, false
}

// neverByName reports whether a is an address the proxy never dials for a
// host name, whatever the name resolves to: loopback (this machine's
// services: PostgreSQL, the ledger's database), link-local (cloud
// metadata at 169.254.169.254), unspecified, "this network" (0.0.0.0/8,
// which Linux may route to this machine), broadcast and multicast
// addresses, and AWS's IPv6 metadata address. Private addresses are
// dialed: an admitted name may be an internal service. An admitted IP
// literal is dialed as admitted.
func neverByName(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() ||
		a.IsMulticast() || a.IsInterfaceLocalMulticast() || (a.Is4() && a.As4()[0] == 0) ||
		a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || a == netip.MustParseAddr("fd00:ec2::254")
}

// dial connects to an admitted host:port: an IP literal as is, a name
// through the resolver, to its first address that is not neverByName
// and answers.
func (p *egressProxy) dial(host string, port int, lit netip.Addr) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, egressDialTimeout)
	defer cancel()
	var d net.Dialer
	if lit.IsValid() {
		return d.DialContext(ctx, "tcp", netip.AddrPortFrom(lit, uint16(port)).String())
	}
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	var errs []error
	for _, a := range addrs {
		if neverByName(a) {
			errs = append(errs, fmt.Errorf("%s resolves to %s, which is never dialed by name (loopback, link-local, metadata); admit the IP literal to reach it: %w", host, a, errEgressRefused))
			continue
		}
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("resolving %s: no address", host)
	}
	return nil, errors.Join(errs...)
}

// activity is the time of the last byte moved either way through a
// tunnel, for the idle timeout.
type activity struct{ last atomic.Int64 }

func (a *activity) touch()                 { a.last.Store(time.Now().UnixNano()) }
func (a *activity) idleFor() time.Duration { return time.Since(time.Unix(0, a.last.Load())) }

// pipe copies src to dst until src ends, an error, or both directions
// have been idle for egressIdleTimeout; then it half-closes dst.
func pipe(dst, src net.Conn, act *activity) {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(egressIdleTimeout))
		n, err := src.Read(buf)
		if n > 0 {
			act.touch()
			_ = dst.SetWriteDeadline(time.Now().Add(egressIdleTimeout))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && act.idleFor() < egressIdleTimeout {
				continue // the other direction is busy
			}
			break
		}
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	} else {
		dst.Close()
	}
}
