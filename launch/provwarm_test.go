//go:build linux

package launch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/egresstest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testpyhost"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// standInHost pins the stand-in host's sources, the one host version the
// tests' provider-warm servers recognise.
func standInHost() launch.HostVersion {
	files := map[string]canon.Digest{}
	for k, v := range testpyhost.HostFiles() {
		files[k] = canon.Digest(v)
	}
	return launch.HostVersion{Name: "stand-in", Files: files}
}

// providerWarm is the provider-warm setting of the fixture's tenant.
func providerWarm() *launch.ProviderWarm {
	return &launch.ProviderWarm{OrganizationID: "org-a", ProjectID: "project-a", Hosts: []launch.HostVersion{standInHost()}}
}

// provWarmZygote starts a provider-warm zygote of the fixture's binding
// for l, closed when the test ends.
func (e pyEnv) provWarmZygote(t testing.TB, l *launch.Launcher, cfg launch.ZygoteConfig) *launch.Zygote {
	t.Helper()
	if cfg.ProviderWarm == nil {
		cfg.ProviderWarm = providerWarm()
	}
	return e.zygote(t, l, cfg)
}

// TestProviderWarmEcho runs the echo provider-warm three times: each host
// is forked from the server that activated the generation, which said
// how long each step took.
func TestProviderWarmEcho(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{})
	e.echoWarm(t, z, 3)
	st := z.Stats()
	if st.Starts != 1 || st.Forks != 3 || st.Cold != 0 || st.ProviderWarm == nil || st.ProviderWarm.Host != "stand-in" {
		t.Fatalf("stats %+v", st)
	}
	for _, phase := range []string{"validating the inventory", "importing the provider", "activating the generation"} {
		if _, ok := st.ProviderWarm.Phases[phase]; !ok {
			t.Errorf("no phase %q in %v", phase, st.ProviderWarm.Phases)
		}
	}
}

// scriptPeer is a Runtime peer that records every request frame and
// answers each method with the state its script names (allowed when it
// names none): effect requests by their order, the others by method.
type scriptPeer struct {
	states map[string]string // method, or "effect.request#N" (1-based), to the reply state
	// replied, when set, is called after each reply with its method.
	replied func(method string)
	mu      sync.Mutex
	bodies  [][]byte
	effects int
}

func (p *scriptPeer) serve(ctx context.Context, conn net.Conn, pid int, _ canon.Digest) error {
	defer conn.Close()
	for {
		body, err := ipc.ReadFrame(conn, ipc.MaxMessageBytes)
		if err != nil {
			return nil
		}
		p.mu.Lock()
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		req, digest, err := ipc.DecodeRequest(body, ipc.MaxMessageBytes)
		if err != nil {
			return err
		}
		state := p.states[string(req.Method)]
		data := map[string]any{}
		switch req.Method {
		case ipc.MethodEffect:
			p.effects++
			state = p.states[string(req.Method)+"#"+strconv.Itoa(p.effects)]
			e, ed, err := req.DecodeEffect()
			if err != nil {
				return err
			}
			data = map[string]any{"logical_effect_id": e.LogicalEffectID, "effect_request_digest": ed,
				"receipt_id": "receipt-" + e.LogicalEffectID, "authorization_id": "auth-" + e.LogicalEffectID, "effect_disposition": "confirmed"}
		case ipc.MethodPublish:
			_, dd, err := req.DecodePublish()
			if err != nil {
				return err
			}
			data = map[string]any{"data_digest": dd, "artifact_refs": []string{"artifact-" + string(dd)[7:19]}}
		}
		if state == "" {
			state = "allowed"
		}
		if state == "lose" {
			return nil // the reply is never sent
		}
		if state != "allowed" {
			data = map[string]any{}
		}
		reply, err := canon.Marshal(map[string]any{
			"protocol_version": 1, "sequence": req.Sequence, "host_nonce": req.HostNonce, "binding": req.Binding,
			"request_digest": digest, "state": state, "data": data,
		})
		if err != nil {
			return err
		}
		if err := ipc.WriteFrame(conn, reply, ipc.MaxMessageBytes); err != nil {
			return err
		}
		if p.replied != nil {
			p.replied(string(req.Method))
		}
	}
}

