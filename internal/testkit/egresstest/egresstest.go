//go:build linux

// Package egresstest gives the contained-egress tests (launch's and
// supervise's) the local servers a hostile host is pointed at: an HTTP
// server and a DNS server, each stopped when its test ends.
package egresstest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
)

// ServeHTTP serves body on a local port until the test ends, or a
// redirect to the URL a request's "to" parameter names; it returns
// host:port.
func ServeHTTP(t testing.TB, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
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
