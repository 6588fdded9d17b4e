package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/childproc"
	"github.com/zeoruntime/runtimeipc/ipc"
	"github.com/zeoruntime/runtimeipc/launch"
	"github.com/zeoruntime/runtimeipc/launch/contain"
	"github.com/zeoruntime/runtimeipc/launch/environment"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/bolt"
	"github.com/zeoruntime/runtimeipc/ledger/memory"
	"github.com/zeoruntime/runtimeipc/manifest"
	"github.com/zeoruntime/runtimeipc/supervise"
	"github.com/zeoruntime/runtimeipc/supervise/port"
)

// One capability operation end to end: supervise.Supervisor.Invoke with
// the simulated host executable on the bolt ledger (every write fsynced),
// beside launch.Invoke of the same host and capability answered by a
// trivial in-memory handler, in the same run.
//
//	cd bench && go test -run '^$' -bench Supervise -benchmem -count 5

// superviseFixture is what every row shares.
type superviseFixture struct {
	binding  manifest.ProviderBinding
	hostsim  string // the simulated host executable
	launcher *launch.Launcher
	echo     launch.Invocation // for launch.Invoke: context, request, allow-all handler
	seq      atomic.Int64      // operation ids
}

func newSuperviseFixture(b *testing.B) *superviseFixture {
	b.Helper()
	raw, err := os.ReadFile("../testdata/examples/binding.json")
	if err != nil {
		b.Fatal(err)
	}
	binding, err := manifest.DecodeBinding(raw)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	hostsim := buildTool(b, dir, "zeo-hostsim", "./internal/testkit/hostsim/cmd/zeo-hostsim", true)
	l, err := launch.New(launch.Config{Interpreter: hostsim, Dir: b.TempDir(), Verifier: environment.Trust{}, AllowRootHost: true,
		Containment: contain.Config{Off: contain.AllLayers}}) // as these rows always were; see BenchmarkContainment
	if err != nil {
		b.Fatal(err)
	}
	m, err := manifest.Describe(binding.Manifests, "example.echo@1.0.0")
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"text": "hello"}
	prep, err := manifest.PrepareRequest(m, args)
	if err != nil {
		b.Fatal(err)
	}
	req, err := launch.EncodeRequest("example.echo@1.0.0", prep.Arguments)
	if err != nil {
		b.Fatal(err)
	}
	echo := launch.Invocation{
		Context: launch.LaunchContext{
			Provider: binding,
			Attempt: ipc.AttemptBinding{OrganizationID: "org", ProjectID: "project", SeatID: "seat",
				RuntimeBindingID: "runtime", PacketID: "packet", OperationID: "op", AttemptID: "attempt",
				FencingGeneration: 1, CapabilityID: "example.echo@1.0.0", RequestDigest: prep.RequestDigest,
				ManifestDigest: binding.ManifestDigest},
			BootstrapID: "bootstrap", AdmittedCapabilities: []string{"example.echo@1.0.0"},
			DeadlineUnixMS: time.Now().Add(time.Hour).UnixMilli(), Workspace: "workspace",
		},
		Request: req, Handler: allowAll{},
	}
	return &superviseFixture{binding: binding, hostsim: hostsim, launcher: l, echo: echo}
}