// TestProviderWarmMatchesCold runs every scenario of the stand-in host
// cold and provider-warm, alternately, through a recording peer: the
// frames (but for the bootstrap's pid), the stdout line, the exit status
// and how the host was stopped are byte for byte the same.
func TestProviderWarmMatchesCold(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	nonce := strings.Repeat("6e", 32)
	l := e.launcherGrace(t, 300*time.Millisecond, hostModule, nil, e.env("ZEO_TESTHOST_NONCE="+nonce)...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{})
	for _, sc := range []struct {
		name       string
		capability string
		args       map[string]any
		states     map[string]string
		mutate     func(*launch.Invocation)
		deadline   time.Duration // a deadline this far ahead
		cancel     bool          // cancel the invocation once it was admitted
	}{
		{name: "echo"},
		{name: "effects", capability: "two_effects", args: map[string]any{"target": "doc-1"}},
		{name: "uncertain effect", capability: "two_effects", args: map[string]any{"target": "doc-2"},
			states: map[string]string{"effect.request#2": "needs_reconciliation"}},
		{name: "lost effect reply", capability: "two_effects", args: map[string]any{"target": "doc-3"},
			states: map[string]string{"effect.request#1": "lose"}},
		{name: "effect refused", capability: "two_effects", args: map[string]any{"target": "doc-4"},
			states: map[string]string{"effect.request#1": "refused"}},
		{name: "bootstrap refused", states: map[string]string{"bootstrap": "refused"}},
		{name: "admission cancelled", states: map[string]string{"invoke.admit": "cancelled"}},
		{name: "publication waits", states: map[string]string{"result.publish": "waiting_approval"}},
		{name: "failure", capability: "fail"},
		{name: "not admitted", mutate: func(inv *launch.Invocation) { inv.Context.AdmittedCapabilities = []string{"example.other@1.0.0"} }},
		// The host must be admitted and hang before its deadline: tried 1 s
		// ahead first, and again 4 s ahead when a loaded machine started
		// either host too slowly to be admitted in time.
		{name: "deadline kill", capability: "hang", deadline: time.Second},
		{name: "cancellation", capability: "hang", cancel: true},
	} {
		t.Run(sc.name, func(t *testing.T) {
			name, args := sc.capability, sc.args
			if name == "" {
				name = "echo"
			}
			if args == nil {
				args = map[string]any{"text": "hello"}
			}
			// One invocation, run cold and provider-warm at once: the same
			// context (its deadline included) and the same timing.
			var w, c peerRun
			for _, deadline := range []time.Duration{sc.deadline, 4 * sc.deadline} {
				inv := e.f.invocation(t, name, args, nil)
				if sc.mutate != nil {
					sc.mutate(&inv)
				}
				if deadline > 0 {
					inv.Context.DeadlineUnixMS = time.Now().Add(deadline).UnixMilli()
				}
				w, c = invokeBoth(t, sc.states, sc.cancel, inv, z, l)
				// bootstrap and invoke.admit: both hosts reached the capability.
				if deadline == 0 || (w.peer.frames() >= 2 && c.peer.frames() >= 2) {
					break
				}
				t.Logf("a host was not admitted %v before its deadline; again with a later one", deadline)
			}
			if w.out == nil || c.out == nil {
				t.Fatalf("provider-warm: %v; cold: %v", w.err, c.err)
			}
			wout, wp, cout, cp := w.out, w.peer, c.out, c.peer
			if !wout.Process.Warm || cout.Process.Warm {
				t.Fatalf("warm %v, cold %v", wout.Process.Warm, cout.Process.Warm)
			}
			pid := func(p int) []byte { return []byte(`"pid":` + strconv.Itoa(p) + `}`) }
			if len(wp.bodies) != len(cp.bodies) {
				t.Fatalf("%d frames provider-warm, %d cold:\nwarm %s\ncold %s", len(wp.bodies), len(cp.bodies), wp.bodies, cp.bodies)
			}
			for i := range cp.bodies {
				w := bytes.Replace(wp.bodies[i], pid(wout.Process.PID), []byte(`"pid":PID}`), 1)
				c := bytes.Replace(cp.bodies[i], pid(cout.Process.PID), []byte(`"pid":PID}`), 1)
				if !bytes.Equal(w, c) {
					t.Errorf("frame %d differs:\nwarm %s\ncold %s", i+1, wp.bodies[i], cp.bodies[i])
				}
			}
			wpr, cpr := wout.Process, cout.Process
			if !bytes.Equal(wpr.Stdout, cpr.Stdout) || wpr.ExitCode != cpr.ExitCode || wpr.Signal != cpr.Signal ||
				wpr.Stopped != cpr.Stopped || wout.Result.State != cout.Result.State {
				t.Errorf("provider-warm: stdout %q exit %d signal %v stopped %v state %s\ncold: stdout %q exit %d signal %v stopped %v state %s\nwarm stderr %s",
					wpr.Stdout, wpr.ExitCode, wpr.Signal, wpr.Stopped, wout.Result.State,
					cpr.Stdout, cpr.ExitCode, cpr.Signal, cpr.Stopped, cout.Result.State, wpr.StderrTail)
			}
			t.Logf("%s: state %s, exit %d, %d frames", sc.name, cout.Result.State, cpr.ExitCode, len(cp.bodies))
		})
	}
}

