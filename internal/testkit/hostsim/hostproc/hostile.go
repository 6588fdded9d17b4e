//go:build linux

package hostproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
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
func hostileAction(verb, arg string) (string, error) {
	switch verb {
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