// supervisor returns a Supervisor on a fresh bolt ledger, and the ledger.
func (f *superviseFixture) supervisor(b *testing.B, observer func(supervise.Event), l ledger.Ledger) *supervise.Supervisor {
	b.Helper()
	s, err := supervise.New(supervise.Config{Ledger: l, Launcher: f.launcher, Provider: f.binding, HostPythonVersion: f.binding.PythonVersion,
		Dispatcher: receiptDispatcher{}, SeatID: "seat", RuntimeBindingID: "runtime", Workspace: "workspace",
		Observer: observer})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func openBolt(b *testing.B) *bolt.Ledger {
	b.Helper()
	l, err := bolt.Open(filepath.Join(b.TempDir(), "ledger.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close(context.Background()) })
	return l
}

// receiptDispatcher consumes every effect at once.
type receiptDispatcher struct{}

func (receiptDispatcher) Dispatch(_ context.Context, d port.Dispatch) (port.Receipt, error) {
	return port.Receipt{ReceiptID: "receipt-" + d.LogicalEffectID}, nil
}

// call is a new operation of capability with args.
func (f *superviseFixture) call(capability string, args map[string]any, budget int64) supervise.Call {
	return supervise.Call{Scope: ledger.Scope{OrganizationID: "org", ProjectID: "project"},
		OperationID: fmt.Sprint("op-", f.seq.Add(1)), CapabilityID: capability, Arguments: args, EffectBudget: budget}
}

func (f *superviseFixture) echoCall() supervise.Call {
	return f.call("example.echo@1.0.0", map[string]any{"text": "hello"}, 0)
}

func (f *superviseFixture) effectsCall() supervise.Call {
	return f.call("example.two_effects@1.0.0", map[string]any{"target": "doc-1"}, 2)
}

func invokeSucceeded(b *testing.B, s *supervise.Supervisor, c supervise.Call) *supervise.Outcome {
	o, err := s.Invoke(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return o
}

func launchSucceeded(b *testing.B, f *superviseFixture) {
	out, err := f.launcher.Invoke(context.Background(), f.echo)
	if err != nil {
		b.Fatal(err)
	}
	if out.Result.State != launch.StateSucceeded {
		b.Fatalf("state %s", out.Result.State)
	}
}

// cpu returns the CPU time (user + system) of this process, which
// excludes its children, and of its reaped children: the Runtime's own
// CPU and the hosts'.
func cpu() (self, children time.Duration) { return processCPU(), childrenCPU() }

// usage is what reportRuntimeCPU counts from: this process's CPU, its
// reaped children's, and its voluntary context switches (each a wait that
// put a thread to sleep: on a virtual machine every one costs tens of
// microseconds of CPU to sleep and wake).
type usage struct {
	self, children time.Duration
	vcsw           int64
}

func usageNow() usage {
	self, children := cpu()
	return usage{self, children, voluntarySwitches()}
}

// reportRuntimeCPU reports the CPU per op spent by this process (the
// Runtime) and by the host processes, and this process's voluntary
// context switches per op, from u0, taken before the loop.
func reportRuntimeCPU(b *testing.B, u0 usage, ops int) {
	u1 := usageNow()
	b.ReportMetric(float64((u1.self-u0.self).Nanoseconds())/float64(ops), "runtime-cpu-ns/op")
	b.ReportMetric(float64((u1.children-u0.children).Nanoseconds())/float64(ops), "host-cpu-ns/op")
	b.ReportMetric(float64(u1.vcsw-u0.vcsw)/float64(ops), "vcsw/op")
}

// reportCommits reports the ledger's fsynced commits per op (each a bbolt
// Commit: two fdatasyncs) and its writes per op.
func reportCommits(b *testing.B, l *bolt.Ledger, s0 bolt.Stats, ops int) {
	s1 := l.Stats()
	b.ReportMetric(float64(s1.Commits-s0.Commits)/float64(ops), "commits/op")
	b.ReportMetric(float64(s1.Writes-s0.Writes)/float64(ops), "writes/op")
}

// BenchmarkSupervise compares, in one run:
//
//   - Launch: launch.Invoke of the simulated host, example.echo, answered
//     by a trivial in-memory handler (no ledger): the floor;
//   - Invoke: supervise.Supervisor.Invoke of example.echo on the bolt
//     ledger: a new operation per iteration (create, attempt, context,
//     bootstrap id, launch, redemption, admission, publish, outcome);
//   - InvokeMemory: the same on the memory ledger, which separates the
//     cost of the durable writes from the rest;
//   - TwoEffects: the same for example.two_effects (two effects, each
//     authorized, dispatched and confirmed);
//   - Launch8, Invoke8: eight at a time, ns/op per invocation;
//   - Paired: one Launch and one Invoke in turn in every iteration, and
//     their ratio x-launch, immune to load drift between rows.
//
// Each reports the Runtime's own CPU per invocation (this process's, which
// excludes the host processes) and the hosts' CPU; the ledger rows report
// fsynced commits and writes per invocation.
func BenchmarkSupervise(b *testing.B) {
	f := newSuperviseFixture(b)

	b.Run("Launch", func(b *testing.B) {
		b.ReportAllocs()
		u0 := usageNow()
		for b.Loop() {
			launchSucceeded(b, f)
		}
		reportRuntimeCPU(b, u0, b.N)
	})
	// oneAtATime runs call's operations one after another on the bolt
	// ledger.
	oneAtATime := func(call func() supervise.Call) func(*testing.B) {
		return func(b *testing.B) {
			l := openBolt(b)
			s := f.supervisor(b, nil, l)
			b.ReportAllocs()
			s0 := l.Stats()
			u0 := usageNow()
			for b.Loop() {
				invokeSucceeded(b, s, call())
			}
			reportRuntimeCPU(b, u0, b.N)
			reportCommits(b, l, s0, b.N)
		}
	}
	b.Run("Invoke", oneAtATime(f.echoCall))
	b.Run("InvokeMemory", func(b *testing.B) {
		l := memory.New()
		defer l.Close(context.Background())
		s := f.supervisor(b, nil, l)
		b.ReportAllocs()
		u0 := usageNow()
		for b.Loop() {
			invokeSucceeded(b, s, f.echoCall())
		}
		reportRuntimeCPU(b, u0, b.N)
	})
	b.Run("TwoEffects", oneAtATime(f.effectsCall))
	eight := func(b *testing.B, one func()) {
		var wg sync.WaitGroup
		for b.Loop() {
			for range 8 {
				wg.Go(one)
			}
			wg.Wait()
		}
	}
	b.Run("Launch8", func(b *testing.B) {
		u0 := usageNow()
		eight(b, func() { launchSucceeded(b, f) })
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(8*b.N), "ns/invocation")
		reportRuntimeCPU(b, u0, 8*b.N)
	})
	b.Run("Invoke8", func(b *testing.B) {
		l := openBolt(b)
		s := f.supervisor(b, nil, l)
		s0 := l.Stats()
		u0 := usageNow()
		eight(b, func() { invokeSucceeded(b, s, f.echoCall()) })
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(8*b.N), "ns/invocation")
		reportRuntimeCPU(b, u0, 8*b.N)
		reportCommits(b, l, s0, 8*b.N)
	})
	b.Run("Paired", func(b *testing.B) {
		l := openBolt(b)
		s := f.supervisor(b, nil, l)
		var tl, ts time.Duration
		for b.Loop() {
			t0 := time.Now()
			launchSucceeded(b, f)
			t1 := time.Now()
			invokeSucceeded(b, s, f.echoCall())
			tl += t1.Sub(t0)
			ts += time.Since(t1)
		}
		b.ReportMetric(float64(tl.Nanoseconds())/float64(b.N), "launch-ns/op")
		b.ReportMetric(float64(ts.Nanoseconds())/float64(b.N), "invoke-ns/op")
		b.ReportMetric(float64(ts)/float64(tl), "x-launch")
	})
	b.Run("Paired8", func(b *testing.B) {
		l := openBolt(b)
		s := f.supervisor(b, nil, l)
		var tl, ts time.Duration
		var wg sync.WaitGroup
		for b.Loop() {
			t0 := time.Now()
			for range 8 {
				wg.Go(func() { launchSucceeded(b, f) })
			}
			wg.Wait()
			t1 := time.Now()
			for range 8 {
				wg.Go(func() { invokeSucceeded(b, s, f.echoCall()) })
			}
			wg.Wait()
			tl += t1.Sub(t0)
			ts += time.Since(t1)
		}
		b.ReportMetric(float64(tl.Nanoseconds())/float64(8*b.N), "launch-ns/invocation")
		b.ReportMetric(float64(ts.Nanoseconds())/float64(8*b.N), "invoke-ns/invocation")
		b.ReportMetric(float64(ts)/float64(tl), "x-launch")
	})
}

// timedLedger times every call of the ledger by method name.
type timedLedger struct {
	ledger.Ledger
	mu    sync.Mutex // guards times
	times map[string][]time.Duration
}

func (t *timedLedger) note(name string, start time.Time) {
	d := time.Since(start)
	t.mu.Lock()
	t.times[name] = append(t.times[name], d)
	t.mu.Unlock()
}

func (t *timedLedger) CreateOperation(ctx context.Context, s ledger.OperationSpec) (ledger.Operation, error) {
	defer t.note("CreateOperation", time.Now())
	return t.Ledger.CreateOperation(ctx, s)
}

func (t *timedLedger) StartAttempt(ctx context.Context, s ledger.Scope, op, a string) (ledger.Fence, error) {
	defer t.note("StartAttempt", time.Now())
	return t.Ledger.StartAttempt(ctx, s, op, a)
}

func (t *timedLedger) LaunchAttempt(ctx context.Context, a ledger.AttemptLaunch) (ledger.Fence, error) {
	defer t.note("LaunchAttempt", time.Now())
	return t.Ledger.LaunchAttempt(ctx, a)
}

func (t *timedLedger) RedeemBootstrap(ctx context.Context, f ledger.Fence, r ledger.Redemption) (ledger.Bootstrap, error) {
	defer t.note("RedeemBootstrap", time.Now())
	return t.Ledger.RedeemBootstrap(ctx, f, r)
}

func (t *timedLedger) Admit(ctx context.Context, f ledger.Fence, d canon.Digest) (ledger.Attempt, error) {
	defer t.note("Admit", time.Now())
	return t.Ledger.Admit(ctx, f, d)
}

func (t *timedLedger) BeginEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest) (ledger.EffectGrant, error) {
	defer t.note("BeginEffect", time.Now())
	return t.Ledger.BeginEffect(ctx, f, id, d)
}

func (t *timedLedger) ConfirmEffect(ctx context.Context, f ledger.Fence, id string, d canon.Digest, r string) (ledger.Effect, error) {
	defer t.note("ConfirmEffect", time.Now())
	return t.Ledger.ConfirmEffect(ctx, f, id, d, r)
}

func (t *timedLedger) AcceptResult(ctx context.Context, f ledger.Fence, d canon.Digest, a []byte) (ledger.Result, error) {
	defer t.note("AcceptResult", time.Now())
	return t.Ledger.AcceptResult(ctx, f, d, a)
}

func (t *timedLedger) RecordAttempt(ctx context.Context, f ledger.Fence, ev ledger.AttemptEvidence) (ledger.AttemptEvidence, error) {
	defer t.note("RecordAttempt", time.Now())
	return t.Ledger.RecordAttempt(ctx, f, ev)
}

func (t *timedLedger) Operation(ctx context.Context, s ledger.Scope, op string) (ledger.OperationView, error) {
	defer t.note("Operation-read", time.Now())
	return t.Ledger.Operation(ctx, s, op)
}

// stepClock records when each Event of the current invocation arrived.
type stepClock struct {
	mu     sync.Mutex // guards events
	events []stepEvent
}

type stepEvent struct {
	name string
	at   time.Time
}

func (c *stepClock) observe(ev supervise.Event) {
	name := string(ev.Kind)
	if ev.Kind == supervise.EventRequest {
		name = string(ev.Method)
		if ev.Effect != nil {
			name = ev.Effect.LogicalEffectID
		}
	}
	c.mu.Lock()
	c.events = append(c.events, stepEvent{name, time.Now()})
	c.mu.Unlock()
}

func (c *stepClock) take() []stepEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.events
	c.events = nil
	return out
}