// peerRun is one side of invokeBoth.
type peerRun struct {
	out  *launch.Outcome
	err  error
	peer *scriptPeer
}

// invokeBoth runs inv provider-warm through z and cold through l at
// once, each answered by a scriptPeer replying with states; with
// cancel, each invocation is cancelled once its invoke.admit is
// answered.
func invokeBoth(t *testing.T, states map[string]string, cancel bool, inv launch.Invocation, z *launch.Zygote, l *launch.Launcher) (warm, cold peerRun) {
	run := func(invoke func(context.Context, launch.Invocation, func(context.Context, net.Conn, int, canon.Digest) error) (*launch.Outcome, error), to *peerRun) {
		ctx, stop := context.WithCancel(testCtx(t))
		defer stop()
		to.peer = &scriptPeer{states: states}
		if cancel {
			to.peer.replied = func(method string) {
				if method == string(ipc.MethodAdmit) {
					stop()
				}
			}
		}
		to.out, to.err = invoke(ctx, inv, to.peer.serve)
	}
	var wg sync.WaitGroup
	wg.Go(func() { run(z.InvokeWithPeer, &warm) })
	wg.Go(func() { run(l.InvokeWithPeer, &cold) })
	wg.Wait()
	return warm, cold
}

// frames is how many requests p has read.
func (p *scriptPeer) frames() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

// writeProvider writes a provider module into e's modules directory and
// returns the fixture's binding with its factory.
func (e pyEnv) writeProvider(t testing.TB, name, src string) manifest.ProviderBinding {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.modules, name+".py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	b := e.f.binding
	b.Factory = name + ":factory"
	return b
}

// errorCode is the result's error code, "" when it has none.
func errorCode(out *launch.Outcome) string {
	if out == nil || out.Result.ErrorCode == nil {
		return ""
	}
	return *out.Result.ErrorCode
}

// TestProviderWarmRefusesLoadedState: a provider whose import leaves a
// thread running, a file open or a child process is refused warm, the
// server says which, and the provider runs cold; so does a host that is
// not a pinned version.
func TestProviderWarmRefusesLoadedState(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	for _, tt := range []struct {
		name, module, src string
		hosts             []launch.HostVersion
		want              string
	}{
		{"thread", "zeotestpwthread", "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\nfrom demo_provider import factory\n",
			nil, "loading left 2 threads running"},
		{"file", "zeotestpwfile", "KEPT = open(__file__, 'rb')\nfrom demo_provider import factory\n",
			nil, "loading left descriptors open"},
		{"child", "zeotestpwchild", "import subprocess\nCHILD = subprocess.Popen(['sleep', '3600'])\nfrom demo_provider import factory\n",
			nil, "loading left child processes"},
		{"unknown host", "zeotestpwplain", "from demo_provider import factory\n",
			[]launch.HostVersion{{Name: "other", Files: map[string]canon.Digest{"host.py": canon.Sum([]byte("a")), "catalogue.py": canon.Sum([]byte("b"))}}},
			"the host is not a version this server was checked against"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := e.writeProvider(t, tt.module, tt.src)
			l := e.launcher(t, hostModule, nil, e.env()...)
			pw := providerWarm()
			if tt.hosts != nil {
				pw.Hosts = tt.hosts
			}
			_, err := l.StartZygote(testCtx(t), launch.ZygoteConfig{Provider: b, ProviderWarm: pw})
			if !errors.Is(err, launch.ErrZygoteStart) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("StartZygote: %v, want ErrZygoteStart saying %q", err, tt.want)
			}
			inv := e.echo(t)
			inv.Context.Provider = b
			out, err := l.Invoke(testCtx(t), inv)
			mustSucceed(t, out, err)
		})
	}
}

