//go:build linux

// Package egresstest gives the contained-egress tests (launch's and
// supervise's) the local servers a hostile host is pointed at: an HTTP
// server and a DNS server, each stopped when its test ends.
package egresstest

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"syscall"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
)

// ServeHTTP serves body on a local port until the test ends, or a
// redirect to the URL a request's "to" parameter names; it returns
// host:port.
//
// The port lies below the ephemeral range a new network namespace
// starts with (32768–60999). A warm host's own egress listener is bound
// to an ephemeral port in the zygote server's namespace, and it may
// connect to that port: were a test server's port the same number, the
// host's "connect to the test server directly" would reach its own
// proxy, and a test expecting a refusal would fail by chance.
func ServeHTTP(t testing.TB, body string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, body)
	}))
	srv.Listener.Close()
	srv.Listener = listenLow(t)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// listenLow listens on 127.0.0.1 at a free port in [20000, 32768).
func listenLow(t testing.TB) net.Listener {
	t.Helper()
	const low, high = 20000, 32768
	var last error
	for range 200 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(low+rand.IntN(high-low))))
		if err == nil {
			return ln
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("egresstest: listen below the ephemeral range: %v", err)
		}
		last = err
	}
	t.Fatalf("egresstest: no free port in [%d, %d) after 200 tries: %v", low, high, last)
	return nil
}

// ServeDNS answers every query on a local UDP socket with one A record
// (hostproc.DNSAnswer) until the test ends; it returns the address.
func ServeDNS(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if ans, err := hostproc.DNSAnswer(buf[:n]); err == nil {
				pc.WriteTo(ans, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}