// BenchmarkSuperviseBreakdown runs Supervisor.Invoke of example.two_effects
// on the bolt ledger one at a time and reports where the time of one
// invocation goes, p50 and p99 in µs, from the Supervisor's Observer
// events, the launcher's process lifetime and a timing wrapper around the
// ledger:
//
//   - prepare: Invoke → the launch event (request preparation, the
//     context, then LaunchAttempt, which the Supervisor runs while the
//     host starts, so this overlaps the next step);
//   - spawn+bootstrap: the launch event → bootstrap answered (the rest of
//     the exec and the host's start-up, reading its context and request,
//     the bootstrap exchange with RedeemBootstrap);
//   - admit: → invoke.admit answered (the host's activation, the exchange
//     with Admit);
//   - effect-1, effect-2: → each effect answered (BeginEffect, dispatch,
//     ConfirmEffect);
//   - publish: → result.publish answered (AcceptResult);
//   - exit+judge: → the outcome event (the host's exit and reap, result
//     parsing, the ledger read and the attempt's evidence);
//   - host-life: the host process's lifetime, start to reap;
//   - one line per ledger method: that call's own time.
func BenchmarkSuperviseBreakdown(b *testing.B) {
	f := newSuperviseFixture(b)
	bl := openBolt(b)
	tl := &timedLedger{Ledger: bl, times: map[string][]time.Duration{}}
	clock := &stepClock{}
	s := f.supervisor(b, clock.observe, tl)
	steps := map[string][]time.Duration{}
	order := []string{}
	add := func(name string, d time.Duration) {
		if _, ok := steps[name]; !ok {
			order = append(order, name)
		}
		steps[name] = append(steps[name], d)
	}
	for b.Loop() {
		clock.take()
		start := time.Now()
		o := invokeSucceeded(b, s, f.effectsCall())
		end := time.Now()
		evs := clock.take()
		prev := start
		for _, ev := range evs {
			switch ev.name {
			case "operation", "attempt":
				continue // prepare runs to the launch event
			case "launch":
				add("prepare", ev.at.Sub(prev))
			case "bootstrap":
				add("spawn+bootstrap", ev.at.Sub(prev))
			case "invoke.admit":
				add("admit", ev.at.Sub(prev))
			case "result.publish":
				add("publish", ev.at.Sub(prev))
			case "outcome":
				add("exit+judge", ev.at.Sub(prev))
			default:
				add(ev.name, ev.at.Sub(prev))
			}
			prev = ev.at
		}
		add("return", end.Sub(prev))
		add("total", end.Sub(start))
		if o.Launch != nil {
			add("host-life", o.Launch.Process.Elapsed)
		}
	}
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		p := func(q float64) float64 { return float64(ds[int(q*float64(len(ds)-1))].Nanoseconds()) / 1e3 }
		b.ReportMetric(p(0.5), name+"-p50-µs")
		b.ReportMetric(p(0.99), name+"-p99-µs")
	}
	for _, name := range order {
		report(name, steps[name])
	}
	tl.mu.Lock()
	defer tl.mu.Unlock()
	methods := make([]string, 0, len(tl.times))
	for m := range tl.times {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	for _, m := range methods {
		report("ledger."+m, tl.times[m])
	}
}