// TestProviderWarmColdForOthers: an invocation of another tenant, or of
// another binding than the one the server activated (a newer generation),
// is launched cold, with a warning saying why, and never reaches the
// server.
func TestProviderWarmColdForOthers(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	var log logBuffer
	l := e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{})
	for _, tt := range []struct {
		name   string
		mutate func(*launch.Invocation)
		log    string
	}{
		{"another organization", func(inv *launch.Invocation) { inv.Context.Attempt.OrganizationID = "org-b" }, "tenant"},
		{"another project", func(inv *launch.Invocation) { inv.Context.Attempt.ProjectID = "project-b" }, "tenant"},
		{"another generation", func(inv *launch.Invocation) { inv.Context.Provider.Generation++ }, "is not the one the provider-warm server activated"},
	} {
		inv := e.echo(t)
		tt.mutate(&inv)
		out, err := z.Invoke(testCtx(t), inv)
		mustSucceed(t, out, err)
		if out.Process.Warm {
			t.Fatalf("%s: launched warm", tt.name)
		}
		if !strings.Contains(log.String(), tt.log) {
			t.Fatalf("%s: the log does not say %q:\n%s", tt.name, tt.log, log.String())
		}
	}
	if st := z.Stats(); st.Forks != 0 || st.Cold != 3 || st.Starts != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestProviderWarmModuleState: a provider that writes module state at
// invocation time leaves it in its own child; every later child of the
// same server starts from the server's state.
func TestProviderWarmModuleState(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	b := e.writeProvider(t, "zeotestpwstate", `
CALLS = []


def echo(args, ctx):
    CALLS.append(args["text"])
    raise RuntimeError("STATE_CALLS_%d" % len(CALLS))


def factory():
    return {"echo": echo}
`)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{Provider: b})
	for i := range 3 {
		inv := e.echo(t)
		inv.Context.Provider = b
		out, err := z.Invoke(testCtx(t), inv)
		if err != nil || !out.Process.Warm || errorCode(out) != "STATE_CALLS_1" {
			t.Fatalf("invocation %d: err %v, warm %v, error code %q", i, err, out != nil && out.Process.Warm, errorCode(out))
		}
	}
}

// copyHostDeps copies the third-party packages the stand-in host imports
// (pydantic, jsonschema and what they import) from python's environment
// into dir, where testpyhost.Install wrote the host, so that another interpreter of the same version, run by
// another user, finds them there.
func copyHostDeps(t *testing.T, python, dir string) {
	t.Helper()
	script := `
import os, shutil, sys, sysconfig
sys.path.insert(0, sys.argv[1])
import pydantic, jsonschema, zeotestlarge
import zeo_core.adapters.runtime_host.host
jsonschema.Draft202012Validator.check_schema({"type": "object"})
site = os.path.realpath(sysconfig.get_paths()["purelib"])
tops = set()
for m in list(sys.modules.values()):
    f = getattr(m, "__file__", None)
    if f and os.path.realpath(f).startswith(site + os.sep):
        tops.add(os.path.relpath(os.path.realpath(f), site).split(os.sep)[0])
for top in sorted(tops):
    src = os.path.join(site, top)
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(sys.argv[1], top), ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copy(src, sys.argv[1])
`
	if out, err := exec.Command(python, "-c", script, dir).CombinedOutput(); err != nil {
		t.Skipf("cannot copy the host's dependencies for another interpreter: %v: %s", err, out)
	}
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	}); err != nil {
		t.Fatal(err)
	}
}

