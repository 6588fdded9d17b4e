package launch

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
)

// TestEgressHosts: the network_hosts forms the proxy reads, and what each
// admits.
func TestEgressHosts(t *testing.T) {
	rules, bad := parseEgressHosts([]string{"API.Example.com.", "db.example.com:5432", "192.0.2.7", "[2001:db8::1]:443",
		"2001:db8::2", "::ffff:192.0.2.9", "*.example.com", "host:0", "host:x", "", "a..b", "fe80::1%eth0"})
	if diff := cmp.Diff([]string{"*.example.com", "host:0", "host:x", "", "a..b", "fe80::1%eth0"}, bad); diff != "" {
		t.Errorf("unreadable entries (-want +got):\n%s", diff)
	}
	p := &egressProxy{rules: rules}
	for _, c := range []struct {
		host string
		port int
		want bool
	}{
		{"api.example.com", 443, true}, {"API.EXAMPLE.COM.", 8080, true}, {"example.com", 443, false},
		{"x.api.example.com", 443, false}, {"db.example.com", 5432, true}, {"db.example.com", 5433, false},
		{"192.0.2.7", 1, true}, {"192.0.2.8", 80, false}, {"::ffff:192.0.2.7", 80, true},
		{"2001:db8::1", 443, true}, {"2001:db8::1", 80, false}, {"2001:db8::2", 22, true},
		{"192.0.2.9", 80, true}, {"127.0.0.1", 5432, false}, {"bad name", 80, false},
	} {
		if _, got := p.admitted(c.host, c.port); got != c.want {
			t.Errorf("admitted(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	for a, want := range map[string]bool{"127.0.0.1": true, "::1": true, "169.254.169.254": true, "fe80::1": true,
		"0.0.0.0": true, "fd00:ec2::254": true, "::ffff:127.0.0.1": true, "224.0.0.1": true,
		"0.1.2.3": true, "255.255.255.255": true, "::ffff:0.0.0.1": true, "10.0.0.1": false, "fd12::1": false, "192.0.2.1": false, "2001:db8::1": false} {
		if got := neverByName(netip.MustParseAddr(a)); got != want {
			t.Errorf("neverByName(%s) = %v, want %v", a, got, want)
		}
	}
}

// FuzzEgressHost: any network_hosts entry is read without panic, and an
// entry read as a name admits that name and nothing longer.
func FuzzEgressHost(f *testing.F) {
	for _, s := range []string{"api.example.com", "h:1", "[::1]:80", "1.2.3.4", "a.b.", "[x]", "::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, e string) {
		r, ok := parseEgressHost(e)
		if !ok {
			return
		}
		if r.port < 0 || r.port > 65535 || (r.name == "") == !r.ip.IsValid() {
			t.Fatalf("%q read as %+v", e, r)
		}
		p := &egressProxy{rules: []egressRule{r}}
		if r.name != "" {
			if _, ok := p.admitted(r.name, max(r.port, 1)); !ok {
				t.Fatalf("%q does not admit its own name %q", e, r.name)
			}
			if _, ok := p.admitted("x."+r.name, max(r.port, 1)); ok {
				t.Fatalf("%q admits a subdomain", e)
			}
		}
	})
}

// fakeResolver resolves from a table.
type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// proxyExchange sends raw to the proxy at addr and returns the first
// response's status line and body; for a CONNECT it then sends a GET
// through the tunnel and returns that response.
func proxyExchange(t *testing.T, addr, raw string, tunnelTo string) (string, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, raw)
	br := bufio.NewReader(c)
	method := http.MethodGet
	if tunnelTo != "" {
		method = http.MethodConnect
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	if tunnelTo != "" && resp.StatusCode == http.StatusOK {
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", tunnelTo)
		if resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodGet}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.Status, strings.TrimSpace(string(b))
}

func testServer(t *testing.T, ln net.Listener, body string) string {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			w.Write(b)
			return
		}
		io.WriteString(w, body)
	}))
	if ln != nil {
		srv.Listener.Close()
		srv.Listener = ln
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// publicAddr returns a non-loopback IPv4 address of this machine, to
// stand for a host name's public address.
func publicAddr(t *testing.T) netip.Addr {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() && ip.IsGlobalUnicast() && !neverByName(ip) {
				return ip.Unmap()
			}
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to stand for a public host")
	return netip.Addr{}
}

// TestEgressRefusalLog: a host's first egressLoggedRefusals refusals are
// logged one by one, the rest counted and logged once at close.
func TestEgressRefusalLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // the proxy logs from its connections' goroutines
	var warnings int
	var last string
	h := slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		warnings++
		last = string(b)
		return len(b), nil
	}), nil)
	p := startEgress(ln, nil, slog.New(h), fakeResolver{})
	for range egressLoggedRefusals + 20 {
		if status, _ := proxyExchange(t, ln.Addr().String(), "CONNECT example.com:443 HTTP/1.1\r\n\r\n", "x"); status != "403 Forbidden" {
			t.Fatalf("status %s", status)
		}
	}
	p.close()
	if warnings != egressLoggedRefusals+2 || !strings.Contains(last, "refusals="+fmt.Sprint(egressLoggedRefusals+20)) {
		t.Errorf("%d log lines, the last %q; want %d, the last counting %d refusals", warnings, last, egressLoggedRefusals+2, egressLoggedRefusals+20)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// TestEgressProxy runs the proxy in this process: admitted destinations
// are reached by CONNECT and by plain GET (an IP literal, and a name
// resolved by the proxy past a metadata address), everything else is
// answered 403 (or 400 for what is not a proxy request), a name that
// resolves only to loopback is refused, more than egressMaxConns
// connections at once get 503, and close ends every connection and
// goroutine, an open tunnel included, leaving no descriptor.
func TestEgressProxy(t *testing.T) {
	pub := publicAddr(t)
	publn, err := net.Listen("tcp", netip.AddrPortFrom(pub, 0).String())
	if err != nil {
		t.Skipf("listening on %s: %v", pub, err)
	}
	allowed, other, named := testServer(t, nil, "allowed"), testServer(t, nil, "other"), testServer(t, publn, "named")
	_, namedPort, _ := net.SplitHostPort(named)
	_, allowedPort, _ := net.SplitHostPort(allowed)
	fds := leaktest.OpenFDs(t)
	checkGoroutines := leaktest.Goroutines(t)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	res := fakeResolver{"api.test": {netip.MustParseAddr("169.254.169.254"), pub}, "local.test": {netip.MustParseAddr("127.0.0.1")}}
	p := startEgress(ln, []string{allowed, "api.test:" + namedPort, "local.test", "*.bad"}, slog.New(slog.DiscardHandler), res)
	addr := ln.Addr().String()
	for _, c := range []struct{ raw, tunnel, status, body string }{
		{"GET http://" + allowed + "/ HTTP/1.1\r\nHost: " + allowed + "\r\n\r\n", "", "200 OK", "allowed"},
		{"CONNECT " + allowed + " HTTP/1.1\r\nHost: " + allowed + "\r\n\r\n", allowed, "200 OK", "allowed"},
		{"GET http://api.test:" + namedPort + "/ HTTP/1.1\r\nHost: api.test\r\n\r\n", "", "200 OK", "named"},
		{"CONNECT api.test:" + namedPort + " HTTP/1.1\r\n\r\n", "api.test", "200 OK", "named"},
		{"POST http://" + allowed + "/ HTTP/1.1\r\nHost: " + allowed + "\r\nContent-Length: 4\r\n\r\nbody", "", "200 OK", "body"},
		{"POST http://" + allowed + "/ HTTP/1.1\r\nHost: " + allowed + "\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nbody", "", "100 Continue", ""},
		{"GET http://" + other + "/ HTTP/1.1\r\nHost: " + other + "\r\n\r\n", "", "403 Forbidden", ""},
		{"CONNECT " + other + " HTTP/1.1\r\n\r\n", other, "403 Forbidden", ""},
		{"CONNECT api.test:1 HTTP/1.1\r\n\r\n", "api.test", "403 Forbidden", ""},
		{"CONNECT local.test:" + allowedPort + " HTTP/1.1\r\n\r\n", "local.test", "403 Forbidden", ""},
		{"CONNECT 127.0.0.1:5432 HTTP/1.1\r\n\r\n", "x", "403 Forbidden", ""},
		{"GET / HTTP/1.1\r\nHost: " + allowed + "\r\n\r\n", "", "400 Bad Request", ""},
		{"GET https://" + allowed + "/ HTTP/1.1\r\n\r\n", "", "400 Bad Request", ""},
		{"CONNECT " + strings.Split(allowed, ":")[0] + " HTTP/1.1\r\n\r\n", "x", "400 Bad Request", ""},
		{"garbage\r\n\r\n", "", "400 Bad Request", ""},
	} {
		status, body := proxyExchange(t, addr, c.raw, c.tunnel)
		if status != c.status || (c.body != "" && body != c.body) {
			t.Errorf("%q: %s %q, want %s %q", c.raw, status, body, c.status, c.body)
		}
	}

	// egressMaxConns connections that send nothing hold every slot.
	var held []net.Conn
	for range egressMaxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if status, _ := proxyExchange(t, addr, "CONNECT "+allowed+" HTTP/1.1\r\n\r\n", allowed); status != "503 Service Unavailable" {
		t.Errorf("one connection more than egressMaxConns: %s, want 503", status)
	}
	for _, c := range held {
		c.Close()
	}
	for len(p.sem) > 0 { // the handlers see EOF and free their slots
		runtime.Gosched()
	}

	// An open tunnel when the host ends.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\n\r\n", allowed)
	br := bufio.NewReader(c)
	if resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	p.close()
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("the tunnel after close: %v, want EOF", err)
	}
	c.Close()
	checkGoroutines()
	// The test servers' ends of the closed connections are closed by their
	// own goroutines, a moment after the proxy's.
	n := leaktest.OpenFDs(t)
	for end := time.Now().Add(5 * time.Second); n != fds && time.Now().Before(end); n = leaktest.OpenFDs(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if n != fds {
		t.Errorf("%d descriptors open after close, %d before", n, fds)
	}
}
