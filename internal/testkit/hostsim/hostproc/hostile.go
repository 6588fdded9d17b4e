//go:build linux

package hostproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim"
)

// hostile runs every action of spec and returns, for each, "ok" (with
// what it got, after a space, where it counts) or the error.
func hostile(spec string) map[string]any {
	out := map[string]any{}
	for _, a := range strings.Split(spec, ";") {
		if a == "" {
			continue
		}
		verb, arg, _ := strings.Cut(a, ":")
		res := "ok"
		if got, err := hostileAction(verb, arg); err != nil {
			res = err.Error()
		} else if got != "" {
			res = "ok " + got
		}
		out[a] = res
	}
	return out
}

// hostileAction tries one thing a hostile provider would:
//
//	read:PATH          open PATH read-only and read a byte
//	write:PATH         open PATH for writing (created, appended) and write a byte
//	connect:HOST:PORT  a TCP connection
//	resolve:NAME@ADDR  resolve NAME with the DNS server at ADDR (UDP)
//	signal:PID         send SIGURG (harmless to a Go program) to PID ("self": its own)
//	abstract:NAME      connect to the abstract unix socket @NAME
//	unshare:           unshare(CLONE_NEWUSER)
//	keyctl:            ask the kernel for the session keyring's id
//	forkbomb:N         start copies of this program (sleepers) until one fails or N run
//	alloc:BYTES        map and touch BYTES of private memory
//	bigfile:PATH:BYTES write BYTES to PATH (SIGXFSZ ignored, so the limit is an error)
//	caps:              the capability sets of /proc/self/status: "ok CapInh=… CapPrm=… CapEff=… CapBnd=… CapAmb=…"
//	proxyget:URL       GET the http:// URL through the proxy HTTP_PROXY names; "ok STATUS BODY"
//	tunnel:HOST:PORT   CONNECT to HOST:PORT through the proxy HTTPS_PROXY names, then GET / in
//	                   the tunnel; "ok STATUS BODY"
func hostileAction(verb, arg string) (string, error) {
	switch verb {
	case "proxyget", "tunnel":
		return proxied(verb, arg)
	case "caps":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return "", err
		}
		var caps []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Cap") {
				caps = append(caps, strings.Join(strings.Fields(line), ""))
			}
		}
		return strings.Join(caps, " "), nil
	case "read":
		f, err := os.Open(arg)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.Read(make([]byte, 1))
		return "", err
	case "write":
		f, err := os.OpenFile(arg, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		_, err = f.Write([]byte("x"))
		return "", err
	case "connect":
		c, err := net.DialTimeout("tcp", arg, 3*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "", nil
	case "resolve":
		name, server, _ := strings.Cut(arg, "@")
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", server)
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, name)
		return strings.Join(addrs, ","), err
	case "signal":
		if arg == "self" {
			arg = strconv.Itoa(os.Getpid())
		}
		pid, err := strconv.Atoi(arg)
		if err != nil {
			return "", err
		}
		return "", unix.Kill(pid, unix.SIGURG)
	case "abstract":
		c, err := net.DialTimeout("unix", "@"+arg, 3*time.Second)
		if err != nil {
			return "", err
		}
		c.Close()
		return "", nil
	case "unshare":
		return "", unix.Unshare(unix.CLONE_NEWUSER)
	case "keyctl":
		id, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
		return strconv.Itoa(id), err
	case "forkbomb":
		return forkBomb(arg)
	case "alloc":
		n, err := strconv.ParseInt(arg, 10, 64)
		if err != nil {
			return "", err
		}
		b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return "", fmt.Errorf("mmap %d bytes: %w", n, err)
		}
		for i := 0; i < len(b); i += 1 << 20 {
			b[i] = 1
		}
		return "", unix.Munmap(b)
	case "bigfile":
		path, size, _ := strings.Cut(arg, ":")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			return "", err
		}
		signal.Ignore(syscall.SIGXFSZ)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		chunk := make([]byte, 1<<20)
		var written int64
		for written < n {
			k, err := f.Write(chunk[:min(int64(len(chunk)), n-written)])
			written += int64(k)
			if err != nil {
				return "", fmt.Errorf("after %d bytes: %w", written, err)
			}
		}
		return strconv.FormatInt(written, 10), nil
	}
	return "", fmt.Errorf("unknown hostile action %q", verb)
}