// serverChildren returns the pids of the children of process pid.
func serverChildren(pid int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return nil
	}
	var out []int
	for f := range strings.FieldsSeq(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// TestProviderWarmMemoryIsolation runs a provider-warm server and its
// hosts as uid 65534, contained (the default): a host reads its own
// memory, but neither its server's (non-dumpable) nor a sibling host's
// (another Landlock domain) while that sibling runs. Without containment
// the sibling is readable, as two cold hosts of one user read each other:
// the layer is what stops it.
func TestProviderWarmMemoryIsolation(t *testing.T) {
	requireRoot(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skipf("needs %s, which uid %d can run: %v", python, nobody, err)
	}
	e := newPyEnv(t)
	version := func(p string) string {
		out, _ := exec.Command(p, "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output()
		return strings.TrimSpace(string(out))
	}
	if v, w := version(python), version(e.python); v == "" || v != w {
		t.Skipf("%s is Python %q, not %q as %s, whose packages it would load", python, v, w, e.python)
	}
	modules := openDir(t)
	if err := testpyhost.Install(modules); err != nil {
		t.Fatal(err)
	}
	copyHostDeps(t, e.python, modules)
	e.python, e.modules = python, modules
	b := e.writeProvider(t, "zeotestpwpeek", `
import os

from demo_provider import hang


def _read(pid):
    try:
        with open("/proc/%d/maps" % pid) as f:
            lo = int(f.readline().split("-")[0], 16)
        with open("/proc/%d/mem" % pid, "rb") as f:
            f.seek(lo)
            f.read(16)
        return "READ"
    except PermissionError:
        return "DENIED"
    except OSError as e:
        return "ERROR_%d" % e.errno


def echo(args, ctx):
    sibling = int(args["text"].split()[1])
    raise RuntimeError("SELF_%s_SERVER_%s_SIBLING_%s" % (_read(os.getpid()), _read(os.getppid()), _read(sibling)))


def factory():
    return {"echo": echo, "hang": hang}
`)
	l, err := launch.New(launch.Config{Interpreter: python, Args: []string{"-m", hostModule}, Env: e.env(),
		Dir: openDir(t), Verifier: environment.Trust{}, User: &contain.User{UID: nobody, GID: nobody},
		WaitDelay: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{Provider: b})
	server := z.Stats().ServerPID

	hangCtx, stop := context.WithCancel(testCtx(t))
	defer stop()
	hang := e.f.invocation(t, "hang", map[string]any{"text": "wait"}, nil)
	hang.Context.Provider = b
	// The sibling is read once it was admitted: it is then the host,
	// running its capability, dumpable as a cold host is.
	admitted := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		z.InvokeWithPeer(hangCtx, hang, func(ctx context.Context, conn net.Conn, pid int, d canon.Digest) error {
			p := &scriptPeer{replied: func(method string) {
				if method == string(ipc.MethodAdmit) {
					admitted <- pid
				}
			}}
			return p.serve(ctx, conn, pid, d)
		})
	}()
	var sibling int
	select {
	case sibling = <-admitted:
	case <-done:
		t.Fatal("the hanging host ended before it was admitted")
	}
	if !slices.Contains(serverChildren(server), sibling) {
		t.Fatalf("host %d is not a child of the server %d (%v)", sibling, server, serverChildren(server))
	}
	peek := e.f.invocation(t, "echo", map[string]any{"text": "peek " + strconv.Itoa(sibling)}, nil)
	peek.Context.Provider = b
	out, err := z.Invoke(testCtx(t), peek)
	if err != nil || !out.Process.Warm {
		t.Fatalf("err %v, warm %v, stderr %s", err, out != nil && out.Process.Warm, out.Process.StderrTail)
	}
	if got, want := errorCode(out), "SELF_READ_SERVER_DENIED_SIBLING_DENIED"; got != want {
		t.Fatalf("the host read %q, want %q", got, want)
	}
	if !alive(sibling) {
		t.Fatal("the sibling was not running while it was read")
	}
	stop()
	<-done
}

// TestProviderWarmNoLeaks runs leakCampaign(16) provider-warm
// invocations four at a time, then closes the zygote: this
// process's descriptors, goroutines and child processes are back where
// they started, and no host or server is left.
func TestProviderWarmNoLeaks(t *testing.T) {
	warmNoLeaks(t, "provider-warm", 30*time.Minute, providerWarm(), false)
}

// TestProviderWarmEgressNoLeaks is TestProviderWarmNoLeaks with
// invocations allowed the network: each host's egress listener and proxy
// end with it.
func TestProviderWarmEgressNoLeaks(t *testing.T) {
	warmNoLeaks(t, "provider-warm egress", 30*time.Minute, providerWarm(), true)
}

// TestProviderWarmServerLost: a provider-warm server that dies is
// replaced by a fresh one, which activates the generation again; one that
// hangs or lies fails closed (the invocation launches cold, with a
// warning saying why) and is replaced.
func TestProviderWarmServerLost(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	for _, tt := range []struct {
		name   string
		source []byte
		act    func(t *testing.T, server int)
		lost   bool // the zygote notices the server's loss before the invocation
		cold   bool
		log    string
	}{
		{name: "dies", act: func(t *testing.T, server int) {
			syscall.Kill(server, syscall.SIGKILL)
			waitDead(t, server)
		}, lost: true},
		{name: "hangs", act: func(t *testing.T, server int) { syscall.Kill(server, syscall.SIGSTOP) },
			cold: true, log: "did not answer a fork request"},
		{name: "lies", source: []byte(strings.Replace(string(launch.ProvwarmSource), "theirs = os.pidfd_open(pid)", "theirs = os.pidfd_open(os.getpid())", 1)),
			cold: true, log: "names pid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log logBuffer
			l := e.launcher(t, hostModule, slog.New(slog.NewTextHandler(&log, nil)), e.env()...)
			cfg := launch.ZygoteConfig{Provider: e.f.binding, ProviderWarm: providerWarm()}
			if tt.name == "hangs" {
				cfg.ReplyTimeout = time.Second // what a stopped server is given
			}
			source := tt.source
			if source == nil {
				source = launch.ProvwarmSource
			}
			z, err := l.StartProviderWarmFrom(testCtx(t), cfg, source)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { z.Close() })
			server := z.Stats().ServerPID
			if tt.act != nil {
				tt.act(t, server)
			}
			// A server that died just before a fork request is another
			// case (the host launches cold): let the zygote see the loss.
			for i := 0; tt.lost && !z.ServerLost(); i++ {
				if i == 1000 {
					t.Fatal("the zygote never noticed its server's death")
				}
				time.Sleep(10 * time.Millisecond)
			}
			out, err := z.Invoke(testCtx(t), e.echo(t))
			mustSucceed(t, out, err)
			if out.Process.Warm == tt.cold {
				t.Fatalf("warm %v, want %v", out.Process.Warm, !tt.cold)
			}
			waitDead(t, server)
			if !strings.Contains(log.String(), tt.log) {
				t.Fatalf("the log does not say %q:\n%s", tt.log, log.String())
			}
			if tt.source != nil {
				return // a lying server is replaced by another liar
			}
			out, err = z.Invoke(testCtx(t), e.echo(t))
			mustSucceed(t, out, err)
			if st := z.Stats(); !out.Process.Warm || st.Starts != 2 || st.ServerPID == server || st.ProviderWarm == nil {
				t.Fatalf("after the loss: warm %v, stats %+v", out.Process.Warm, st)
			}
		})
	}
}