// BenchmarkSuperviseLedger isolates the durable part of the Runtime's CPU
// per invocation, in one run:
//
//   - Writes: the ledger calls Supervisor.Invoke makes for one new
//     operation of example.echo, in its order, on a fresh bolt ledger and
//     without processes: the read that finds no operation, LaunchAttempt,
//     RedeemBootstrap, the Handler's read and Admit, AcceptResult, the
//     read after the host's exit and RecordAttempt of evidence the size of
//     a real attempt's;
//   - Fdatasync: a 4 KiB pwrite and an fdatasync (fsync where there is
//     none) of a file in the same directory, the kernel's share of each of
//     the two syncs a bbolt commit makes.
//
// runtime-cpu-ns/op is user and system CPU of this process per op.
func BenchmarkSuperviseLedger(b *testing.B) {
	b.Run("Writes", func(b *testing.B) {
		l := openBolt(b)
		ctx := context.Background()
		scope := ledger.Scope{OrganizationID: "org", ProjectID: "project"}
		d := canon.Sum([]byte("digest"))
		artifact := []byte(`{"text":"hello"}`)
		now := time.Now()
		ev := ledger.AttemptEvidence{SeatID: "seat", RuntimeBindingID: "runtime", PacketID: "packet", State: "succeeded",
			Launched: true, PID: 4242, HostResult: make([]byte, 600), StdoutBytes: 600, StartedAt: now, EndedAt: now,
			Session: ledger.SessionEvidence{SessionID: "session", Frames: 3}}
		b.ReportAllocs()
		s0 := l.Stats()
		self0, _ := cpu()
		n := 0
		for b.Loop() {
			n++
			id := fmt.Sprint("op-", n)
			a := ledger.AttemptLaunch{
				Operation: ledger.OperationSpec{Scope: scope, OperationID: id, CapabilityID: "example.echo@1.0.0",
					RequestDigest: d, ManifestDigest: d, Deadline: now.Add(time.Hour)},
				AttemptID: "attempt-" + id, Generation: 1, BootstrapID: "bootstrap-" + id, LaunchDigest: d}
			if _, err := l.Operation(ctx, scope, id); err == nil {
				b.Fatal("a new operation exists")
			}
			f, err := l.LaunchAttempt(ctx, a)
			if err == nil {
				_, err = l.RedeemBootstrap(ctx, f, ledger.Redemption{BootstrapID: a.BootstrapID, LaunchDigest: d, PID: 4242, SessionID: "session"})
			}
			if err == nil {
				_, err = l.Operation(ctx, scope, id)
			}
			if err == nil {
				_, err = l.Admit(ctx, f, d)
			}
			if err == nil {
				_, err = l.AcceptResult(ctx, f, d, artifact)
			}
			if err == nil {
				_, err = l.Operation(ctx, scope, id)
			}
			if err == nil {
				_, err = l.RecordAttempt(ctx, f, ev)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		self1, _ := cpu()
		b.ReportMetric(float64((self1-self0).Nanoseconds())/float64(b.N), "runtime-cpu-ns/op")
		reportCommits(b, l, s0, b.N)
	})
	b.Run("Fdatasync", func(b *testing.B) {
		file, err := os.Create(filepath.Join(b.TempDir(), "sync"))
		if err != nil {
			b.Fatal(err)
		}
		defer file.Close()
		page := make([]byte, 4096)
		self0, _ := cpu()
		i := int64(0)
		for b.Loop() {
			if _, err := file.WriteAt(page, 4096*(i%64)); err != nil {
				b.Fatal(err)
			}
			if err := fdatasync(file); err != nil {
				b.Fatal(err)
			}
			i++
		}
		self1, _ := cpu()
		b.ReportMetric(float64((self1-self0).Nanoseconds())/float64(b.N), "runtime-cpu-ns/op")
	})
}

// BenchmarkSuperviseFloor measures what no launcher can go below on this
// machine, in the units of BenchmarkSupervise's rows:
//
//   - SpawnBlocking: start the simulated host executable with no
//     arguments and no descriptors (it exits at once, with a usage
//     error) and wait for it with os/exec's blocking Wait;
//   - SpawnPolled: the same, waiting for the exit through the runtime's
//     poller (childproc.AwaitExit, as the launchers do), then reaping.
//
// The difference between the two is the cost of a goroutine parked in a
// blocking waitid, which keeps the Go runtime's monitor thread waking
// every 20 µs. The fsync floor is SuperviseLedger/Fdatasync.
func BenchmarkSuperviseFloor(b *testing.B) {
	f := newSuperviseFixture(b)
	spawn := func(b *testing.B, wait func(*exec.Cmd) error) {
		u0 := usageNow()
		for b.Loop() {
			cmd := exec.Command(f.hostsim)
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			var exitErr *exec.ExitError
			if err := wait(cmd); err != nil && !errors.As(err, &exitErr) {
				b.Fatal(err)
			}
		}
		reportRuntimeCPU(b, u0, b.N)
	}
	b.Run("SpawnBlocking", func(b *testing.B) { spawn(b, (*exec.Cmd).Wait) })
	b.Run("SpawnPolled", func(b *testing.B) {
		spawn(b, func(cmd *exec.Cmd) error {
			if err := childproc.AwaitExit(cmd.Process); err != nil {
				return err
			}
			return cmd.Wait()
		})
	})
}
