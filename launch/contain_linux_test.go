package launch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/internal/testkit/egresstest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/hostsim/hostproc"
	"github.com/zeoruntime/runtimeipc/internal/testkit/leaktest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
)

// hostileRun launches the simulated host in its hostile scenario, which
// tries each of actions and reports what it got, through a launcher with
// contain, for a context with networkAllowed. It returns action → "ok…"
// or the error text.
func hostileRun(t *testing.T, contain contain.Config, user *contain.User, networkAllowed bool, actions ...string) map[string]string {
	t.Helper()
	return hostileRunContext(t, contain, user, nil, func(c *launch.LaunchContext) { c.NetworkAllowed = networkAllowed }, actions...)
}

// hostileRunContext is hostileRun with the context set by setContext and
// the launcher's log written to log (when not nil).
func hostileRunContext(t *testing.T, contain contain.Config, user *contain.User, log *slog.Logger, setContext func(*launch.LaunchContext), actions ...string) map[string]string {
	t.Helper()
	l, err := launch.New(launch.Config{Interpreter: hostsimPath, Dir: openDir(t), Verifier: environment.Trust{},
		Env:  []string{hostproc.EnvScenario + "=hostile", hostproc.EnvHostile + "=" + strings.Join(actions, ";")},
		User: user, AllowRootHost: user == nil, Containment: contain, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	inv := newFixture(t).invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	setContext(&inv.Context)
	out, err := l.Invoke(testCtx(t), inv)
	if out == nil {
		t.Fatalf("the hostile host did not start: %v", err)
	}
	var r struct {
		Actions map[string]string `json:"actions"`
	}
	if err := json.Unmarshal(out.Process.Stdout, &r); err != nil {
		t.Fatalf("hostile report %q: %v (exit %d, stderr %q)", out.Process.Stdout, err, out.Process.ExitCode, out.Process.StderrTail)
	}
	for _, a := range actions {
		if _, ok := r.Actions[a]; !ok {
			t.Fatalf("the report lacks %q: %v", a, r.Actions)
		}
	}
	return r.Actions
}

// denied reports whether an action's result is a permission error.
func denied(res string) bool {
	return strings.Contains(res, "permission denied") || strings.Contains(res, "operation not permitted")
}

// TestContainedFilesystem: a contained host cannot open the controller's
// bolt ledger (for reading or writing), another attempt's workspace, or a
// file of the controller's directory; it can write in its own workspace.
// The ledger is byte for byte what it was, and its Check is clean. The
// control: the same host uncontained opens all of them.
func TestContainedFilesystem(t *testing.T) {
	ctx := testCtx(t)
	controller := t.TempDir()
	ledgerPath := filepath.Join(controller, "ledger.db")
	lg, err := bolt.Open(ledgerPath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Close(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(controller, "credentials.json")
	if err := os.WriteFile(secret, []byte(`{"token":"hunter2"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	root := openDir(t)
	other := filepath.Join(root, "attempt-other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	otherFile := filepath.Join(other, "output.txt")
	if err := os.WriteFile(otherFile, []byte("another attempt's output"), 0o600); err != nil {
		t.Fatal(err)
	}
	actions := []string{"read:" + ledgerPath, "write:" + ledgerPath, "read:" + secret, "read:" + otherFile,
		"write:" + filepath.Join(other, "planted.txt"), "write:mine.txt"}

	got := hostileRun(t, contain.Config{WorkspaceRoot: root, KeepWorkspaces: true}, nil, false, actions...)
	for _, a := range actions[:5] {
		if !denied(got[a]) {
			t.Errorf("contained host, %s: %q, want permission denied", a, got[a])
		}
	}
	if got["write:mine.txt"] != "ok" {
		t.Errorf("contained host, writing in its own workspace: %q, want ok", got["write:mine.txt"])
	}
	mine, _ := filepath.Glob(filepath.Join(root, "attempt-attempt-a-*", "mine.txt"))
	if len(mine) != 1 {
		t.Errorf("the host's own workspace file: found %v under %s", mine, root)
	}
	after, err := os.ReadFile(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the ledger file changed under a contained host (%d bytes, then %d)", len(before), len(after))
	}
	lg, err = bolt.Open(ledgerPath, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Check(ctx); err != nil {
		t.Errorf("the ledger's Check after a contained host: %v", err)
	}
	lg.Close(ctx)

	// The control: uncontained, every open succeeds (the ledger is only
	// read, so that the check above stays meaningful for other runs).
	got = hostileRun(t, contain.Config{Off: contain.AllLayers}, nil, false, actions[0], actions[2], actions[3])
	for _, a := range []string{actions[0], actions[2], actions[3]} {
		if got[a] != "ok" {
			t.Errorf("uncontained host (the control), %s: %q, want ok", a, got[a])
		}
	}
}

// TestContainedWorkspaceRemoved: a workspace the launcher created is
// removed when Invoke returns (KeepWorkspaces unset).
func TestContainedWorkspaceRemoved(t *testing.T) {
	root := openDir(t)
	got := hostileRun(t, contain.Config{WorkspaceRoot: root}, nil, false, "write:mine.txt")
	if got["write:mine.txt"] != "ok" {
		t.Fatalf("writing in its own workspace: %q", got["write:mine.txt"])
	}
	if left, _ := os.ReadDir(root); len(left) != 0 {
		t.Errorf("the workspace root still holds %d entries after Invoke", len(left))
	}
}

// listenTCP accepts and closes connections on a local port until the
// test ends.
func listenTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// TestContainedNetwork: with network_allowed false the host has no
// network: a TCP connection to a local server (and to PostgreSQL on
// 127.0.0.1:5432 when one is there) and a name resolution against a
// local DNS server fail, and there is no proxy to ask. The control: with
// the network layer off both succeed. The egress rows are
// TestContainedEgress's.
func TestContainedNetwork(t *testing.T) {
	tcp, dns := listenTCP(t), egresstest.ServeDNS(t)
	actions := []string{"connect:" + tcp, "resolve:provider.example@" + dns, "proxyget:http://" + tcp + "/"}
	if c, err := net.Dial("tcp", "127.0.0.1:5432"); err == nil {
		c.Close()
		actions = append(actions, "connect:127.0.0.1:5432")
	} else {
		t.Logf("no server on 127.0.0.1:5432 (%v): the PostgreSQL row is left out", err)
	}
	got := hostileRun(t, contain.Config{}, nil, false, actions...)
	for _, a := range actions {
		if strings.HasPrefix(got[a], "ok") {
			t.Errorf("network_allowed false, %s: %q, want a failure", a, got[a])
		}
	}
	got = hostileRun(t, contain.Config{Off: contain.LayerNetwork}, nil, true, actions[0], actions[1])
	for _, a := range actions[:2] {
		if !strings.HasPrefix(got[a], "ok") {
			t.Errorf("network layer off (the control), %s: %q, want ok", a, got[a])
		}
	}
	if got[actions[1]] != "ok 192.0.2.1" {
		t.Errorf("the control's resolution: %q, want ok 192.0.2.1", got[actions[1]])
	}
}

// logRecords is a slog handler that keeps every record's message and
// attributes as text.
type logRecords struct {
	mu    sync.Mutex
	lines []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.mu.Lock()
	h.lines = append(h.lines, b.String())
	h.mu.Unlock()
	return nil
}

// all returns the records kept so far.
func (h *logRecords) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.lines)
}

func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecords) WithGroup(string) slog.Handler      { return h }

func (h *logRecords) find(sub ...string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.lines {
		all := true
		for _, s := range sub {
			all = all && strings.Contains(l, s)
		}
		if all {
			return true
		}
	}
	return false
}

// egressTable starts, for the test, a local HTTP server answering
// "allowed", another answering "other" and a DNS server, and returns the
// two servers with the egress rows of the hostile table for a host
// admitted to allowed (what each action must get) and the rows' actions.
func egressTable(t *testing.T) (allowed, other string, rows map[string]string, actions []string) {
	allowed, other, dns := egresstest.ServeHTTP(t, "allowed"), egresstest.ServeHTTP(t, "other"), egresstest.ServeDNS(t)
	rows = map[string]string{
		"proxyget:http://" + allowed + "/": "ok 200 allowed",
		"tunnel:" + allowed:                "ok 200 allowed",
		"connect:" + allowed:               "fail", // not directly
		"proxyget:http://" + other + "/":   "403",
		// A redirect is followed by a new request, checked like the first.
		"proxyget:http://" + allowed + "/?to=http://" + other + "/":   "403",
		"proxyget:http://" + allowed + "/?to=http://" + allowed + "/": "ok 200 allowed",
		"tunnel:" + other:                      "403",
		"connect:" + other:                     "fail",
		"tunnel:127.0.0.1:5432":                "403",
		"connect:127.0.0.1:5432":               "fail",
		"tunnel:localhost:" + port(t, allowed): "403", // a name resolving to loopback
		"resolve:provider.example@" + dns:      "fail",
	}
	for a := range rows {
		actions = append(actions, a)
	}
	return allowed, other, rows, actions
}

func port(t *testing.T, hostport string) string {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkEgress compares a hostile report with egressTable's rows.
func checkEgress(t *testing.T, what string, rows, got map[string]string) {
	t.Helper()
	for a, want := range rows {
		res := got[a]
		switch {
		case strings.HasPrefix(want, "ok"):
			if res != want {
				t.Errorf("%s, %s: %q, want %q", what, a, res, want)
			}
		case want == "403":
			if !strings.Contains(res, "403") || !strings.Contains(strings.ToLower(res), "forbidden") {
				t.Errorf("%s, %s: %q, want the proxy's 403", what, a, res)
			}
		default:
			if res == "" || strings.HasPrefix(res, "ok") {
				t.Errorf("%s, %s: %q, want a failure", what, a, res)
			}
		}
	}
}

// TestContainedEgress: a host allowed the network with network_hosts
// naming one local HTTP server reaches it through the egress proxy (a
// plain GET and a CONNECT tunnel), and nothing else: not that server
// directly, not a second local server directly or through the proxy,
// not 127.0.0.1:5432, not a name resolving to loopback; no name resolves
// inside. Each refusal is logged with the host. The control: with the
// network layer off, the host reaches both servers directly.
func TestContainedEgress(t *testing.T) {
	allowed, other, rows, actions := egressTable(t)
	logs := &logRecords{}
	fds, checkGoroutines := leaktest.OpenFDs(t), leaktest.Goroutines(t)
	got := hostileRunContext(t, contain.Config{}, nil, slog.New(logs), func(c *launch.LaunchContext) {
		c.NetworkAllowed = true
		c.NetworkHosts = []string{allowed}
	}, actions...)
	// The proxy ended with the host: no goroutine, no descriptor left.
	checkGoroutines()
	if n := leaktest.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open after the launch, %d before", n, fds)
	}
	checkEgress(t, "egress", rows, got)
	t.Logf("egress: %v", got)
	if !logs.find("egress refused", "host=127.0.0.1", "port="+port(t, other)) || !logs.find("egress refused", "host=localhost") {
		t.Errorf("the refusals are not logged with their host: %q", logs.lines)
	}
	// network_allowed false: no proxy, no route.
	got = hostileRun(t, contain.Config{}, nil, false, "proxyget:http://"+allowed+"/", "connect:"+allowed)
	for a, res := range got {
		if strings.HasPrefix(res, "ok") {
			t.Errorf("network_allowed false, %s: %q, want a failure", a, res)
		}
	}
	got = hostileRun(t, contain.Config{Off: contain.LayerNetwork}, nil, true, "connect:"+allowed, "connect:"+other)
	for a, res := range got {
		if res != "ok" {
			t.Errorf("network layer off (the control), %s: %q, want ok", a, res)
		}
	}
}

// TestContainedScope: a contained host can signal neither this process
// nor reach the abstract unix socket it listens on, with or without the
// network (the scope is Landlock's, not the namespace's); it can signal
// itself. The control: uncontained, both succeed.
func TestContainedScope(t *testing.T) {
	name := fmt.Sprintf("zeo-contain-test-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	self := strconv.Itoa(os.Getpid())
	actions := []string{"signal:" + self, "abstract:" + name, "signal:self"}
	for _, network := range []bool{false, true} {
		// With the network layer on, the namespace hides the abstract
		// socket; with it off, the scope denies it.
		c := contain.Config{}
		if network {
			c.Off = contain.LayerNetwork
		}
		got := hostileRun(t, c, nil, network, actions...)
		if !denied(got[actions[0]]) {
			t.Errorf("network %v: signalling the controller: %q, want EPERM", network, got[actions[0]])
		}
		if got[actions[1]] == "ok" {
			t.Errorf("network %v: connecting to the controller's abstract socket succeeded", network)
		}
		if network && !denied(got[actions[1]]) {
			t.Errorf("network %v: connecting to the controller's abstract socket: %q, want EPERM from the scope", network, got[actions[1]])
		}
		if got[actions[2]] != "ok" {
			t.Errorf("network %v: signalling itself: %q, want ok", network, got[actions[2]])
		}
	}
	got := hostileRun(t, contain.Config{Off: contain.AllLayers}, nil, true, actions...)
	for _, a := range actions {
		if got[a] != "ok" {
			t.Errorf("uncontained (the control), %s: %q, want ok", a, got[a])
		}
	}
}

// TestContainedLimits: a fork bomb, a 10 GiB allocation and a 10 GiB
// file are each stopped by their limit, and the host reports each
// failure; this process is unaffected (a well-behaved host runs after).
// As root the host runs as uid 65534: the kernel does not apply the
// process limit to root.
func TestContainedLimits(t *testing.T) {
	var user *contain.User
	root := openDir(t)
	if os.Geteuid() == 0 {
		user = &contain.User{UID: nobody, GID: nobody}
		if err := os.Chown(root, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	const tenGiB = 10 << 30
	actions := []string{"forkbomb:200", "alloc:" + strconv.Itoa(tenGiB), "bigfile:big.bin:" + strconv.Itoa(tenGiB)}
	got := hostileRun(t, contain.Config{WorkspaceRoot: root,
		Limits: contain.Limits{Processes: 16, FileBytes: 8 << 20}}, user, false, actions...)
	for a, want := range map[string]string{actions[0]: "resource temporarily unavailable",
		actions[1]: "cannot allocate memory", actions[2]: "after 8388608 bytes: write big.bin: file too large"} {
		if !strings.Contains(got[a], want) {
			t.Errorf("%s: %q, want %q", a, got[a], want)
		}
		t.Logf("%s: %s", a, got[a])
	}
	// The controller is unaffected: the control host, uncontained, with
	// smaller asks, does all three.
	got = hostileRun(t, contain.Config{Off: contain.AllLayers, WorkspaceRoot: root}, user, false,
		"forkbomb:20", "alloc:"+strconv.Itoa(64<<20), "bigfile:big.bin:"+strconv.Itoa(16<<20))
	for a, res := range got {
		if !strings.HasPrefix(res, "ok") {
			t.Errorf("uncontained (the control), %s: %q, want ok", a, res)
		}
	}
}

// TestContainmentRefused: a launcher that needs Landlock on a kernel
// without it (simulated) is refused with ErrContainmentUnavailable naming
// what is missing; turning the Landlock layers off launches.
func TestContainmentRefused(t *testing.T) {
	cfg := launch.Config{Interpreter: hostsimPath, Dir: t.TempDir(), Verifier: environment.Trust{}, AllowRootHost: true,
		Containment: contain.Config{AssumeNoLandlock: true}}
	_, err := launch.New(cfg)
	if !errors.Is(err, launch.ErrContainmentUnavailable) || !strings.Contains(err.Error(), "Landlock") {
		t.Fatalf("New without Landlock: %v, want ErrContainmentUnavailable naming Landlock", err)
	}
	cfg.Containment.Off = contain.LayerFilesystem | contain.LayerScope
	l, err := launch.New(cfg)
	if err != nil {
		t.Fatalf("New without Landlock, its layers off: %v", err)
	}
	if s := l.ContainmentSummary(); !strings.HasPrefix(s, "containment: network+limits+no_new_privs+seccomp;") {
		t.Errorf("summary %q", s)
	}
	out, err := l.Invoke(context.Background(), newFixture(t).invocation(t, "echo", map[string]any{"text": "hello"}, nil))
	if err != nil {
		t.Fatalf("the launch with the Landlock layers off: %v (%+v)", err, out)
	}

	cfg.Containment = contain.Config{InitPath: filepath.Join(t.TempDir(), "no-such-init")}
	if _, err := launch.New(cfg); !errors.Is(err, launch.ErrContainmentUnavailable) {
		t.Errorf("New with a missing InitPath: %v, want ErrContainmentUnavailable", err)
	}
}

// TestContainedWarm runs the containment table's filesystem, network and
// scope rows through a warm launch (a zygote's child), beside the same
// invocation cold: a Python hostile host gets the same denials either
// way, and writes in its own workspace.
func TestContainedWarm(t *testing.T) {
	e := newPyEnv(t)
	controller := t.TempDir()
	secret := filepath.Join(controller, "ledger.db")
	if err := os.WriteFile(secret, []byte("the controller's ledger"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := openDir(t)
	other := filepath.Join(root, "attempt-other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("zeo-contain-warm-%d", os.Getpid())
	ln, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tcp := listenTCP(t)
	deny := []string{"read:" + secret, "write:" + secret, "write:" + filepath.Join(other, "planted.txt"),
		"signal:" + strconv.Itoa(os.Getpid()), "connect:" + tcp, "abstract:" + name}
	allow := []string{"write:mine.txt", "signal:self"}
	l := hostileLauncher(t, e, append(deny, allow...), contain.Config{WorkspaceRoot: root}, nil)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	for _, warm := range []bool{false, true} {
		inv := e.echo(t)
		var out *launch.Outcome
		if warm {
			out, _ = z.Invoke(testCtx(t), inv)
		} else {
			out, _ = l.Invoke(testCtx(t), inv)
		}
		if out == nil || out.Process.Warm != warm {
			t.Fatalf("warm %v: outcome %+v", warm, out)
		}
		var r struct {
			Actions map[string]string `json:"actions"`
		}
		if err := json.Unmarshal(out.Process.Stdout, &r); err != nil {
			t.Fatalf("warm %v: report %q: %v (stderr %q)", warm, out.Process.Stdout, err, out.Process.StderrTail)
		}
		for _, a := range deny {
			if r.Actions[a] == "ok" || r.Actions[a] == "" {
				t.Errorf("warm %v, %s: %q, want it refused", warm, a, r.Actions[a])
			}
		}
		for _, a := range allow {
			if r.Actions[a] != "ok" {
				t.Errorf("warm %v, %s: %q, want ok", warm, a, r.Actions[a])
			}
		}
		t.Logf("warm %v: %v", warm, r.Actions)
	}
	// An invocation allowed the network is forked warm too, with its
	// own egress listener (TestContainedEgressWarm).
	inv := e.echo(t)
	inv.Context.NetworkAllowed = true
	out, _ := z.Invoke(testCtx(t), inv)
	if out == nil || !out.Process.Warm || z.Stats().Cold != 0 {
		t.Errorf("an invocation allowed the network, through the zygote: %+v, stats %+v; want it forked warm", out, z.Stats())
	}
}

// TestContainedEgressUnprivileged runs the egress rows from a controller
// that is not root (this test binary again, as uid 65534), the common
// case: its host's user namespace has no mapping, so the init gets the
// capability to bring the loopback up as an ambient one. The rows hold as
// for a root controller, and the host itself has no capability left.
func TestContainedEgressUnprivileged(t *testing.T) {
	requireRoot(t)
	allowed, _, rows, actions := egressTable(t)
	actions = append([]string{"caps:"}, actions...)
	inv := newFixture(t).invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	inv.Context.NetworkAllowed = true
	inv.Context.NetworkHosts = []string{allowed}
	stdout, stderr, _ := newController(t, inv).run(t, "hostile", controllerHostileEnv+"="+strings.Join(actions, ";"))
	var r struct {
		Actions map[string]string `json:"actions"`
	}
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("report %q: %v\n%s", stdout, err, stderr)
	}
	checkEgress(t, "unprivileged controller", rows, r.Actions)
	caps := r.Actions["caps:"]
	for _, set := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
		if !strings.Contains(caps, set+"0000000000000000") {
			t.Errorf("the host's %s is not empty: %q", set, caps)
		}
	}
	t.Logf("unprivileged: %v", r.Actions)
}

// warmNetRows are what a warm host gets on its zygote server's shared
// loopback (beside egressTable's rows), whether it is allowed the
// network or not: a TCP socket (the control) but no other internet
// socket (no UDP, ICMP, raw, SCTP or MPTCP: the socket filter), no TCP
// bind (Landlock), no io_uring (whose operations bypass seccomp), and the
// loopback cannot be taken down (the server dropped CAP_NET_ADMIN, which
// a root controller's server would hold in its user namespace).
func warmNetRows() map[string]string {
	return map[string]string{
		"socket:inet:stream":       "ok",
		"socket:inet6:stream":      "ok",
		"socket:inet:dgram":        "address family not supported by protocol",
		"socket:inet6:dgram":       "address family not supported by protocol",
		"socket:inet:dgram:1":      "address family not supported by protocol", // ICMP echo
		"socket:inet:raw:255":      "address family not supported by protocol",
		"socket:inet:stream:132":   "address family not supported by protocol", // SCTP
		"socket:inet:stream:262":   "address family not supported by protocol", // MPTCP
		"socket:packet:raw":        "address family not supported by protocol",
		"bind:127.0.0.1:0":         "permission denied",
		"bind:127.0.0.1:8080":      "permission denied",
		"iouring:":                 "operation not permitted",
		"lodown:":                  "operation not permitted",
		"connect:127.0.0.1:65000":  "permission denied", // not even a refused port
		"fastopen:127.0.0.1:65000": "permission denied", // sendto(MSG_FASTOPEN) connects too
	}
}

// warmNetActions returns rows' actions.
func warmNetActions(rows map[string]string) []string {
	var out []string
	for a := range rows {
		out = append(out, a)
	}
	return out
}

// checkWarmNet compares a hostile report with warmNetRows.
func checkWarmNet(t *testing.T, what string, got map[string]string) {
	t.Helper()
	for a, want := range warmNetRows() {
		if got[a] != want {
			t.Errorf("%s, %s: %q, want %q", what, a, got[a], want)
		}
	}
}

// TestContainedEgressWarm runs the egress rows with the Python hostile
// host (the real host is Python: urllib's GET through HTTP_PROXY,
// http.client's CONNECT tunnel through HTTPS_PROXY) cold, and through a
// zygote, where it is forked warm, with its own egress listener on the
// server's loopback: the same rows hold (the admitted server reached
// through the proxy, not directly; no second server, no 127.0.0.1:5432,
// no name resolved), and the shared loopback gives it nothing else
// (warmNetRows). A warm invocation not allowed the network gets no route
// and the same loopback rows.
func TestContainedEgressWarm(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	allowed, _, rows, actions := egressTable(t)
	actions = append(append(actions, warmNetActions(warmNetRows())...), "caps:")
	logs := &logRecords{}
	l := hostileLauncher(t, e, actions, contain.Config{WorkspaceRoot: openDir(t)}, slog.New(logs))
	z := e.zygote(t, l, launch.ZygoteConfig{})
	for _, through := range []string{"cold", "zygote"} {
		inv := e.echo(t)
		inv.Context.NetworkAllowed = true
		inv.Context.NetworkHosts = []string{allowed}
		var out *launch.Outcome
		if through == "cold" {
			out, _ = l.Invoke(testCtx(t), inv)
		} else {
			out, _ = z.Invoke(testCtx(t), inv)
		}
		got := hostileReport(t, out)
		checkEgress(t, "python, "+through, rows, got)
		t.Logf("%s: %v", through, got)
		if out.Process.Warm != (through == "zygote") {
			t.Errorf("%s: launched warm %v", through, out.Process.Warm)
		}
		if through == "zygote" {
			checkWarmNet(t, "warm, network_hosts", got)
			// Root in its user namespace (this controller is root), but
			// without the capabilities over the shared namespace.
			var bnd uint64
			if i := strings.Index(got["caps:"], "CapBnd:"); i < 0 {
				t.Errorf("no CapBnd in %q", got["caps:"])
			} else if _, err := fmt.Sscanf(got["caps:"][i:], "CapBnd:%x", &bnd); err != nil || bnd&(1<<12|1<<13) != 0 {
				t.Errorf("the warm host's bounding set %q holds CAP_NET_ADMIN or CAP_NET_RAW (%v)", got["caps:"], err)
			}
		}
	}
	if st := z.Stats(); st.Cold != 0 || st.Forks != 1 {
		t.Errorf("zygote stats %+v, want the invocation allowed the network forked warm", st)
	}
	if logs.find("launching the host cold") {
		t.Errorf("a warm launch fell back to cold: %q", logs.lines)
	}
	if s := l.ContainmentSummary(); strings.Contains(s, "allowed the network cold") {
		t.Errorf("the summary says warm egress is unavailable: %q", s)
	}
	out, _ := z.Invoke(testCtx(t), e.echo(t))
	if out == nil || !out.Process.Warm {
		t.Fatalf("an invocation without the network through the zygote: %+v, want it warm", out)
	}
	got := hostileReport(t, out)
	for a := range rows {
		if res := got[a]; res == "" || strings.HasPrefix(res, "ok") {
			t.Errorf("warm, network_allowed false, %s: %q, want a failure", a, res)
		}
	}
	checkWarmNet(t, "warm, network_allowed false", got)
}

// hostileReport decodes a Python hostile host's report.
func hostileReport(t *testing.T, out *launch.Outcome) map[string]string {
	t.Helper()
	var r struct {
		Actions map[string]string `json:"actions"`
	}
	if out == nil {
		t.Fatal("no outcome")
	}
	if err := json.Unmarshal(out.Process.Stdout, &r); err != nil {
		t.Fatalf("report %q: %v (stderr %q)", out.Process.Stdout, err, out.Process.StderrTail)
	}
	return r.Actions
}

// hostileLauncher returns a launcher of e's Python running the hostile
// stand-in host with actions, contained by c, logging to log when it is
// set.
func hostileLauncher(t *testing.T, e pyEnv, actions []string, c contain.Config, log *slog.Logger) *launch.Launcher {
	t.Helper()
	l, err := launch.New(launch.Config{Interpreter: e.python, Args: []string{"-m", "zeotesthostile"},
		Env: e.env("ZEO_HOSTSIM_HOSTILE=" + strings.Join(actions, ";")), Dir: t.TempDir(),
		Verifier: environment.Trust{}, AllowRootHost: true, Logger: log, Containment: c})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestContainedEgressWarmNetworkOnly: with the filesystem and scope
// layers off, a warm child's Landlock layer governs TCP alone, and the
// egress and shared loopback rows hold as with every layer on.
func TestContainedEgressWarmNetworkOnly(t *testing.T) {
	e := newPyEnv(t)
	allowed, _, rows, actions := egressTable(t)
	actions = append(actions, warmNetActions(warmNetRows())...)
	l := hostileLauncher(t, e, actions, contain.Config{Off: contain.LayerFilesystem | contain.LayerScope}, nil)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	inv := e.echo(t)
	inv.Context.NetworkAllowed = true
	inv.Context.NetworkHosts = []string{allowed}
	out, _ := z.Invoke(testCtx(t), inv)
	got := hostileReport(t, out)
	if !out.Process.Warm {
		t.Fatalf("launched cold: %v", z.Stats())
	}
	checkEgress(t, "network layer only", rows, got)
	checkWarmNet(t, "network layer only", got)
}

// TestContainedEgressWarmUnprivileged runs the egress and shared
// loopback rows through a zygote of a controller that is not root (this
// test binary again, as uid 65534), the common case: its server's init
// brings the loopback up with an ambient capability, and the warm host
// holds no capability at all.
func TestContainedEgressWarmUnprivileged(t *testing.T) {
	requireRoot(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("needs %s, which uid %d can run: %v", python, nobody, err)
	}
	modules := openDir(t)
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	allowed, _, rows, actions := egressTable(t)
	actions = append(append(actions, warmNetActions(warmNetRows())...), "caps:")
	inv := newFixture(t).invocation(t, "echo", map[string]any{"text": "hello"}, nil)
	inv.Context.NetworkAllowed = true
	inv.Context.NetworkHosts = []string{allowed}
	stdout, stderr, _ := newController(t, inv).run(t, "warm hostile", controllerHostileEnv+"="+strings.Join(actions, ";"),
		controllerWarmEnv+"="+python, controllerWarmPathEnv+"="+modules)
	if !strings.Contains(stderr, "warm=true") {
		t.Fatalf("not launched warm: %s", stderr)
	}
	var r struct {
		Actions map[string]string `json:"actions"`
	}
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("report %q: %v\n%s", stdout, err, stderr)
	}
	checkEgress(t, "unprivileged controller, warm", rows, r.Actions)
	checkWarmNet(t, "unprivileged controller, warm", r.Actions)
	for _, set := range []string{"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"} {
		if !strings.Contains(r.Actions["caps:"], set+"0000000000000000") {
			t.Errorf("the warm host's %s is not empty: %q", set, r.Actions["caps:"])
		}
	}
	t.Logf("unprivileged, warm: %v", r.Actions)
}

// TestContainedEgressWarmSiblings runs two warm hosts of one zygote at
// once, each allowed the network with other network_hosts: each reaches
// its own egress listener (the control) and its own hosts, but not its
// sibling's listener (Landlock: its one allowed TCP port is its own; by
// connect(2) or by TCP fast open), so not its sibling's hosts either.
func TestContainedEgressWarmSiblings(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	a, b := egresstest.ServeHTTP(t, "a"), egresstest.ServeHTTP(t, "b")
	meet := openDir(t)
	actions := []string{"rendezvous:" + meet, "proxyget:http://" + a + "/", "proxyget:http://" + b + "/"}
	l := hostileLauncher(t, e, actions, contain.Config{WorkspaceRoot: openDir(t), WritePaths: []string{meet}}, nil)
	z := e.zygote(t, l, launch.ZygoteConfig{})
	var wg sync.WaitGroup
	got := make([]map[string]string, 2)
	outs := make([]*launch.Outcome, 2)
	for i, host := range []string{a, b} {
		inv := e.echo(t)
		inv.Context.NetworkAllowed = true
		inv.Context.NetworkHosts = []string{host}
		// Each waits for the other (up to a minute): a deadline past that,
		// so that a slow sibling's fork is told apart from a lost one.
		inv.Context.DeadlineUnixMS = time.Now().Add(90 * time.Second).UnixMilli()
		wg.Go(func() { outs[i], _ = z.Invoke(context.Background(), inv) })
	}
	wg.Wait()
	for i, out := range outs {
		got[i] = hostileReport(t, out)
		if !out.Process.Warm {
			t.Errorf("host %d was launched cold", i)
		}
		t.Logf("host %d (pid %d): %v", i, out.Process.PID, got[i])
		if r := got[i][actions[0]]; r != "ok own ok; sibling permission denied; sibling by fastopen permission denied" {
			t.Errorf("host %d, its own and its sibling's egress listener: %q, want own ok, sibling (connect and TCP fast open) permission denied", i, r)
		}
	}
	for i, mine := range []string{"a", "b"} {
		for j := range 2 {
			want := "403"
			if i == j {
				want = "ok 200 " + mine
			}
			if r := got[i][actions[1+j]]; !strings.Contains(r, want) {
				t.Errorf("host %d, %s: %q, want %s", i, actions[1+j], r, want)
			}
		}
	}
}

// TestContainedEgressWarmFallback: where warm hosts cannot be kept to
// their own egress proxy (simulated: a kernel without Landlock, the
// Landlock layers off; or the no_new_privs layer off, which the child's
// own layer and filter need), a zygote launches an invocation allowed the
// network cold, contained, with the egress rows holding and a log line
// saying why; never warm with less. Its server's loopback stays down, so
// a warm invocation without the network still has no route at all.
func TestContainedEgressWarmFallback(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	allowed, _, rows, actions := egressTable(t)
	for _, tt := range []struct {
		name    string
		contain contain.Config
		why     string
	}{
		{"no Landlock", contain.Config{AssumeNoLandlock: true, Off: contain.LayerFilesystem | contain.LayerScope},
			"Landlock TCP port rules"},
		{"no no_new_privs", contain.Config{Off: contain.LayerFilesystem | contain.LayerScope | contain.LayerSeccomp | contain.LayerNoNewPrivs},
			"the no_new_privs layer is off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &logRecords{}
			tt.contain.WorkspaceRoot = openDir(t)
			l := hostileLauncher(t, e, actions, tt.contain, slog.New(logs))
			z := e.zygote(t, l, launch.ZygoteConfig{})
			inv := e.echo(t)
			inv.Context.NetworkAllowed = true
			inv.Context.NetworkHosts = []string{allowed}
			out, _ := z.Invoke(testCtx(t), inv)
			got := hostileReport(t, out)
			checkEgress(t, "fallback", rows, got)
			if out.Process.Warm || z.Stats().Cold != 1 {
				t.Errorf("launched warm %v, stats %+v; want it launched cold", out.Process.Warm, z.Stats())
			}
			if !logs.find("launching the host cold", tt.why) {
				t.Errorf("no log line says why the invocation was launched cold: %q", logs.lines)
			}
			if s := l.ContainmentSummary(); !strings.Contains(s, "zygotes launch hosts allowed the network cold: "+tt.why) {
				t.Errorf("the summary does not say that warm egress is unavailable: %q", s)
			}
			out, _ = z.Invoke(testCtx(t), e.echo(t))
			if out == nil || !out.Process.Warm {
				t.Fatalf("an invocation without the network through the zygote: %+v, want it warm", out)
			}
			for a, res := range hostileReport(t, out) {
				if res == "" || strings.HasPrefix(res, "ok") {
					t.Errorf("warm, network_allowed false, %s: %q, want a failure", a, res)
				}
			}
		})
	}
}

// TestContainedSeccomp: the seccomp deny list refuses keyctl and unshare
// with EPERM; with the seccomp layer off (the control) keyctl answers and
// unshare fails for another reason (this multithreaded process).
func TestContainedSeccomp(t *testing.T) {
	got := hostileRun(t, contain.Config{}, nil, false, "keyctl:", "unshare:")
	for _, a := range []string{"keyctl:", "unshare:"} {
		if got[a] != "operation not permitted" {
			t.Errorf("contained, %s: %q, want EPERM from the filter", a, got[a])
		}
	}
	got = hostileRun(t, contain.Config{Off: contain.LayerSeccomp}, nil, false, "keyctl:", "unshare:")
	if !strings.HasPrefix(got["keyctl:"], "ok") || got["unshare:"] == "operation not permitted" {
		t.Errorf("seccomp off (the control): %v, want keyctl ok and unshare failing otherwise", got)
	}
}