// TestProviderWarmLargeProvider runs the large stand-in provider (tens of
// capabilities with large schemas, whose generation costs the server real
// work) cold and provider-warm at once: the same frames, stdout line and
// exit status. By default with 8 of its 30 capabilities; all of them with
// ZEO_LONG_TESTS=1. Not under -short: a cold call of it takes seconds.
func TestProviderWarmLargeProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("a cold call of the large provider takes seconds")
	}
	t.Parallel()
	e := newPyEnv(t)
	// Its shape by default, its full size with the long tests.
	size := testpyhost.LargeCapabilitiesEnv + "=" + strconv.Itoa(longtest.Size(8, 30))
	raws, err := testpyhost.LargeManifests(e.python, e.modules, size)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{binding: e.f.binding, byName: map[string]manifest.CapabilityManifest{}}
	f.binding.Manifests = nil
	for _, r := range raws {
		m, err := manifest.DecodeManifest(r)
		if err != nil {
			t.Fatal(err)
		}
		f.binding.Manifests = append(f.binding.Manifests, m)
		f.byName[m.ID.Name] = m
	}
	f.binding.Factory = testpyhost.LargeProvider
	if f.binding.ManifestDigest, err = manifest.InventoryDigest(f.binding.Manifests); err != nil {
		t.Fatal(err)
	}
	l := e.launcher(t, hostModule, nil, e.env("ZEO_TESTHOST_NONCE="+strings.Repeat("1a", 32), size)...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{Provider: f.binding})
	if st := z.Stats(); st.ProviderWarm == nil || len(st.ProviderWarm.Phases) == 0 {
		t.Fatalf("stats %+v", st)
	} else {
		t.Logf("the server's phases: %v", st.ProviderWarm.Phases)
	}
	inv := f.invocation(t, "cap_07", map[string]any{"text": "hello"}, nil)
	// A cold call imports and validates the whole provider: at its full
	// size on a loaded machine that took more than the fixture's 20 s.
	// What is compared here is the frames, not the time.
	inv.Context.DeadlineUnixMS = time.Now().Add(3 * time.Minute).UnixMilli()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wp, cp scriptPeer
	var wout, cout *launch.Outcome
	var werr, cerr error
	var wg sync.WaitGroup
	wg.Go(func() { wout, werr = z.InvokeWithPeer(ctx, inv, wp.serve) })
	wg.Go(func() { cout, cerr = l.InvokeWithPeer(ctx, inv, cp.serve) })
	wg.Wait()
	mustSucceed(t, wout, werr)
	mustSucceed(t, cout, cerr)
	if !wout.Process.Warm || cout.Process.Warm || len(cp.bodies) != 3 || len(wp.bodies) != 3 {
		t.Fatalf("warm %v, cold %v, frames %d and %d", wout.Process.Warm, cout.Process.Warm, len(wp.bodies), len(cp.bodies))
	}
	pid := func(p int) []byte { return []byte(`"pid":` + strconv.Itoa(p) + `}`) }
	for i := range cp.bodies {
		w := bytes.Replace(wp.bodies[i], pid(wout.Process.PID), []byte(`"pid":PID}`), 1)
		c := bytes.Replace(cp.bodies[i], pid(cout.Process.PID), []byte(`"pid":PID}`), 1)
		if !bytes.Equal(w, c) {
			t.Errorf("frame %d differs:\nwarm %s\ncold %s", i+1, wp.bodies[i], cp.bodies[i])
		}
	}
	if !bytes.Equal(wout.Process.Stdout, cout.Process.Stdout) || wout.Process.ExitCode != cout.Process.ExitCode {
		t.Errorf("provider-warm stdout %q exit %d; cold stdout %q exit %d", wout.Process.Stdout, wout.Process.ExitCode,
			cout.Process.Stdout, cout.Process.ExitCode)
	}
	t.Logf("cold %v, provider-warm %v (elapsed in the host)", cout.Process.Elapsed, wout.Process.Elapsed)
}