// forkBomb starts sleepers (this executable in the sleeper role) until a
// start fails or max run; they stay in the host's process group, which
// the launcher kills at the end.
func forkBomb(arg string) (string, error) {
	max, err := strconv.Atoi(arg)
	if err != nil {
		return "", err
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	for n := 0; n < max; n++ {
		cmd := exec.Command(self, os.Args[1:]...)
		cmd.Env = []string{EnvScenario + "=" + string(scSleeper)}
		if err := cmd.Start(); err != nil {
			return "", fmt.Errorf("after %d processes: %w", n, errors.Unwrap(err))
		}
	}
	return strconv.Itoa(max), nil
}

// DNSAnswer is a tiny DNS server's answer to query: one A record,
// 192.0.2.1, for whatever was asked. Tests of the hostile scenario run it.
func DNSAnswer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if q.Type == dnsmessage.TypeA {
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60},
			dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// proxied does a proxyget or tunnel action: an HTTP/1.1 exchange with
// the proxy its environment names, written by hand so that loopback
// destinations go through the proxy too (net/http's proxy selection
// never proxies them). A proxyget follows up to five redirects, each a
// new request through the proxy, as an HTTP client would.
func proxied(verb, arg string) (string, error) {
	for range 5 {
		res, next, err := proxiedOnce(verb, arg)
		if next == "" || verb != "proxyget" {
			return res, err
		}
		arg = next
	}
	return "", errors.New("too many redirects")
}

// proxiedOnce is one exchange of proxied; next is the Location of a
// redirect.
func proxiedOnce(verb, arg string) (res, next string, err error) {
	env := "HTTP_PROXY"
	if verb == "tunnel" {
		env = "HTTPS_PROXY"
	}
	pu, err := url.Parse(os.Getenv(env))
	if err != nil || pu.Host == "" {
		return "", "", fmt.Errorf("no proxy in %s (%q)", env, os.Getenv(env))
	}
	c, err := net.DialTimeout("tcp", pu.Host, 3*time.Second)
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	var req *http.Request
	if verb == "tunnel" {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", arg, arg)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return "", "", fmt.Errorf("CONNECT: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return "", "", fmt.Errorf("the proxy answered CONNECT with %s", resp.Status)
		}
		req, _ = http.NewRequest(http.MethodGet, "http://"+arg+"/", nil)
		err = req.Write(c)
		if err != nil {
			return "", "", err
		}
	} else {
		if req, err = http.NewRequest(http.MethodGet, arg, nil); err != nil {
			return "", "", err
		}
		if err := req.WriteProxy(c); err != nil {
			return "", "", err
		}
	}
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
		u, err := req.URL.Parse(loc)
		if err != nil {
			return "", "", err
		}
		return "", u.String(), nil
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("the proxy answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body))), "", nil
}

// hostileEcho is the echo capability of the hostile-echo scenario: it
// tries the actions EnvHostile lists and answers {"text": the JSON report
// {"actions": {...}}}.
func hostileEcho(context.Context, map[string]any, *hostsim.EffectPort) hostsim.Outcome {
	b, err := json.Marshal(map[string]any{"actions": hostile(os.Getenv(EnvHostile))})
	if err != nil {
		return hostsim.Outcome{Status: hostsim.OutcomeFailed, ErrorCode: "ZEO_DEMO_DOMAIN_FAILURE"}
	}
	return hostsim.Outcome{Status: hostsim.OutcomeSuccess, Response: map[string]any{"text": string(b)}}
}