// TestProviderWarmLoadedStateCheckedOutside: a server that says it is
// ready although loading left a thread, a descriptor or a child process
// (its own check removed) is caught by the launcher's look at its /proc
// entries, and refused.
func TestProviderWarmLoadedStateCheckedOutside(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	liar := []byte(strings.Replace(string(launch.ProvwarmSource), "refusal = self.loaded_state()", "refusal = None", 1))
	for _, tt := range []struct{ name, module, src, want string }{
		{"thread", "zeotestpwthread2", "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\nfrom demo_provider import factory\n",
			"it runs 2 threads"},
		{"file", "zeotestpwfile2", "KEPT = open(__file__, 'rb')\nfrom demo_provider import factory\n", "it holds 5 descriptors"},
		{"child", "zeotestpwchild2", "import subprocess\nCHILD = subprocess.Popen(['sleep', '3600'])\nfrom demo_provider import factory\n",
			"it has 1 child processes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := e.writeProvider(t, tt.module, tt.src)
			l := e.launcher(t, hostModule, nil, e.env()...)
			_, err := l.StartProviderWarmFrom(testCtx(t), launch.ZygoteConfig{Provider: b, ProviderWarm: providerWarm()}, liar)
			if !errors.Is(err, launch.ErrZygoteStart) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("StartZygote: %v, want ErrZygoteStart saying %q", err, tt.want)
			}
		})
	}
}

// TestProviderWarmChildComparesBinding: a child whose server activated
// another binding than the one its context carries (here a server patched
// to remember a wrong one; the launcher compares digests before it forks,
// so only a lying server gets there) refuses the call as the host refuses
// a bad binding: a protocol error, with nothing of the provider run.
func TestProviderWarmChildComparesBinding(t *testing.T) {
	t.Parallel()
	e := newPyEnv(t)
	old := "self.host, self.generation, self.binding = host, generation, binding"
	src := string(launch.ProvwarmSource)
	if strings.Count(src, old) != 1 {
		t.Fatalf("the server program no longer holds %q once", old)
	}
	liar := strings.Replace(src, old, old+`.model_copy(update={"generation": binding.generation + 1})`, 1)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z, err := l.StartProviderWarmFrom(testCtx(t), launch.ZygoteConfig{Provider: e.f.binding, ProviderWarm: providerWarm()}, []byte(liar))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.Close() })
	var p scriptPeer
	out, err := z.InvokeWithPeer(testCtx(t), e.echo(t), p.serve)
	if err != nil || !out.Process.Warm || out.Result.State != launch.StateProtocolError || errorCode(out) != "ZEO_HOST_PROTOCOL" {
		t.Fatalf("err %v, warm %v, state %s, error code %q", err, out != nil && out.Process.Warm, out.Result.State, errorCode(out))
	}
	for _, b := range p.bodies {
		if bytes.Contains(b, []byte(`"method":"invoke.admit"`)) {
			t.Fatal("the call was admitted")
		}
	}
}

// TestProviderWarmEgress: a provider-warm host allowed the network is
// forked warm with its own egress listener, which the server binds after
// the fork and the launcher names in the job it sends the child: the
// provider reaches its admitted server through the proxy, not a second
// server, not the admitted one directly, and opens no UDP socket.
func TestProviderWarmEgress(t *testing.T) {
	e := newPyEnv(t)
	allowed, other := egresstest.ServeHTTP(t, "allowed"), egresstest.ServeHTTP(t, "other")
	b := e.writeProvider(t, "zeotestpwegress", `
import socket
import urllib.error
import urllib.request

from demo_provider import hang


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return "%d%s" % (r.status, r.read(64).decode().strip().upper())
    except urllib.error.HTTPError as e:
        return str(e.code)
    except OSError as e:
        return "E%d" % (e.errno or 0)


def _try(fn):
    try:
        fn()
        return "OK"
    except OSError as e:
        return "E%d" % (e.errno or 0)


def echo(args, ctx):
    allowed, other = args["text"].split()
    host, _, port = allowed.rpartition(":")
    raise RuntimeError("A_%s_O_%s_D_%s_U_%s" % (
        _get("http://%s/" % allowed), _get("http://%s/" % other),
        _try(lambda: socket.create_connection((host, int(port)), timeout=3).close()),
        _try(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close())))


def factory():
    return {"echo": echo, "hang": hang}
`)
	l := e.launcher(t, hostModule, nil, e.env()...)
	z := e.provWarmZygote(t, l, launch.ZygoteConfig{Provider: b})
	for i := range 2 {
		inv := e.f.invocation(t, "echo", map[string]any{"text": allowed + " " + other}, nil)
		inv.Context.Provider = b
		inv.Context.NetworkAllowed = true
		inv.Context.NetworkHosts = []string{allowed}
		out, err := z.Invoke(testCtx(t), inv)
		if err != nil || !out.Process.Warm {
			t.Fatalf("invocation %d: err %v, warm %v", i, err, out != nil && out.Process.Warm)
		}
		want := fmt.Sprintf("A_200ALLOWED_O_403_D_E%d_U_E%d", syscall.EACCES, syscall.EAFNOSUPPORT)
		if got := errorCode(out); got != want {
			t.Fatalf("invocation %d: the provider got %q, want %q (stderr %s)", i, got, want, out.Process.StderrTail)
		}
	}
	if st := z.Stats(); st.Cold != 0 || st.Forks != 2 {
		t.Errorf("stats %+v, want both forked warm", st)
	}
}
